"""What a product type is: one row of the generator's type tables (ecab/catalog/synthetic/tables/)."""
from __future__ import annotations

from dataclasses import dataclass, field

MAIN_CATEGORIES = ("Computers", "Cell Phones & Accessories", "All Electronics", "Amazon Home",
                   "Tools & Home Improvement", "Camera & Photo", "All Beauty", "Office Products")
SOURCE_CATEGORIES = ("All_Beauty", "Electronics", "Cell_Phones_and_Accessories", "Office_Products")


@dataclass(frozen=True, eq=False)
class ProductType:
    """One kind of product: how it is named, categorised, priced, described and reviewed.

    `core` detail keys are on every product of the type, `optional` ones on some families. The value
    pools double as the alternatives that construction can exclude in negative constraints.
    """

    key: str                                   # "wireless_charger"
    entity: str                                # "wireless charger": the phrase every title contains
    title_noun: str                            # "Wireless Charger": how titles spell the entity
    source_category: str                       # one of SOURCE_CATEGORIES
    main_categories: tuple[tuple[str, float], ...]
    subcategory: str                           # Best Sellers Rank leaf and last `categories` entry
    price_range: tuple[float, float]
    brands: tuple[str, ...]
    core: dict[str, tuple[str, ...]]
    optional: dict[str, tuple[str, ...]]
    variants: tuple[str, ...]                  # primary variant key first, then secondary candidates
    title_attrs: tuple[str, ...]               # title fragments with {Key} placeholders
    keywords: tuple[str, ...]                  # marketing phrases for titles and bullet headers
    selling_points: tuple[str, ...]            # feature sentences with {Key}/{Brand}/{noun} placeholders
    positive: tuple[str, ...]                  # concrete review opinions, 3-10 words each
    negative: tuple[str, ...]
    extras: dict[str, tuple[str, ...]] = field(default_factory=dict)  # non-DETAIL_FIELDS spec keys
    heavy: bool = False                        # weight in pounds rather than ounces

    @property
    def value_pools(self) -> dict[str, tuple[str, ...]]:
        """Every canonical detail key of the type with its possible values."""
        return {**self.core, **self.optional}

    @property
    def detail_keys(self) -> tuple[str, ...]:
        return ("Brand", *self.core, *self.optional)


def make_type(key: str, entity: str, title_noun: str, source: str, cats, subcategory: str, price, brands, *,
              core, optional, variants, title_attrs, keywords, points, positive, negative, extras=None,
              heavy=False) -> ProductType:
    """A ProductType in the tables' compact spelling: the identity and pricing fields by position, the rest
    by keyword (`points` are the selling points)."""
    return ProductType(key=key, entity=entity, title_noun=title_noun, source_category=source,
                       main_categories=cats, subcategory=subcategory, price_range=price, brands=brands,
                       core=core, optional=optional, variants=variants, title_attrs=title_attrs,
                       keywords=keywords, selling_points=points, positive=positive, negative=negative,
                       extras=extras or {}, heavy=heavy)

"""Every product type of the generator, by key and by subcategory, and the review opinions a type can carry
(as construction's tests and the judge's tests read them)."""
from __future__ import annotations

from ecab.catalog.synthetic.product_type import ProductType
from ecab.catalog.synthetic.tables.beauty import BEAUTY_TYPES
from ecab.catalog.synthetic.tables.cell_phones import CELL_PHONE_TYPES
from ecab.catalog.synthetic.tables.electronics import ELECTRONICS_TYPES
from ecab.catalog.synthetic.tables.office import OFFICE_TYPES
from ecab.catalog.synthetic.tables.reviews import GENERIC_OPINIONS
from ecab.schema import Product

# The product types (35). Core keys: 8 canonical DETAIL_FIELDS on every product, plus Brand. Families draw
# their type by position in this list, so its order is part of the output.
TYPE_LIST: list[ProductType] = [*CELL_PHONE_TYPES, *ELECTRONICS_TYPES, *BEAUTY_TYPES, *OFFICE_TYPES]

PRODUCT_TYPES: dict[str, ProductType] = {t.key: t for t in TYPE_LIST}

# Review opinions per product type (and generic ones), as construction and the judge read them.
OPINIONS_BY_TYPE: dict[str, dict[str, tuple[str, ...]]] = {
    t.key: {"positive": t.positive, "negative": t.negative} for t in TYPE_LIST}
_TYPE_BY_SUBCATEGORY = {t.subcategory: t for t in TYPE_LIST}


def product_type_of(product: Product) -> ProductType | None:
    """The ProductType a synthetic product was made from (via its `categories`), else None."""
    categories = product.extras.get("categories")
    if isinstance(categories, list) and categories:
        return _TYPE_BY_SUBCATEGORY.get(categories[-1])
    return None


def all_opinions(type_key: str) -> tuple[str, ...]:
    """Every opinion a review of that type can carry: its own table plus the generic one."""
    table = OPINIONS_BY_TYPE[type_key]
    return table["positive"] + table["negative"] + GENERIC_OPINIONS["positive"] + GENERIC_OPINIONS["negative"]

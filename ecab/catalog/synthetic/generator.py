"""The public generator: families laid out from index 0, each member made into a product and its reviews,
streamed in batches."""
from __future__ import annotations

from typing import Iterator

from ecab.catalog.base import CatalogBatch
from ecab.catalog.synthetic.families import iter_families
from ecab.catalog.synthetic.listing import description_paragraphs, detail_dict, feature_bullets, listing_title
from ecab.catalog.synthetic.model import Family
from ecab.catalog.synthetic.numbers import draw_rating_number, family_price, line_numbers
from ecab.catalog.synthetic.reviews import listing_reviews
from ecab.catalog.synthetic.seeding import ID_SPACE, IdMaker, rng_for
from ecab.schema import Product, Review

# Bump whenever the output for a given (n, seed) changes: it is part of the catalog fingerprint.
SYNTHETIC_VERSION = "4"   # 2: product lines (anchor, variants, spec leaves, white-label clone, re-listings)
                          # 3: most of a line's other listings drift on weight and dimensions and list
                          #    one more option on the multi-valued specs they share with the anchor;
                          #    a re-listing states its own package dimensions and weight
                          # 4: a product line is a full factorial (its primary axis x four hideable specs,
                          #    each combination listed once; lines.py), no anchor, re-listing or drift


def _make_product(family: Family, member: int, index: int, seed: int, ids: IdMaker) -> tuple[Product, list[Review]]:
    rng = rng_for(seed, index)
    spec = family.members[member]
    values = spec.values
    if family.is_line:
        price, average, rating_number = line_numbers(family, rng)
    else:
        rating_number = draw_rating_number(family, rng)
        average = round(min(5.0, max(1.0, family.quality + rng.gauss(0, 0.15))), 1)
        price = family_price(family, rng)
    product_id = ids(index)
    product = Product(
        product_id=product_id, title=listing_title(family, values), main_category=family.main_category,
        store=spec.store, average_rating=average, rating_number=rating_number, price=price,
        features=feature_bullets(family, values, rng), description=description_paragraphs(family, values, rng),
        details=detail_dict(family, values, member, index, rng, rating_number),
        extras={"categories": [family.main_category, family.ptype.subcategory]})
    return product, listing_reviews(family, member, index, product_id, average, rating_number, rng)


def iter_synthetic(n_products: int, seed: int = 0, batch_size: int = 1000) -> Iterator[CatalogBatch]:
    """Stream a synthetic catalog of `n_products` products (and their reviews) in batches.

    Deterministic in (n_products, seed); independent of batch_size; prefix-stable (the first k products
    are the same for every n >= k). A batch holds at most `batch_size` products plus their reviews.
    """
    if not isinstance(n_products, int) or n_products < 0:
        raise ValueError(f"n_products must be a non-negative int, got {n_products!r}")
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    if n_products > ID_SPACE:
        raise ValueError(f"n_products must be at most {ID_SPACE}, got {n_products}")
    ids = IdMaker(seed)
    products: list[Product] = []
    reviews: list[Review] = []
    index = 0
    for family in iter_families(seed):
        for member in range(family.size):
            if index >= n_products:
                break
            product, product_reviews = _make_product(family, member, index, seed, ids)
            products.append(product)
            reviews.extend(product_reviews)
            index += 1
            if len(products) == batch_size:
                yield CatalogBatch(products=products, reviews=reviews)
                products, reviews = [], []
        if index >= n_products:
            break
    if products:
        yield CatalogBatch(products=products, reviews=reviews)

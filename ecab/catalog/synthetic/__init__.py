"""The embedded default catalog: a deterministic generator of Amazon-Reviews-2023-shaped products and reviews.

What it makes, and why:
- Products look like the metadata of the paper's four categories (All_Beauty, Electronics,
  Cell_Phones_and_Accessories, Office_Products) with the `main_category` values seen in the released tasks
  (docs/original-harness.md §9): ASIN-like ids, Amazon-style titles, a store, a price that is null about 30% of the
  time, a rating, a heavy-tailed rating count, feature bullets, description paragraphs and a free-form
  `details` dict that mixes the canonical detail keys (ecab.fields.DETAIL_FIELDS), their raw alias
  spellings, and the noise keys real listings carry (Manufacturer, Best Sellers Rank, ...).
- Real values are messy, so some are: multi-valued ("Nylon, Silicone", "Black/Blue"), all caps,
  numeric-only, empty, non-English, or truncated long text ending in "See more"
  (docs/original-harness.md §5.4 cleaning).
- The catalog is hard on purpose: products come in FAMILIES of near-duplicates (same type, usually
  the same brand and store, similar titles) that differ in one or two detail values, so a target can
  not be found by its title alone.
- Reviews carry concrete, checkable opinions drawn from a per-type table (`OPINIONS_BY_TYPE`); each
  family member gets a partly different slice of that table, so review evidence can tell members apart.

Determinism: every family and every product draws from its own `random.Random`, seeded from sha256 of
the seed and its index (never Python's salted `hash`, never set iteration). Families are laid out from
index 0 on, so the output does not depend on `batch_size`, and the first k products of a catalog of
any size >= k are the same (prefix stability).

The package, data apart from logic:
  tables/         the data: product types per source category, shared value pools and brands, names,
                  review phrases
  product_type.py what a product type is (ProductType); registry.py every type, by key and subcategory
  seeding.py      random streams, ids, dates; text.py placeholders and phrase matching
  model.py        a family and its members; families.py draws them, with brands.py (brands, stores),
                  plan.py (keys, values, aliases, layout, title plan) and lines.py (product lines, drift)
  numbers.py      price, rating and rating count; listing.py title, bullets, description, details;
                  reviews.py reviews
  generator.py    iter_synthetic, the public generator

The catalog fingerprint covers every module of this package (ecab/catalog/build.py), so any change to any of
them builds catalogs anew; bump `SYNTHETIC_VERSION` when the output changes.
"""
from ecab.catalog.synthetic.generator import SYNTHETIC_VERSION, iter_synthetic
from ecab.catalog.synthetic.product_type import MAIN_CATEGORIES, SOURCE_CATEGORIES, ProductType
from ecab.catalog.synthetic.registry import (GENERIC_OPINIONS, OPINIONS_BY_TYPE, PRODUCT_TYPES, all_opinions,
                                             product_type_of)
from ecab.catalog.synthetic.reviews import MAX_REVIEWS_PER_PRODUCT

__all__ = ["GENERIC_OPINIONS", "MAIN_CATEGORIES", "MAX_REVIEWS_PER_PRODUCT", "OPINIONS_BY_TYPE", "PRODUCT_TYPES",
           "ProductType", "SOURCE_CATEGORIES", "SYNTHETIC_VERSION", "all_opinions", "iter_synthetic",
           "product_type_of"]

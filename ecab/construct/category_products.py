"""The products a task is judged against: its target's main category on a catalog (docs/architecture.md §4).

Feature selection (select.py), the validator's uniqueness scan and gate (validate.py) and the validity audit
(load_bearing.py, validity.py) all check a task's rubrics over the same products, read through the catalog
interface only. Up to FULL_SCAN_LIMIT products, one pass over the catalog per process groups every product by
main_category (cached per catalog fingerprint, shared by every candidate); larger catalogs are prefiltered
by a title search for the entity phrase within the category instead.
"""
from __future__ import annotations

import threading

from ecab.catalog.base import CatalogReader
from ecab.schema import Product

FULL_SCAN_LIMIT = 200_000
SEARCH_PREFILTER_LIMIT = 5_000
_category_cache: dict[str, dict[str, list[Product]]] = {}
_cache_lock = threading.Lock()


def products_by_category(catalog: CatalogReader) -> dict[str, list[Product]]:
    """Every product of the catalog by main_category, read once per process and catalog fingerprint."""
    key = catalog.fingerprint
    with _cache_lock:
        if key not in _category_cache:
            groups: dict[str, list[Product]] = {}
            for batch in catalog.iter_products():
                for p in batch:
                    groups.setdefault(p.main_category, []).append(p)
            _category_cache[key] = groups
        return _category_cache[key]


def category_products(catalog: CatalogReader, target: Product, entity_hint: str | None = None) -> list[Product]:
    """The products of the target's main_category: the whole category for a catalog that fits in memory
    (the shared cache; the list itself, not a copy), else the category's title matches of `entity_hint`
    (the target's title when there is none)."""
    category = target.main_category
    if catalog.count() <= FULL_SCAN_LIMIT:
        return products_by_category(catalog).get(category, [])
    from ecab.catalog.search import sql_quote  # a LanceDB `where` literal; pyarrow only for large catalogs
    page = catalog.search(entity_hint or target.title, limit=SEARCH_PREFILTER_LIMIT, mode="original",
                          where=f"main_category = {sql_quote(category)}")
    return catalog.get_products([h.product_id for h in page.hits])

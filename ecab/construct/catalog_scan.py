"""One pass over the catalog: each intent's candidates, the catalog's knowledge, and its products when they fit
in memory (docs/architecture.md §4).

The candidates of an intent are the products passing its sampling filters, in the category-uniform order of
sample.py (products with a rich neighbourhood first with `load_bearing_only`); the knowledge (value pools for
negative constraints, title phrases for the entity; ecab/catalog/knowledge.py) comes from the catalog's rows,
the same way for every source.
"""
from __future__ import annotations

from dataclasses import dataclass

from ecab.catalog.base import CatalogReader, catalog_knowledge
from ecab.catalog.knowledge import CatalogKnowledge
from ecab.construct.category_products import FULL_SCAN_LIMIT
from ecab.construct.intents import get_intent
from ecab.construct.sample import (
    interleave_by_category,
    neighbourhood_scores,
    passes_static_filters,
    present_detail_fields,
)
from ecab.construct.settings import Settings
from ecab.core.seeds import candidate_order_rng
from ecab.schema import Product


@dataclass
class CatalogScan:
    candidates: dict[str, list[str]]               # intent -> ordered candidate ids
    knowledge: CatalogKnowledge                    # what construction may know: value pools, title phrases
    category_of: dict[str, str]                    # candidate id -> main_category
    products: list[Product] | None = None          # every product, when the catalog is small enough


# Up to this many products the validator keeps whole categories in memory anyway (category_products.py), so
# the scan keeps the products it reads: one pass over LanceDB instead of one per process.
SNAPSHOT_LIMIT = FULL_SCAN_LIMIT


def scan_catalog(catalog: CatalogReader, settings: Settings) -> CatalogScan:
    """Candidates per intent in one streaming pass (keeping the products of a small catalog for the
    in-memory snapshot), and the catalog's knowledge (ecab.catalog.base.catalog_knowledge: from the kept
    products when there are, else the catalog's own)."""
    groups: dict[str, dict[str, list[str]]] = {i: {} for i in settings.intents}
    category_of: dict[str, str] = {}
    intents = [get_intent(i) for i in settings.intents]
    kept: list[Product] | None = [] if catalog.count() <= SNAPSHOT_LIMIT else None
    for batch in catalog.iter_products():
        if kept is not None:
            kept.extend(batch)
        for product in batch:
            category = product.main_category or ""
            present = present_detail_fields(product)
            for intent in intents:
                if passes_static_filters(product, intent.sampling, present):
                    groups[intent.id].setdefault(category, []).append(product.product_id)
                    category_of[product.product_id] = category
    # With load_bearing_only, products with a rich catalog neighbourhood (near-identical listings that
    # differ in one detail) come first in their category: only they can make tasks whose requirements matter.
    scores = neighbourhood_scores(kept) if kept is not None and settings.load_bearing_only else None
    candidates = {i: interleave_by_category(groups[i], candidate_order_rng(settings.seed, i),
                                            settings.min_category_size, priority=scores)[:settings.max_candidates]
                  for i in settings.intents}
    knowledge = (CatalogKnowledge.from_products(kept) if kept is not None else catalog_knowledge(catalog))
    return CatalogScan(candidates, knowledge, category_of, kept)

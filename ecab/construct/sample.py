"""Stage 1: sample candidate target products for an intent (docs/original-harness.md §5.3 sampler).

Filters (the intent's SamplingStrategy): at least `min_detail_fields` of the 43 detail fields present
(alias-aware, so "OS" counts for Operating System), `min_rating`, `min_rating_number`, a price when
required, features or a description when required, at least `min_implicit_eligible` implicit-eligible
fields, every `require_details_fields` key, and at least `min_reviews` reviews.

Uniform over main_category: each category's eligible products are shuffled and the categories are
interleaved round-robin, so any prefix of the candidate list spreads evenly over categories. When
construction keeps only load-bearing features (issue 15), the products with a rich catalog neighbourhood
(`neighbourhood_scores`) come first, still spread evenly over the categories while they last. (The
original drew `batch // n_categories` per category per round; the interleaving gives the same spread
and lets the pipeline walk as deep into the pool as it needs.) Categories smaller than
`min_category_size` are dropped unless that would drop them all.
"""
from __future__ import annotations

import random
from typing import Callable, Iterable, Iterator

from ecab.catalog.base import CatalogReader
from ecab.construct.intents import Intent, SamplingStrategy, get_intent
from ecab.fields import IMPLICIT_ELIGIBLE_FIELDS, lookup_detail, present_fields
from ecab.core.text import normalize, options, value_text
from ecab.schema import Product

DEFAULT_MIN_CATEGORY_SIZE = 10000


def present_detail_fields(product: Product) -> frozenset[str]:
    """The canonical DETAIL_FIELDS that have a value (alias-aware), computed once per product."""
    return present_fields(product.details)


def detail_field_count(product: Product) -> int:
    return len(present_detail_fields(product))


def implicit_eligible_count(product: Product) -> int:
    return len(present_detail_fields(product) & IMPLICIT_ELIGIBLE_FIELDS)


def passes_static_filters(product: Product, strategy: SamplingStrategy,
                          present: frozenset[str] | None = None) -> bool:
    """Every filter that needs only the product record (reviews are checked later, lazily).
    `present` (from present_detail_fields) saves recomputing it when several intents test one product."""
    present = present_detail_fields(product) if present is None else present
    if strategy.min_rating is not None and (product.average_rating or 0) < strategy.min_rating:
        return False
    if strategy.min_rating_number is not None and (product.rating_number or 0) < strategy.min_rating_number:
        return False
    if strategy.require_price and not product.price:
        return False
    if strategy.require_content and not (product.features or product.description):
        return False
    if any(lookup_detail(product.details, f) is None for f in strategy.require_details_fields):
        return False
    if len(present & IMPLICIT_ELIGIBLE_FIELDS) < strategy.min_implicit_eligible:
        return False
    return len(present) >= strategy.min_detail_fields


def _iter_products(source: CatalogReader | Iterable[Product]) -> Iterator[Product]:
    if isinstance(source, CatalogReader):
        for batch in source.iter_products():
            yield from batch
    else:
        yield from source


def interleave_by_category(ids_by_category: dict[str, list[str]], rng: random.Random,
                           min_category_size: int, priority: dict[str, int] | None = None) -> list[str]:
    """Round-robin over shuffled categories of shuffled ids (sorted first, so input order never matters).
    With `priority` (neighbourhood_scores), the ids scoring at least RICH_NEIGHBOURHOOD come first, round-robin
    over the categories, then the others, round-robin too (each in its shuffled order)."""
    big = {c: ids for c, ids in ids_by_category.items() if len(ids) >= min_category_size}
    groups = big or ids_by_category
    categories = sorted(groups)
    rng.shuffle(categories)
    queues = []
    for c in categories:
        ids = sorted(groups[c])
        rng.shuffle(ids)
        queues.append(ids)
    if priority is None:
        return _round_robin(queues)
    rich = [[pid for pid in q if priority.get(pid, 0) >= RICH_NEIGHBOURHOOD] for q in queues]
    rest = [[pid for pid in q if priority.get(pid, 0) < RICH_NEIGHBOURHOOD] for q in queues]
    return _round_robin(rich) + _round_robin(rest)


def _round_robin(queues: list[list[str]]) -> list[str]:
    order, depth = [], 0
    while any(depth < len(q) for q in queues):
        order.extend(q[depth] for q in queues if depth < len(q))
        depth += 1
    return order


# A product whose catalog neighbourhood covers this many of its detail fields (or identical re-listings) can
# make a task whose hidden requirements all matter (construct/select.py needs 4 witnessed features to hide).
RICH_NEIGHBOURHOOD = 4
MAX_IDENTICAL_BONUS = 2


def _first_option(value) -> str:
    """A value by its first option (normalized): a listing that only lists one more option ("Nylon" vs
    "Nylon, Silicone") satisfies every requirement on the other's value, so for ordering candidates it
    counts as the same."""
    return next(iter(options(normalize(value_text(value)))), "")


def detail_signature(product: Product) -> tuple[tuple[str, str], ...]:
    """(field, normalized first option) of every present canonical detail field, sorted by field."""
    present = present_detail_fields(product)
    return tuple(sorted((f, _first_option(lookup_detail(product.details, f))) for f in present))


def neighbourhood_scores(products: Iterable[Product]) -> dict[str, int]:
    """Per product: how many of its detail fields some other product of its main category differs in alone
    (every other detail value equal), plus up to MAX_IDENTICAL_BONUS for other listings equal in every
    detail value (they can differ in price, rating, reviews or title). A cheap, exact-value look at the
    neighbourhood that can make a task's requirements matter (the validity audit decides; this only orders
    the candidates). From the rows alone, the same for every source."""
    rows = [(p.product_id, p.main_category or "", detail_signature(p)) for p in products]
    groups: dict[tuple, int] = {}
    identical: dict[tuple, int] = {}
    for _, category, sig in rows:
        identical[(category, sig)] = identical.get((category, sig), 0) + 1
        for i in range(len(sig)):
            key = (category, sig[i][0], sig[:i] + sig[i + 1:])
            groups[key] = groups.get(key, 0) + 1
    scores = {}
    for pid, category, sig in rows:
        same = identical[(category, sig)]
        fields = sum(1 for i in range(len(sig)) if groups[(category, sig[i][0], sig[:i] + sig[i + 1:])] > same)
        scores[pid] = fields + min(MAX_IDENTICAL_BONUS, same - 1)
    return scores


def eligible_ids_by_category(source: CatalogReader | Iterable[Product], intent: Intent) -> tuple[
        dict[str, list[str]], dict[str, Product]]:
    """{main_category: [product ids]} of products passing the static filters; plus the products
    themselves when the source is an in-memory list (a catalog is re-read by id instead)."""
    keep_products = not isinstance(source, CatalogReader)
    groups: dict[str, list[str]] = {}
    kept: dict[str, Product] = {}
    for product in _iter_products(source):
        if passes_static_filters(product, intent.sampling):
            groups.setdefault(product.main_category or "", []).append(product.product_id)
            if keep_products:
                kept[product.product_id] = product
    return groups, kept


def candidate_ids(source: CatalogReader | Iterable[Product], intent: str | Intent, rng: random.Random, *,
                  min_category_size: int = DEFAULT_MIN_CATEGORY_SIZE) -> list[str]:
    """Every eligible product id (static filters only), in the category-uniform sampling order."""
    intent = get_intent(intent)
    groups, _ = eligible_ids_by_category(source, intent)
    return interleave_by_category(groups, rng, min_category_size)


def review_counter_for(source: CatalogReader | Iterable[Product], limit: int) -> Callable[[str], int] | None:
    if isinstance(source, CatalogReader):
        return lambda pid: len(source.get_reviews(pid, limit=limit))
    return None


def sample_products(catalog_or_products: CatalogReader | Iterable[Product], intent: str | Intent, n: int,
                    rng: random.Random, *, min_category_size: int = DEFAULT_MIN_CATEGORY_SIZE,
                    review_count: Callable[[str], int] | None = None) -> list[Product]:
    """Up to `n` distinct candidate targets for `intent`, uniform over main_category.

    `review_count(product_id)` answers the min_reviews filter; for a CatalogReader it defaults to counting
    `get_reviews`. An intent that needs reviews with an in-memory product list and no counter is an error.
    """
    intent = get_intent(intent)
    source = catalog_or_products
    groups, kept = eligible_ids_by_category(source, intent)
    order = interleave_by_category(groups, rng, min_category_size)
    need_reviews = intent.sampling.min_reviews
    counter = review_count or review_counter_for(source, need_reviews)
    if need_reviews and counter is None:
        raise ValueError(f"intent {intent.id} needs >= {need_reviews} reviews per product: pass review_count= "
                         "when sampling from a product list")
    chosen: list[str] = []
    for pid in order:
        if len(chosen) >= n:
            break
        if need_reviews and counter(pid) < need_reviews:
            continue
        chosen.append(pid)
    if kept:
        return [kept[pid] for pid in chosen]
    return source.get_products(chosen) if chosen else []

"""Verbalized drafts from the real construction stages (extract -> partition -> rubrics -> verbalize) over
synthetic products, for the construct tests that check properties of what construction actually produces."""
from __future__ import annotations

import collections
import random

from ecab.catalog.synthetic import iter_synthetic
from ecab.construct.candidate import Skip, run_stages
from ecab.construct.draft import Draft
from ecab.construct.extract import build_value_pools
from ecab.construct.validate import rubric_lock
from ecab.construct.verbalize import verbalize
from ecab.fields import INTENTS


def synthetic_products(n: int, seed: int):
    """(products, their reviews by product id, the value pools) of an n-product synthetic catalog."""
    products, reviews = [], collections.defaultdict(list)
    for batch in iter_synthetic(n, seed=seed):
        products += batch.products
        for r in batch.reviews:
            reviews[r.product_id].append(r)
    return products, reviews, build_value_pools(products)


def verbalized_drafts(synthetic, *, per_intent: int, stride: int = 1, rng_prefix: str = "") -> list[Draft]:
    """Up to `per_intent` drafts per intent from every `stride`-th product, each with its own seeded rng
    (`<rng_prefix><intent>-<index>`); products the stages skip are passed over."""
    products, reviews, pools = synthetic
    drafts = []
    for intent in INTENTS:
        made = 0
        for i, p in list(enumerate(products))[::stride]:
            if made == per_intent:
                break
            rng = random.Random(f"{rng_prefix}{intent}-{i}")
            d = Draft(sample_id=f"{intent}-{i}", intent=intent, product=p, reviews=reviews[p.product_id])
            try:
                run_stages(d, rng, pools)
            except Skip:
                continue
            d.meta["rubric_lock"] = rubric_lock(d.rubrics)
            verbalize(d, rng)
            drafts.append(d)
            made += 1
    return drafts

"""Making siblings: one sibling failing exactly the rubrics asked (make_one), every task's siblings
(make_siblings), and the pass that drops a sibling matching every rubric of some task (drop_non_unique)."""
from __future__ import annotations

import copy
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Sequence

from ecab.catalog.siblings.checks import satisfies
from ecab.catalog.siblings.family import Family, family_of, vary_listing
from ecab.catalog.siblings.numbers import choose_numbers
from ecab.catalog.siblings.pools import ValuePools, canonical
from ecab.catalog.siblings.violate import violate_rubric
from ecab.core.rubric_checks import ReviewMatcher
from ecab.schema import Product, Review, Rubric, Task


# Bump whenever the siblings made for a given task file and seed change: part of the catalog fingerprint.
SIBLINGS_VERSION = "1"
DEFAULT_PER_RUBRIC = 3
DEFAULT_QUERY_ONLY = 3
MAX_ATTEMPTS = 30
ID_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def new_id(prefix_of: str, rng: random.Random, taken: set[str]) -> str:
    """An ASIN-like id: "B0" ids keep the first four characters of `prefix_of` (variants listed together
    share them), then random characters; never one in `taken`."""
    prefix = prefix_of[:4].upper() if re.fullmatch(r"B0[0-9A-Z]{8}", prefix_of or "") else "B0" + "".join(
        rng.choice(ID_ALPHABET) for _ in range(2))
    while True:
        candidate = prefix + "".join(rng.choice(ID_ALPHABET) for _ in range(10 - len(prefix)))
        if candidate not in taken:
            taken.add(candidate)
            return candidate


@dataclass
class Sibling:
    product: Product
    reviews: list[Review]
    task_id: str
    violates: tuple[str, ...]       # rubric ids it fails on purpose
    kind: str                       # "rubric" | "query_only"


@dataclass
class SiblingStats:
    made: Counter = field(default_factory=Counter)                 # (source, rubric type) -> siblings
    wanted: Counter = field(default_factory=Counter)
    impossible: list[str] = field(default_factory=list)           # "task rubric (type): why"
    dropped_not_unique: int = 0

    def line(self) -> str:
        total = sum(self.made.values())
        missing = len(self.impossible)
        return (f"{total} hard-negative siblings" + (f"; no sibling for {missing} rubric(s): "
                                                     + "; ".join(self.impossible[:5]) if missing else "")
                + (f"; {self.dropped_not_unique} dropped (they matched every rubric of a task)"
                   if self.dropped_not_unique else ""))


def make_one(task: Task, violate: Sequence[Rubric], rng: random.Random, pools: ValuePools, taken: set[str],
             make_reviews: Callable[[str, str, list[str], random.Random], list[Review]],
             review_checker: ReviewMatcher, protected: set[str], fam: Family) -> Sibling | None:
    """A sibling of the task's target failing exactly the rubrics in `violate` (checked with the judge)."""
    target = task.target_product
    wanted = {r.id for r in violate}
    for _ in range(MAX_ATTEMPTS):
        product = copy.deepcopy(target)
        product.product_id = "?"
        vary_listing(product, rng, protected, fam)
        keep = [r for r in task.rubrics if r.id not in wanted and r.type != "review_opinion"]
        if not all(violate_rubric(product, r, task, pools, rng, keep) for r in violate):
            continue
        if not choose_numbers(product, task, wanted, rng, fam):
            continue
        mechanical = [r for r in task.rubrics if r.type != "review_opinion"]
        if not all(satisfies(r, product, task) == (r.id not in wanted) for r in mechanical):
            continue
        product.product_id = new_id(target.product_id, rng, taken)
        opinions = [r for r in task.rubrics if r.type == "review_opinion"]
        keep = [r.opinion for r in opinions if r.id not in wanted]
        avoid = [r.opinion for r in opinions if r.id in wanted]
        reviews = make_reviews(product.product_id, task.id, keep, rng) if not avoid else \
            make_reviews(product.product_id, task.id, keep, rng, avoid=avoid)
        if opinions and not all(satisfies(r, product, task, reviews, review_checker) == (r.id not in wanted)
                                for r in opinions):
            taken.discard(product.product_id)
            continue
        kind = "rubric" if len(violate) == 1 else "query_only"
        return Sibling(product, reviews, task.id, tuple(sorted(wanted)), kind)
    return None


def make_siblings(tasks: Sequence[Task], *, per_rubric: int = DEFAULT_PER_RUBRIC,
                  query_only: int = DEFAULT_QUERY_ONLY, seed: int = 0, taken: set[str],
                  pools: ValuePools, make_reviews,
                  review_checker: ReviewMatcher) -> tuple[list[Sibling], SiblingStats]:
    """Every task's siblings (see the module docstring), then the uniqueness pass over all of them."""
    stats = SiblingStats()
    out: list[Sibling] = []
    protected_by_target: dict[str, set[str]] = {}
    for task in tasks:
        protected_by_target.setdefault(task.target_product.product_id, set()).update(
            canonical(r.field) for r in task.rubrics)
    for task in tasks:
        if not all(satisfies(r, task.target_product, task) for r in task.rubrics if r.type != "review_opinion"):
            stats.impossible.append(f"{task.id}: its target does not satisfy its own rubrics")
            continue
        protected = protected_by_target[task.target_product.product_id]
        fam = family_of(task, pools, random.Random(f"siblings|family|{SIBLINGS_VERSION}|{seed}|{task.id}"),
                        protected)
        for rubric in task.rubrics:
            key = (rubric.info_source, rubric.type)
            stats.wanted[key] += per_rubric
            made = 0
            for j in range(per_rubric):
                rng = random.Random(f"siblings|{SIBLINGS_VERSION}|{seed}|{task.id}|{rubric.id}|{j}")
                sibling = make_one(task, [rubric], rng, pools, taken, make_reviews, review_checker, protected,
                                   fam)
                if sibling is not None:
                    out.append(sibling)
                    made += 1
            stats.made[key] += made
            if made == 0 and per_rubric:
                stats.impossible.append(f"{task.id} {rubric.id} ({rubric.type} {rubric.field})")
        hidden = [r for r in task.rubrics if r.info_source in ("persona", "clarification")]
        for j in range(query_only if hidden else 0):
            rng = random.Random(f"siblings|{SIBLINGS_VERSION}|{seed}|{task.id}|query-only|{j}")
            # every hidden rubric it can violate together (dropping, one by one, those it cannot)
            violate = list(hidden)
            sibling = None
            while violate and sibling is None:
                sibling = make_one(task, violate, rng, pools, taken, make_reviews, review_checker, protected,
                                   fam)
                if sibling is None:
                    violate = violate[:-1]
            if sibling is not None:
                sibling.kind = "query_only"
                out.append(sibling)
                stats.made[("query", "query_only")] += 1
    kept = drop_non_unique(tasks, out, review_checker)
    stats.dropped_not_unique = len(out) - len(kept)
    return kept, stats


def drop_non_unique(tasks: Sequence[Task], siblings: list[Sibling], review_checker: ReviewMatcher) -> list[Sibling]:
    """Siblings that satisfy every rubric of some task (of their category) are dropped: each target stays
    the only product a task accepts."""
    by_category: dict[str, list[Task]] = {}
    for task in tasks:
        by_category.setdefault(task.target_product.main_category, []).append(task)
    kept = []
    for sibling in siblings:
        p = sibling.product
        spoils = False
        for task in by_category.get(p.main_category, []):
            mechanical = [r for r in task.rubrics if r.type != "review_opinion"]
            if not all(satisfies(r, p, task) for r in mechanical):
                continue
            if all(satisfies(r, p, task, sibling.reviews, review_checker) for r in task.rubrics
                   if r.type == "review_opinion"):
                spoils = True
                break
        if not spoils:
            kept.append(sibling)
    return kept

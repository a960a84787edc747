"""A task file's targets as a catalog source: the target products of a `benchmark.jsonl`, their hard-negative
siblings (ecab/catalog/siblings/: the full factorial over each task's hidden rubrics among the listings that
match its query, the target re-listed as one of them, plus listings failing one query rubric) and synthetic
distractors. Released tasks carry no review text (docs/original-harness.md §9), so targets
and siblings get synthetic reviews that state their task's review_opinion rubrics, which lets the harness run on
the real samples without the 25 GB DB.
"""
from __future__ import annotations

import random
from pathlib import Path
from typing import Iterable, Iterator

from ecab.catalog.base import CatalogBatch
from ecab.schema import Product, Review, Task, iter_tasks

# Sentences that carry a review_opinion verbatim. The opinion is inserted unchanged (only a trailing period
# is trimmed) so that substring, FTS and embedding checks all find it.
_OPINION_TEMPLATES = (
    "Honestly, {opinion}. I compared a few options before buying and this is the one I kept.",
    "After a few weeks of daily use: {opinion}. Exactly what I hoped for.",
    "The main thing for me: {opinion}. Would buy again.",
    "Short version for anyone on the fence: {opinion}.",
)
_OPINION_TITLES = ("Does what it promises", "Happy with this purchase", "Worth it", "Pleasantly surprised")
# Plain reviews that state no specific claim, so they cannot satisfy (or contradict) any rubric.
_FILLER_REVIEWS = (
    (5.0, "Great", "Arrived on time and well packaged. Does the job I bought it for."),
    (4.0, "Good overall", "Works as described. Nothing to complain about so far."),
    (3.0, "It's okay", "Decent for the price, though I expected a little more from the photos."),
    (5.0, "Recommend", "Bought this as a gift and they were happy with it."),
    (4.0, "Solid choice", "Setup was easy and it has held up fine after some use."),
    (2.0, "Not for me", "It works, but it did not quite fit what I needed. Returned it."),
    (5.0, "Five stars", "Exactly as pictured. Would order from this seller again."),
    (4.0, "As expected", "No surprises, good or bad. Fair value."),
    (3.0, "Average", "Does what it says. Shipping took longer than the estimate."),
    (5.0, "Love it", "Second time ordering this. Consistent quality both times."),
    (4.0, "Nice", "Good value for money, would recommend to friends."),
    (1.0, "Arrived damaged", "The box was crushed on arrival; the seller replaced it quickly."),
)
# §5.10 needs at least 10 reviews for a review_driven product; every target gets that many.
_MIN_TARGET_REVIEWS = 10
_BASE_TIMESTAMP_MS = 1_600_000_000_000
_DAY_MS = 86_400_000


def iter_targets(tasks_path: Path, *, n_distractors: int = 2000, seed: int = 0, batch_size: int = 1000,
                 siblings: int = 0, query_only_siblings: int = 0, report=None) -> Iterator[CatalogBatch]:
    """The target product of every task (first task wins per id) and its family (ecab/catalog/siblings/) in
    one seeded order, then `n_distractors` synthetic products from `ecab.catalog.synthetic.iter_synthetic`
    whose ids collide with none of them. With both `siblings` and `query_only_siblings` 0 the targets are
    the file's, unchanged, first and in file order. Otherwise every task gets a family: `query_only_siblings`
    > 0 lists the full factorial over its hidden rubrics among the listings matching its query (cube.py),
    `siblings` is the number of listings per cube vertex that fail one query rubric; and the target's
    listing is RE-LISTED by the family's own process (same product id, every rubric still satisfied, its
    numbers, varied facts and drifted keys drawn like a sibling's), so that nothing but hidden information
    tells it apart. `catalog=targets` asks for 1 and 1 (conf/catalog/targets.yaml).

    Every target gets synthetic reviews, deterministic from its task id: one per review_opinion rubric that
    states the opinion verbatim (rating 5, the most helpful votes, so §5.10's selection would pick them),
    plus filler reviews up to 10 (targets without reviews would stand out among reviewed distractors);
    siblings get theirs from the same generator. Review ids are renumbered 1..N over the whole output so no
    two reviews collide. `report(line)`, when given, receives one line about the families made.
    """
    real, distractors, line = targets_and_siblings(tasks_path, n_distractors=n_distractors, seed=seed,
                                                   siblings=siblings, query_only_siblings=query_only_siblings)
    if report is not None and line:
        report(line)
    renumber = _Renumber()
    yield from _rebatch(((p, reviews) for p, reviews, _ in real), batch_size, renumber)
    yield from _rebatch(iter(distractors), batch_size, renumber)


def targets_and_siblings(tasks_path: Path, *, n_distractors: int = 2000, seed: int = 0, siblings: int = 1,
                         query_only_siblings: int = 1):
    """(targets and siblings in catalog order as (product, reviews, its siblings.Sibling record: kind
    "target" for a re-listed target, None for a target kept as in the file), the distractors as
    (product, reviews), one line about the families) of `iter_targets`."""
    from ecab.catalog.siblings.make import make_siblings
    from ecab.catalog.siblings.pools import ValuePools

    tasks = list(iter_tasks(Path(tasks_path)))
    targets, target_reviews = _targets_with_reviews(Path(tasks_path))
    taken = {p.product_id for p in targets}
    distractors = list(_distractors(n_distractors, seed, taken))
    real = [(p, target_reviews[p.product_id], None) for p in targets]
    line = ""
    if siblings > 0 or query_only_siblings > 0:
        pools = ValuePools.build(targets, tasks, (p for p, _ in distractors))
        made, stats = make_siblings(tasks, per_vertex=siblings, cube=query_only_siblings > 0, seed=seed,
                                    taken=taken, pools=pools, make_reviews=_sibling_reviews(),
                                    review_checker=_review_checker(), target_reviews=target_reviews)
        relisted = {s.product.product_id: s for s in made if s.kind == "target"}
        real = [(relisted[p.product_id].product, reviews, relisted[p.product_id]) if p.product_id in relisted
                else (p, reviews, None) for p, reviews, _ in real]
        real += [(s.product, s.reviews, s) for s in made if s.kind != "target"]
        random.Random(f"targets-order|{seed}").shuffle(real)
        line = f"catalog=targets: {len(targets)} targets, {stats.line()}"
    return real, distractors, line


def _review_checker():
    # the checker the rules judge uses by default decides "lacks the opinion"
    from ecab.catalog.review_match import default_review_checker

    return default_review_checker()


def _sibling_reviews():
    """make_reviews for siblings: `opinion_reviews` seeded by the sibling's id; fillers that would state an
    opinion the sibling must lack (by the judge's review checker) are not used."""
    checker = None
    states: dict[tuple[str, int], bool] = {}

    def fillers_without(avoid: list[str]) -> tuple:
        nonlocal checker
        if not avoid:
            return _FILLER_REVIEWS
        checker = checker or _review_checker()
        keep = []
        for n, (rating, title, text) in enumerate(_FILLER_REVIEWS):
            ok = True
            for opinion in avoid:
                if (opinion, n) not in states:
                    review = Review(review_id=0, product_id="filler", rating=rating, title=title, text=text)
                    states[(opinion, n)] = checker.check(opinion, [review], product_id=None).satisfied
                ok = ok and not states[(opinion, n)]
            if ok:
                keep.append((rating, title, text))
        return tuple(keep)

    def make(product_id: str, task_id: str, opinions: list[str], rng: random.Random, avoid=()) -> list[Review]:
        return opinion_reviews(product_id, opinions, random.Random(f"{product_id}_reviews"),
                               fillers=fillers_without(list(avoid)))
    return make


def _targets_with_reviews(tasks_path: Path) -> tuple[list[Product], dict[str, list[Review]]]:
    targets: dict[str, Product] = {}
    reviews: dict[str, list[Review]] = {}
    for task in iter_tasks(tasks_path):
        pid = task.target_product.product_id
        if pid not in targets:
            targets[pid] = task.target_product
            reviews[pid] = []
        reviews[pid].extend(synthetic_target_reviews(task, start=len(reviews[pid])))
    return list(targets.values()), reviews


def synthetic_target_reviews(task: Task, *, start: int = 0) -> list[Review]:
    """Reviews for a task's target: each review_opinion stated verbatim, plus fillers; seeded by task id.

    `review_id`s are placeholders (`start`, `start + 1`, ...); `iter_targets` renumbers them.
    """
    return opinion_reviews(task.target_product.product_id,
                           [r.opinion for r in task.rubrics if r.type == "review_opinion"],
                           random.Random(f"{task.id}_target_reviews"), start=start)


def opinion_reviews(product_id: str, opinions: list[str], rng: random.Random, *, start: int = 0,
                    fillers: tuple = _FILLER_REVIEWS) -> list[Review]:
    """One review stating each opinion verbatim plus filler reviews up to 10, in a shuffled order (the
    generator of targets' and siblings' reviews)."""
    opinions = [op.strip().rstrip(".") for op in opinions]
    rows = [(5.0, rng.choice(_OPINION_TITLES), rng.choice(_OPINION_TEMPLATES).format(opinion=op),
             rng.randint(20, 60)) for op in opinions]
    wanted = max(0, _MIN_TARGET_REVIEWS - start - len(rows))  # `start`: reviews from an earlier task
    fillers = rng.sample(fillers, k=min(len(fillers), wanted))
    rows += [(rating, title, text, rng.randint(0, 5)) for rating, title, text in fillers]
    rng.shuffle(rows)
    return [Review(review_id=start + i, product_id=product_id, rating=rating, title=title,
                   text=text, helpful_vote=votes, verified_purchase=rng.random() < 0.8,
                   timestamp=_BASE_TIMESTAMP_MS + rng.randint(0, 900) * _DAY_MS)
            for i, (rating, title, text, votes) in enumerate(rows)]


class _Renumber:
    """Gives reviews consecutive integer ids in emission order."""

    def __init__(self):
        self.next_id = 1

    def __call__(self, reviews: list[Review]) -> list[Review]:
        for review in reviews:
            review.review_id = self.next_id
            self.next_id += 1
        return reviews


def _distractors(n: int, seed: int, taken: set[str]) -> Iterator[tuple[Product, list[Review]]]:
    """Up to `n` synthetic products (with their reviews) whose ids are not in `taken`."""
    if n <= 0:
        return
    from ecab.catalog.synthetic import iter_synthetic  # lazy: a targets-only catalog needs no generator

    emitted = 0
    # Ask for enough extra products to replace any that collide with a target id.
    for batch in iter_synthetic(n + len(taken), seed):
        by_product: dict[str, list[Review]] = {}
        for review in batch.reviews:
            by_product.setdefault(review.product_id, []).append(review)
        for product in batch.products:
            if product.product_id in taken:
                continue
            taken.add(product.product_id)
            yield product, by_product.get(product.product_id, [])
            emitted += 1
            if emitted == n:
                return


def _rebatch(items: Iterable[tuple[Product, list[Review]]], batch_size: int, renumber) -> Iterator[CatalogBatch]:
    batch = CatalogBatch()
    for product, reviews in items:
        batch.products.append(product)
        batch.reviews.extend(reviews)
        if len(batch.products) == batch_size:
            batch.reviews = renumber(batch.reviews)
            yield batch
            batch = CatalogBatch()
    if batch.products:
        batch.reviews = renumber(batch.reviews)
        yield batch


"""Making a family: the plan of one wrong value per hidden rubric (plan_violations), every listing of the
design (cube.py) made by one process (make_listing), every task's family (make_siblings), and the pass that
drops a listing matching every rubric of a task it is not the target of (drop_non_unique)."""
from __future__ import annotations

import copy
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Sequence

from ecab.catalog.siblings.checks import field_forms, nominal_violation, satisfies
from ecab.catalog.siblings.cube import Slot, design
from ecab.catalog.siblings.family import Family, family_of, vary_listing
from ecab.catalog.siblings.numbers import choose_numbers
from ecab.catalog.siblings.pools import ValuePools
from ecab.catalog.siblings.violate import Choice, apply, choices, violate_rubric
from ecab.core.rubric_checks import ReviewMatcher
from ecab.core.rubric_types import reads_reviews, type_of
from ecab.schema import Product, Review, Rubric, Task


# Bump whenever the listings made for a given task file and seed change: part of the catalog fingerprint.
SIBLINGS_VERSION = "2"
DEFAULT_PER_VERTEX = 1     # catalog.siblings: query violators per cube vertex
MAX_ATTEMPTS = 30          # draws per listing
QUERY_ATTEMPTS = 8         # draws per query rubric a violator tries before the next one (round-robin)
HOPELESS_AFTER = 2         # a query rubric no violator of two vertices could fail alone is not tried again
HIDDEN = ("persona", "clarification")
ID_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"

MakeReviews = Callable[..., list[Review]]


def new_id(prefix_of: str, rng: random.Random, taken: set[str]) -> str:
    """An id shaped like `prefix_of`: its first four characters (variants listed together share them), then
    random characters of the kind its tail has (digits for an all-digit id such as an ISBN, else digits and
    capitals); an id that is not ten characters long gets an ASIN-like "B0" one. Never one in `taken`."""
    shaped = bool(re.fullmatch(r"[0-9A-Z]{10}", prefix_of or ""))
    prefix = prefix_of[:4] if shaped else "B0" + "".join(rng.choice(ID_ALPHABET) for _ in range(2))
    alphabet = "0123456789" if shaped and prefix_of[4:].isdigit() else ID_ALPHABET
    while True:
        candidate = prefix + "".join(rng.choice(alphabet) for _ in range(10 - len(prefix)))
        if candidate not in taken:
            taken.add(candidate)
            return candidate


@dataclass
class Sibling:
    """One listing of a family: a sibling, or the target's own re-listing (kind "target", the target's id)."""

    product: Product
    reviews: list[Review]
    task_id: str
    violates: tuple[str, ...]       # rubric ids it fails on purpose
    kind: str                       # "target" | "query_match" (a cube vertex) | "query_violator"
    vertex: frozenset[str] = frozenset()    # the hidden rubric ids it fails


@dataclass
class SiblingStats:
    made: Counter = field(default_factory=Counter)                 # kind -> listings
    families: int = 0
    impossible: list[str] = field(default_factory=list)           # "task rubric (type): why"
    missing: list[str] = field(default_factory=list)              # "task slot": a listing that could not be made
    dropped_not_unique: int = 0

    def line(self) -> str:
        cube, violators, targets = (self.made["query_match"], self.made["query_violator"], self.made["target"])
        text = (f"{cube + violators} hard-negative siblings ({cube} matching the query: factorials over the "
                f"hidden rubrics of {self.families} tasks; {violators} failing one query rubric), "
                f"{targets} targets re-listed like their siblings")
        if self.impossible:
            text += f"; {len(self.impossible)} rubric(s) no listing fails alone: " + "; ".join(self.impossible[:5])
        if self.missing:
            text += f"; {len(self.missing)} listing(s) not made: " + "; ".join(self.missing[:5])
        if self.dropped_not_unique:
            text += f"; {self.dropped_not_unique} dropped (they matched every rubric of a task)"
        return text


@dataclass
class _Context:
    pools: ValuePools
    taken: set[str]
    make_reviews: MakeReviews
    review_checker: ReviewMatcher
    seed: int
    target_reviews: dict[str, list[Review]]
    rivals: dict[str, list[Task]]           # category -> its tasks
    sharing: dict[str, list[Task]]          # target id -> the tasks it is the target of


def _mechanical(task: Task) -> list[Rubric]:
    return [r for r in task.rubrics if not reads_reviews(r)]


def _opinions(task: Task) -> list[Rubric]:
    return [r for r in task.rubrics if reads_reviews(r)]


def plan_violations(task: Task, hidden: Sequence[Rubric], pools: ValuePools, rng: random.Random, fam: Family
                    ) -> tuple[dict[str, Choice], list[str]]:
    """One wrong value per hidden rubric (the family's: every listing failing the rubric carries it), each
    checked on the target alone and on the target with every earlier plan applied, so any vertex can carry
    any set of them. (the plan, "rubric (type field): why" for a hidden rubric that admits none)."""
    target = task.target_product
    mechanical = _mechanical(task)
    plan: dict[str, Choice] = {}
    impossible = []
    all_wrong = copy.deepcopy(target)
    for r in hidden:
        violation = type_of(r).violation
        if violation == "number":
            trial = copy.deepcopy(target)
            if any(choose_numbers(trial, task, {r.id}, rng, fam) for _ in range(3)):
                plan[r.id] = Choice(r.id)
            else:
                impossible.append(f"{task.id} {r.id} ({r.type} {r.field}): no number fails it alone (no cube bit)")
            continue
        if violation == "review":
            plan[r.id] = Choice(r.id)
            continue
        alone = [x for x in mechanical if x.id != r.id]
        together = [x for x in alone if x.id not in plan]
        candidates = list(choices(target, r, task, pools, rng))
        if violation == "value":
            # A coin decides whether the wrong value is shorter or longer than the right one (the side first,
            # plausibility order kept): otherwise the text of a vertex grows with its wrong bits wherever the
            # listing states the value, and "the shortest text" leans to the all-right vertex.
            size, shorter = len(str(r.expected_value)), rng.random() < 0.5
            candidates.sort(key=lambda c: len(str(c.value)) > size if shorter else len(str(c.value)) < size)
        for choice in candidates:
            one = copy.deepcopy(target)
            if not apply(one, r, choice, task, alone):
                continue
            every = copy.deepcopy(all_wrong)
            if apply(every, r, choice, task, together):
                plan[r.id] = choice
                all_wrong = every
                break
        else:
            impossible.append(f"{task.id} {r.id} ({r.type} {r.field}): no value fails it alone (no cube bit)")
    return plan, impossible


def make_listing(task: Task, slot: Slot, query_id: str | None, fam: Family, plan: dict[str, Choice],
                 protected: set[str], ctx: _Context, attempts: int = MAX_ATTEMPTS) -> Sibling | None:
    """One listing of the family: the target copied, its varied facts drawn and drifted keys set, the
    planned wrong value of each hidden rubric of its vertex applied, the query rubric failed by a drawn
    choice, its numbers drawn, its id and reviews made; every rubric verdict checked with the judge, every
    violation real, and no task of its category (other than those it is the target of) satisfied entirely.
    The target's own listing (slot.is_target) is made by the same steps with nothing to violate."""
    target = task.target_product
    rubrics = {r.id: r for r in task.rubrics}
    wrong = set(slot.wrong) | ({query_id} if query_id else set())
    mechanical = _mechanical(task)
    keep = [r for r in mechanical if r.id not in wrong]
    opinions = _opinions(task)
    sharing = [t for t in ctx.sharing.get(target.product_id, []) if t.id != task.id] if slot.is_target else []
    for attempt in range(attempts):
        rng = random.Random(f"siblings|{SIBLINGS_VERSION}|{ctx.seed}|{task.id}|{slot.name}|{query_id}|{attempt}")
        product = copy.deepcopy(target)
        product.product_id = "?"
        vary_listing(product, rng, protected, fam, sorted(slot.drift))
        if not all(apply(product, rubrics[rid], plan[rid], task, keep) for rid in sorted(slot.wrong)):
            continue
        if query_id and violate_rubric(product, rubrics[query_id], task, ctx.pools, rng, keep) is None:
            continue
        if not choose_numbers(product, task, wrong, rng, fam, also=sharing):
            continue
        if not all(satisfies(r, product, task) == (r.id not in wrong) for r in mechanical):
            continue
        if any(nominal_violation(rubrics[rid], product, task) for rid in wrong):
            continue
        if sharing and not all(satisfies(r, product, t) for t in sharing for r in _mechanical(t)):
            continue
        if slot.is_target:
            product.product_id = target.product_id
            reviews = ctx.target_reviews.get(target.product_id) or ctx.make_reviews(
                product.product_id, task.id, [r.opinion for r in opinions], rng)
        else:
            product.product_id = new_id(target.product_id, rng, ctx.taken)
            keep_opinions = [r.opinion for r in opinions if r.id not in wrong]
            avoid = [r.opinion for r in opinions if r.id in wrong]
            reviews = ctx.make_reviews(product.product_id, task.id, keep_opinions, rng, avoid=avoid) if avoid \
                else ctx.make_reviews(product.product_id, task.id, keep_opinions, rng)
        if (opinions and not all(satisfies(r, product, task, reviews, ctx.review_checker) == (r.id not in wrong)
                                 for r in opinions)) or \
                (sharing and not all(satisfies(r, product, t, reviews, ctx.review_checker)
                                     for t in sharing for r in _opinions(t))) or \
                _spoils(product, reviews, task, ctx):
            if not slot.is_target:
                ctx.taken.discard(product.product_id)
            continue
        kind = "target" if slot.is_target else ("query_violator" if query_id else "query_match")
        return Sibling(product, reviews, task.id, tuple(sorted(wrong)), kind, slot.wrong)
    return None


def _spoils(product: Product, reviews: list[Review], task: Task, ctx: _Context) -> bool:
    """Does the listing satisfy every rubric of a task of its category it is not the target of?"""
    for other in ctx.rivals.get(product.main_category, []):
        if other.id == task.id or other.target_product.product_id == product.product_id:
            continue
        if all(satisfies(r, product, other) for r in _mechanical(other)) and \
                all(satisfies(r, product, other, reviews, ctx.review_checker) for r in _opinions(other)):
            return True
    return False


def make_siblings(tasks: Sequence[Task], *, per_vertex: int = DEFAULT_PER_VERTEX, cube: bool = True,
                  seed: int = 0, taken: set[str], pools: ValuePools, make_reviews: MakeReviews,
                  review_checker: ReviewMatcher, target_reviews: dict[str, list[Review]] | None = None
                  ) -> tuple[list[Sibling], SiblingStats]:
    """Every task's family (module docstrings of this package and of cube.py): the target's re-listing
    (kind "target", once per target id: a target several tasks share is made by the first of them and kept
    inside every one's rubrics), the other query matches and the query violators; then the uniqueness pass."""
    stats = SiblingStats()
    out: list[Sibling] = []
    protected_by_target: dict[str, set[str]] = {}
    sharing: dict[str, list[Task]] = {}
    rivals: dict[str, list[Task]] = {}
    for task in tasks:
        pid = task.target_product.product_id
        protected_by_target.setdefault(pid, set()).update(f for r in task.rubrics for f in field_forms(r.field))
        sharing.setdefault(pid, []).append(task)
        rivals.setdefault(task.target_product.main_category, []).append(task)
    ctx = _Context(pools, taken, make_reviews, review_checker, seed, target_reviews or {}, rivals, sharing)
    relisted: set[str] = set()
    for task in tasks:
        pid = task.target_product.product_id
        if not all(satisfies(r, task.target_product, task) for r in _mechanical(task)):
            stats.impossible.append(f"{task.id}: its target does not satisfy its own rubrics")
            continue
        protected = protected_by_target[pid]
        fam = family_of(task, pools, random.Random(f"siblings|family|{SIBLINGS_VERSION}|{seed}|{task.id}"),
                        protected)
        rng = random.Random(f"siblings|design|{SIBLINGS_VERSION}|{seed}|{task.id}")
        hidden = [r for r in task.rubrics if r.info_source in HIDDEN]
        plan, impossible = plan_violations(task, hidden, pools, rng, fam) if cube else ({}, [])
        stats.impossible += impossible
        query = [r for r in task.rubrics if r.info_source not in HIDDEN]
        slots = design([r for r in hidden if r.id in plan], query, sorted(fam.drift), rng,
                       per_vertex=per_vertex, cube=cube)
        stats.families += cube and len(plan) > 0
        failures: Counter = Counter()     # query rubric -> vertices where no violator could fail it alone
        succeeded: set[str] = set()
        for slot in slots:
            if slot.is_target and pid in relisted:
                continue
            made = None
            if slot.query is None:
                made = make_listing(task, slot, None, fam, plan, protected, ctx)
            else:
                order = [r.id for r in query]
                start = order.index(slot.query)
                for qid in order[start:] + order[:start]:
                    if failures[qid] >= HOPELESS_AFTER and qid not in succeeded:
                        continue
                    made = make_listing(task, slot, qid, fam, plan, protected, ctx, attempts=QUERY_ATTEMPTS)
                    if made is not None:
                        succeeded.add(qid)
                        break
                    failures[qid] += 1
            if made is None:
                stats.missing.append(f"{task.id} {slot.name}")
                continue
            if made.kind == "target":
                relisted.add(pid)
            out.append(made)
            stats.made[made.kind] += 1
        stats.impossible += [f"{task.id} {qid} ({rubric_of(task, qid)}): no violator fails it alone"
                             for qid in failures if qid not in succeeded]
    kept = drop_non_unique(tasks, out, review_checker)
    stats.dropped_not_unique = len(out) - len(kept)
    return kept, stats


def rubric_of(task: Task, rubric_id: str) -> str:
    r = next(r for r in task.rubrics if r.id == rubric_id)
    return f"{r.type} {r.field}"


def drop_non_unique(tasks: Sequence[Task], siblings: list[Sibling], review_checker: ReviewMatcher) -> list[Sibling]:
    """Listings that satisfy every rubric of some task (of their category) they are not the target of are
    dropped: each target stays the only product a task accepts. (make_listing already refuses them; this
    pass is the guarantee.)"""
    by_category: dict[str, list[Task]] = {}
    for task in tasks:
        by_category.setdefault(task.target_product.main_category, []).append(task)
    kept = []
    for sibling in siblings:
        p = sibling.product
        spoils = False
        for task in by_category.get(p.main_category, []):
            if task.target_product.product_id == p.product_id:
                continue
            if not all(satisfies(r, p, task) for r in _mechanical(task)):
                continue
            if all(satisfies(r, p, task, sibling.reviews, review_checker) for r in _opinions(task)):
                spoils = True
                break
        if not spoils:
            kept.append(sibling)
    return kept

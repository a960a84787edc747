"""Numbers: a listing's average rating, rating count and price, drawn near its family's centre inside every
range it must satisfy and outside the ones it must violate. The target's own listing is drawn the same way
(cube.py), so its numbers are one draw of the family's process, not the point the others are spread around.

Prices are rendered with ONE cents distribution for every listing, the target's included: the cents the task
file's real prices end in (`ValuePools.cents`; .99/.95/.49/.69/.29/.89 when the file has no price). A real
price ending in .22 is then as likely on any listing of the family as on the target (issue 27, cue 2)."""
from __future__ import annotations

import math
import random
from typing import Any, Sequence

from ecab.catalog.siblings.checks import satisfies
from ecab.catalog.siblings.family import COUNT_SPREAD, PRICE_SPREAD, RATING_SPREAD, Family, stars_of_logit
from ecab.core.rubric_types import type_of
from ecab.schema import Product, Rubric, Task


NUMERIC_FIELDS = ("average_rating", "rating_number", "price")
USUAL_CENTS = (99, 99, 95, 49, 69, 29, 89)


def price_tag(value: float, rng: random.Random, cents: Sequence[int] = ()) -> float:
    """`value`'s whole part with cents drawn from `cents` (the file's; USUAL_CENTS when empty)."""
    whole = max(0, math.floor(value))
    return round(whole + rng.choice(tuple(cents) or USUAL_CENTS) / 100, 2)


def _touches(rubric: Rubric, name: str) -> bool:
    """Does the rubric constrain the number `name`: a range its own field, a budget the price?"""
    kind = type_of(rubric).value_kind
    if kind == "range":
        return rubric.field == name
    return kind == "amount" and name == "price"


def _thresholds(rubrics: Sequence[Rubric]) -> list[float]:
    out = []
    for r in rubrics:
        v = r.expected_value
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out.append(float(v))
        elif isinstance(v, list):
            out += [float(x) for x in v]
        elif isinstance(v, dict):
            out += [float(x) for k, x in v.items() if k in ("min", "max", "value")]
    return out


def _numeric_candidates(name: str, base: Any, rubrics: Sequence[Rubric], rng: random.Random,
                        cents: Sequence[int]) -> list[Any]:
    """Values for one number, most plausible first: draws around the family's centre `base` (the target's
    spread), then values just inside / outside each threshold, then a coarse sweep. Every price candidate
    is rendered with the family's cents."""
    ts = _thresholds(rubrics)
    if name == "average_rating":
        near = [round(stars_of_logit(float(base) + rng.gauss(0, RATING_SPREAD)), 1) for _ in range(12)] \
            if base is not None else []
        edges = [round(min(5.0, max(1.0, t + d)), 1) for t in ts for d in (-0.3, -0.2, -0.1, 0.1, 0.2, 0.3, 0.0)]
        return near + edges + [x / 10 for x in range(10, 51)]
    if name == "rating_number":
        b = float(base) if base else 50.0
        near = [max(1, round(b * math.exp(rng.gauss(0, COUNT_SPREAD)))) for _ in range(12)]
        edges = [max(1, round(t * f)) for t in ts for f in (0.3, 0.5, 0.8, 0.95, 1.05, 1.3, 2.0)]
        edges += [max(1, round(t)) + d for t in ts for d in (-1, 0, 1)]
        return near + edges + [1, 2, 3, 5, 8, 13, 25, 60, 150, 400, 1200, 5000]
    # price: a target without one gives its family none, unless a rubric needs one
    if base is None and not rubrics:
        return [None]
    b = float(base) if base is not None else (ts[0] if ts else 20.0)
    tag = lambda x: price_tag(x, rng, cents)    # noqa: E731
    near = [tag(b * math.exp(rng.gauss(0, PRICE_SPREAD))) for _ in range(12)]
    edges = [tag(t * f) for t in ts for f in (0.8, 0.9, 0.95, 0.97, 1.03, 1.05, 1.1, 1.25) for _ in range(2)]
    edges += [tag(t + d) for t in ts for d in (-1.0, -0.5, 0.5, 1.0) for _ in range(2)]
    fine = [tag(b * f) for f in (0.7, 0.8, 0.9, 0.95, 1.05, 1.1, 1.2, 1.4)]
    span = [tag(max([b, *ts]) * 3 * 0.97 ** n) for n in range(160)]    # 3x the largest down to ~2.5%
    last = [round(t + d, 2) for t in ts for d in (-0.5, -0.01, 0.01, 0.5)]   # any cents: a last resort
    return near + edges + fine + [x for x in span if x > 0] + last


def choose_numbers(product: Product, task: Task, violate: set[str], rng: random.Random, fam: Family,
                   also: Sequence[Task] = ()) -> bool:
    """Draw the listing's average_rating, rating_number and price around the family's centre, inside every
    range it must satisfy, outside the ones it must violate (and inside every range of the tasks `also`
    sharing this listing as their target). False when no value does both."""
    for name in NUMERIC_FIELDS:
        rubrics = [r for r in task.rubrics if _touches(r, name)]
        others = [(t, r) for t in also for r in t.rubrics if _touches(r, name)]
        base = {"average_rating": fam.rating, "rating_number": fam.count, "price": fam.price}[name]
        for value in _numeric_candidates(name, base, rubrics + [r for _, r in others], rng, fam.cents):
            if value is not None and name == "rating_number":
                value = int(value)
            if value is not None and value <= 0:
                continue
            setattr(product, name, value)
            if all(satisfies(r, product, task) == (r.id not in violate) for r in rubrics) and \
                    all(satisfies(r, product, t) for t, r in others):
                break
        else:
            return False
    return True

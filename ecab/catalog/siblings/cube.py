"""A family's design: which listings it has, which rubrics each fails, which drifted facts each carries.

The QUERY MATCHES of a family (its listings satisfying every query rubric: what a perfect query-reader who
never reads the profile nor asks is left with) are the full factorial over the task's hidden (persona and
clarification) rubrics: with k of them, the 2^k configurations of right / wrong per hidden rubric, each
listed once. The all-right vertex is the target's own listing (its product id), the vertex wrong on rubric
i alone is rubric i's witness; every vertex fails a hidden rubric with the family's ONE wrong value for it
(violate.py, planned once), so on every hidden field exactly half of the query matches hold the right value
and half the wrong one: neither is a minority or a majority. The hypercube is vertex-transitive (flipping
any set of bits maps it onto itself), so no structural reading of the matches (counts, distances,
consensus, centrality) singles one vertex out: only the hidden information does.

Every listing, the target's included, is otherwise one draw of the same process (make.make_listing): its
numbers around the family's centre inside its rubrics (prices with the file's cents, numbers.py), its
varied facts (rank, date, weight, model number) around the same centre, its reviews from one generator. So
given its vertex every listing's form is an independent draw from one distribution, and the vertices are
symmetric: any form feature, or any classifier over form features, finds the target at chance.

One thing the form cannot hide: a hidden rubric on a NUMBER (a rating floor, a price cap, a minimum count)
always prefers the better value, so "the best rated" among the matches lies in the right half on such a
rubric and picks the target with probability 1/2^(k-1) instead of 1/2^k in those tasks (a shopper's prior
about hidden wishes, not a form cue; measured over 8 catalogs of the 34 released samples: 14% in the 6 tasks
with a hidden rating floor, 6% in the others, 7.4% overall against a 6.25% floor).

Around them, `per_vertex` QUERY VIOLATORS per vertex (`catalog.siblings`), each failing exactly one query
rubric (round-robin over the query rubrics in a seeded order, so each is failed about equally often and
a vertex's violators fail different ones) and holding its vertex's hidden configuration. They are spread
over the vertices uniformly: were they all derived from the target, the hidden configuration most of the
family shares would be the target's. The accepted cost: only the
violators of the target's vertex fail that one rubric ALONE, so only `per_vertex` query rubrics per task
have a witness (are load-bearing in the audit); the others are still checked by the judge and still keep
every violator out of the matches. A query rubric that admits no violator alone (a price cap implied by a
budget) is skipped for the next one, so every vertex keeps its count.

Drifted facts (family.py) are assigned by halves: on each drifted key exactly half of the query matches
(and half of the violators) carry the family's other value, in a seeded draw that includes the target's
listing, so the target holds the file's value or the other one like any listing.

Above MAX_CUBE_RUBRICS hidden rubrics (never in the released tasks, which have 4) the cube spans the first
MAX_CUBE_RUBRICS (a seeded choice); each further hidden rubric is wrong exactly where the parity of two
cube bits is odd (still half of the matches, still a group, so still vertex-transitive), and gets one extra
witness, the target's vertex with only that rubric wrong: a listing with no counterpart at other vertices,
the cap's documented asymmetry.
"""
from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from typing import Sequence

from ecab.schema import Rubric

MAX_CUBE_RUBRICS = 6


@dataclass(frozen=True)
class Slot:
    """One listing of a family: the hidden rubrics it fails (its vertex), the query rubric it fails (None: a
    query match), the drifted keys it carries the family's other value on."""

    name: str                        # "v0110", "v0110-q0", ...: part of the listing's seed
    wrong: frozenset[str]            # hidden rubric ids
    query: str | None                # the query rubric id it fails first (make.py may move on, round-robin)
    drift: frozenset[str]
    is_target: bool = False


def vertices(hidden: Sequence[Rubric], rng: random.Random, cube: bool) -> list[frozenset[str]]:
    """The hidden configurations of the query matches (the target's, all right, first)."""
    if not hidden or not cube:
        return [frozenset()]
    ids = [r.id for r in hidden]
    spanned = ids if len(ids) <= MAX_CUBE_RUBRICS else sorted(rng.sample(ids, MAX_CUBE_RUBRICS), key=ids.index)
    extra = [i for i in ids if i not in spanned]
    parity = {e: rng.sample(spanned, min(2, len(spanned))) for e in extra}
    out = []
    for bits in itertools.product((0, 1), repeat=len(spanned)):
        wrong = {rid for rid, b in zip(spanned, bits) if b}
        wrong |= {e for e, pair in parity.items() if sum(p in wrong for p in pair) % 2}
        out.append(frozenset(wrong))
    out += [frozenset({e}) for e in extra]        # their witnesses (the cap's asymmetry)
    return out


def _halves(n: int, keys: Sequence[str], rng: random.Random) -> list[frozenset[str]]:
    """For n listings, the drifted keys of each: on every key exactly half of them (a coin decides the odd
    one), independently per key."""
    carried: list[set[str]] = [set() for _ in range(n)]
    for key in keys:
        half = n // 2 + (n % 2 and rng.random() < 0.5)
        for i in rng.sample(range(n), half):
            carried[i].add(key)
    return [frozenset(c) for c in carried]


def design(hidden: Sequence[Rubric], query: Sequence[Rubric], drift_keys: Sequence[str], rng: random.Random, *,
           per_vertex: int, cube: bool) -> list[Slot]:
    """The family's slots: the query matches (the cube; the target's first), then `per_vertex` query
    violators per vertex (module docstring)."""
    tops = vertices(hidden, rng, cube)
    name = {v: "v" + "".join("1" if r.id in v else "0" for r in hidden) for v in tops}
    drift_of_match = _halves(len(tops), drift_keys, rng)
    slots = [Slot(name[v], v, None, drift_of_match[i], is_target=not v) for i, v in enumerate(tops)]
    if per_vertex <= 0 or not query:
        return slots
    order = [r.id for r in query]
    rng.shuffle(order)
    ranked = list(tops)
    rng.shuffle(ranked)     # vertex n's violators fail query rubrics n*per_vertex, n*per_vertex+1, ... (mod m)
    first = {v: n * per_vertex for n, v in enumerate(ranked)}
    pairs = [(v, j) for v in tops for j in range(per_vertex)]
    drift_of_violator = _halves(len(pairs), drift_keys, rng)
    for n, (v, j) in enumerate(pairs):
        slots.append(Slot(f"{name[v]}-q{j}", v, order[(first[v] + j) % len(order)], drift_of_violator[n]))
    return slots

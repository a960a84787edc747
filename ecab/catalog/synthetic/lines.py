"""Product lines: one item sold in every combination of a few specs, each combination listed once.

A line is a full factorial (docs/decisions.md#adversaries): its primary axis (color, size, pack count...:
two values, named in the title) times four CUBE KEYS, two fields every intent may hide in the persona and two
it may hide in the clarification script (ecab.fields.HIDEABLE_*), each with two values, so 32 listings. A
task built on any listing of a line hides the cube keys; its query names the line's shared specs (and the
primary value, read from the title), so the query's matches are the 16 listings of one primary value: one per
configuration of the hidden requirements, exactly one of them right on all four, none more central, more
typical or listed more often than another. Every listing is drawn by the same process, so nothing but the
hidden requirements tells the target apart.
"""
from __future__ import annotations

import itertools
import random

from ecab.catalog.synthetic.model import Member
from ecab.catalog.synthetic.product_type import ProductType
from ecab.catalog.synthetic.text import phrase_in, value_options
from ecab.fields import HIDEABLE_CLARIFICATION_FIELDS, HIDEABLE_PERSONA_FIELDS

CUBE_KEYS_PER_SOURCE = 2      # cube keys hideable in the persona, and as many in the clarification script


def alternatives(ptype: ProductType, key: str, value: str) -> list[str]:
    """Values of the pool a listing differing in `key` can carry: none of them names any option of
    `value`, so a requirement on `value` (any one option) rules that listing out."""
    pool = ptype.value_pools[key]
    mine = value_options(value)
    return [v for v in pool if v != value and not any(phrase_in(o, v) for o in mine)]


def _atomic(values) -> list[str]:
    return [v for v in values if not any(sep in v for sep in (",", "/", "|"))]


def exclusive_alternatives(ptype: ProductType, key: str, value: str) -> list[str]:
    """Single-option alternatives of `value` that neither name it nor are named by it ("USB" and "USB-C" are
    not a pair: a requirement of "USB" would hold on both), so a requirement on either rules the other out."""
    return [v for v in _atomic(alternatives(ptype, key, value)) if not phrase_in(v, value)]


def value_pair(rng: random.Random, ptype: ProductType, key: str) -> tuple[str, str] | None:
    """Two single-option values of `key` that exclude each other: an axis of a line (None when the pool has
    no such pair)."""
    firsts = _atomic(ptype.value_pools[key])
    rng.shuffle(firsts)
    for value in firsts:
        others = exclusive_alternatives(ptype, key, value)
        if others:
            return value, rng.choice(others)
    return None


def cube_axes(rng: random.Random, ptype: ProductType, keys: list[str], primary: str
              ) -> dict[str, tuple[str, str]] | None:
    """The line's cube keys and their two values: CUBE_KEYS_PER_SOURCE persona-hideable and as many
    clarification-hideable fields among the family's keys; None when the type has too few."""
    free = [k for k in keys if k not in ("Brand", primary)]
    axes: dict[str, tuple[str, str]] = {}
    for hideable in (HIDEABLE_PERSONA_FIELDS, HIDEABLE_CLARIFICATION_FIELDS):
        fields = [k for k in free if k in hideable]
        rng.shuffle(fields)
        picked = 0
        for key in fields:
            if picked == CUBE_KEYS_PER_SOURCE:
                break
            pair = value_pair(rng, ptype, key)
            if pair is not None:
                axes[key] = pair
                picked += 1
        if picked < CUBE_KEYS_PER_SOURCE:
            return None
    return axes


def cube_members(rng: random.Random, base: dict[str, str], axes: dict[str, tuple[str, str]], store: str,
                 manufacturer: str) -> list[Member]:
    """Every combination of the axes' values over the family's base values, each listed once, shuffled."""
    keys = list(axes)
    members = [Member("cube", {**base, **{k: axes[k][bit] for k, bit in zip(keys, bits)}}, store, manufacturer)
               for bits in itertools.product((0, 1), repeat=len(keys))]
    rng.shuffle(members)
    return members

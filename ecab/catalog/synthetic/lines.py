"""Product lines: an anchor listing and the listings around it (its other primary-axis values, one listing
per other spec, a white-label clone, re-listings by other sellers), and the drift that keeps the anchor
from being the line's most typical listing."""
from __future__ import annotations

import random

from ecab.catalog.synthetic.brands import manufacturer_for, other_brand, store_for
from ecab.catalog.synthetic.model import Family, Member
from ecab.catalog.synthetic.numbers import count_bucket, half_star_floor
from ecab.catalog.synthetic.plan import MULTI_KEYS
from ecab.catalog.synthetic.product_type import ProductType
from ecab.catalog.synthetic.seeding import rng_for
from ecab.catalog.synthetic.tables.names import RESELLERS
from ecab.catalog.synthetic.text import phrase_in, value_options


def alternatives(ptype: ProductType, key: str, value: str) -> list[str]:
    """Values of the pool a listing differing in `key` can carry: none of them names any option of
    `value`, so a requirement on `value` (any one option) rules that listing out."""
    pool = ptype.value_pools[key]
    mine = value_options(value)
    return [v for v in pool if v != value and not any(phrase_in(o, v) for o in mine)]


def line_members(seed: int, rng: random.Random, ptype: ProductType, keys: list[str], base: dict[str, str],
                 brand: str, store: str, manufacturer: str, primary: str, spoiled: str | None,
                 anchor_numbers: tuple[float | None, float, int]) -> tuple[list[Member], int]:
    """A product line as real listings have it: the anchor, its other primary-axis values (colors,
    sizes, pack counts...), one listing per other spec it is also sold in (material, connector, finish...),
    the same item under another brand, and re-listings by other sellers that differ in price, rating,
    rating count or title wording. Members come out shuffled; returns them and the anchor's position."""
    first = rng.choice(ptype.core[primary])
    others = alternatives(ptype, primary, first)
    primary_values = [first] + rng.sample(others, min(len(others), rng.choice((1, 2, 2, 3))))
    anchor_values = {**base, primary: primary_values[0]}
    members = [Member("anchor", anchor_values, store, manufacturer)]
    members += [Member("variant", {**anchor_values, primary: v}, store, manufacturer)
                for v in primary_values[1:]]
    specs = [k for k in keys if k not in ("Brand", primary) and k != spoiled and base.get(k)
             and alternatives(ptype, k, base[k])]
    rng.shuffle(specs)
    for key in specs:
        members.append(Member("leaf", {**anchor_values, key: rng.choice(alternatives(ptype, key, base[key]))},
                              store, manufacturer, key=key))
    if rng.random() < 0.25:
        other = other_brand(seed, rng, ptype, brand)
        members.append(Member("clone", {**anchor_values, "Brand": other}, store_for(seed, other),
                              manufacturer_for(seed, other, ptype.source_category)))
    price, average, count = anchor_numbers
    feasible = {"rating": half_star_floor(average) > 1.0, "count": count_bucket(count) is not None,
                "price": price is not None}
    pair = rng.choices((("rating", "count"), ("rating", "price"), ("count", "price")), (0.6, 0.2, 0.2))[0]
    aspects = [a for a in pair if feasible[a]] + (["title"] if rng.random() < 0.5 else [])
    for aspect in aspects:
        seller = rng.choice(RESELLERS) if rng.random() < 0.7 else f"{brand} Outlet"
        members.append(Member("dup", dict(anchor_values), seller, manufacturer, aspect=aspect))
    order = list(range(len(members)))
    rng.shuffle(order)
    return [members[i] for i in order], order.index(0)


# The share of a line's listings outside the anchor's configuration that drift: they carry the line's other
# weight and dimensions (facts construction never reads: not in ecab.fields.DETAIL_FIELDS) and list one more
# option on the multi-valued specs they share with the anchor (a requirement on the anchor's value still holds
# there: the judge checks "contains"). Every other listing of a line is the anchor with one thing changed, so
# without this the anchor would hold the most common value of every field and sit one value from most listings:
# a script picking the most typical or most central of the query's matches would find the target without
# asking anything (ecab/construct/validity.py, structural picks; docs/decisions.md#validity-audit).
LINE_DRIFT_SHARE = 0.75


def drift_line(seed: int, family: Family) -> None:
    """Mark most members of a line outside the anchor's configuration as drifted and draw what they carry
    (from their own random stream: the rest of the family is drawn exactly as before)."""
    rng = rng_for(seed, "drift", family.index)
    length, width, height = sorted((round(rng.uniform(0.3, 12), 2) for _ in range(3)), reverse=True)
    family.drift_dims = f"{length} x {width} x {height} inches"
    family.drift_weight = (f"{round(rng.uniform(1, 25), 1)} pounds" if family.ptype.heavy
                           else f"{round(rng.uniform(0.4, 30), 2)} ounces")
    anchor = family.members[family.anchor].values
    extra = {}       # multi-valued key -> the one more option the drifted listings list
    for key in sorted(k for k in anchor if k in MULTI_KEYS and anchor[k]):
        options = [v for v in alternatives(family.ptype, key, anchor[key])
                   if not any(sep in v for sep in (",", "/", "|"))]
        if options:
            extra[key] = rng.choice(options)
    for member in family.members:
        # The anchor's own configuration (the anchor and its re-listings, any of which can be a target)
        # keeps the family's values: the drift makes that configuration the minority on these facts.
        same = member.kind in ("anchor", "dup")
        member.drifted = not same and rng.random() < LINE_DRIFT_SHARE
        if member.drifted:
            # One more option on the multi-valued specs it shares with the anchor: every requirement on
            # them still holds ("contains"), but the anchor's exact value is no longer the common one.
            member.values = {k: (f"{v}, {extra[k]}" if k in extra and v == anchor[k] else v)
                             for k, v in member.values.items()}

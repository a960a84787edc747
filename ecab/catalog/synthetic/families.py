"""Families, the unit of near-duplication: a type, a brand and a plan shared by several listings, laid out
from index 0 on (so the output does not depend on batch size, and is prefix-stable)."""
from __future__ import annotations

from typing import Iterator

from ecab.catalog.synthetic.brands import manufacturer_for, pick_brand, store_for
from ecab.catalog.synthetic.lines import cube_axes, cube_members, value_pair
from ecab.catalog.synthetic.model import Family, Member
from ecab.catalog.synthetic.numbers import round_price
from ecab.catalog.synthetic.plan import (alias_modes, apply_odd_value, base_values, choose_keys, detail_layout,
                                         title_plan)
from ecab.catalog.synthetic.registry import TYPE_LIST
from ecab.catalog.synthetic.seeding import ALNUM, DAY_FIRST, DAY_LAST_LISTING, rng_for
from ecab.catalog.synthetic.tables.names import RESELLERS

_TYPE_WEIGHTS = [1.0] * len(TYPE_LIST)
_TYPE_CUM = [sum(_TYPE_WEIGHTS[:i + 1]) for i in range(len(_TYPE_WEIGHTS))]

_FAMILY_SIZES = (1, 3, 4, 5, 6, 7, 8)
_FAMILY_SIZE_CUM = (0.12, 0.32, 0.52, 0.68, 0.81, 0.91, 1.0)
# A line's listings have at least this many ratings, so each has 10+ reviews that carry the line's opinions.
LINE_MIN_RATINGS = 20
_LINE_SHARE = 0.3             # families that are product lines (32 listings each; the rest: plain
                              # near-duplicate families of 1-8 listings): about 3/4 of the products


def make_family(seed: int, index: int) -> Family:
    rng = rng_for(seed, "family", index)
    ptype = rng.choices(TYPE_LIST, cum_weights=_TYPE_CUM)[0]
    line = rng.random() < _LINE_SHARE
    roll = rng.random()
    size = next(s for s, c in zip(_FAMILY_SIZES, _FAMILY_SIZE_CUM) if roll < c)
    primary = ptype.variants[0]
    primary_pool = ptype.core[primary]
    size = min(size, len(primary_pool))
    brand = pick_brand(seed, rng, ptype)
    store = store_for(seed, brand) if rng.random() < 0.85 else rng.choice(RESELLERS)
    main_category = rng.choices([c for c, _ in ptype.main_categories],
                                [w for _, w in ptype.main_categories])[0]
    keys = choose_keys(rng, ptype, 0.8 if line else 0.6)   # a line's listings spell out more specs
    axes = cube_axes(rng, ptype, keys, primary) if line else None
    primary_pair = value_pair(rng, ptype, primary) if axes else None
    line = primary_pair is not None                          # a type with too few hideable specs: plain
    secondaries = [k for k in ptype.variants[1:] if k in keys]
    secondary = rng.choice(secondaries) if secondaries and rng.random() < 0.5 and not line else None
    variant_keys = {primary} | ({secondary} if secondary else set()) | (set(axes) if line else set())
    base = base_values(rng, ptype, keys, brand, variant_keys)
    apply_odd_value(rng, base, ptype, keys, variant_keys)
    modes = alias_modes(rng, keys, base)
    layout = detail_layout(rng, ptype, keys, modes, main_category)
    # A line's titles never name its cube keys' values: a task hides them (a value the title spells goes to
    # the query, construct/partition.py).
    title_keys = [k for k in keys if not (line and k in axes)]
    title_segments, title_joiner = title_plan(rng, ptype, title_keys, primary)
    low, high = ptype.price_range
    price_base = low * (high / low) ** rng.random()
    length, width, height = sorted((round(rng.uniform(0.3, 12), 2) for _ in range(3)), reverse=True)
    weight = (f"{round(rng.uniform(1, 25), 1)} pounds" if ptype.heavy
              else f"{round(rng.uniform(0.4, 30), 2)} ounces")
    points = list(ptype.selling_points)
    rng.shuffle(points)
    pos, neg = list(ptype.positive), list(ptype.negative)
    rng.shuffle(pos)
    rng.shuffle(neg)
    manufacturer = manufacturer_for(seed, brand, ptype.source_category)
    price_ending = rng.choice((0.99, 0.99, 0.95, 0.49, 0.0))
    quality = min(4.9, max(2.0, rng.gauss(4.25, 0.4)))
    popularity = rng.gauss(3.9, 1.5)
    line_centre = None
    if line:
        line_price = None if rng.random() < 0.3 else round_price(price_base, price_ending)
        line_centre = (line_price, round(min(5.0, max(1.0, quality + rng.gauss(0, 0.15))), 1),
                       max(LINE_MIN_RATINGS, min(50_000, int(rng.lognormvariate(popularity, 0.6)))))
        members = cube_members(rng, base, {primary: primary_pair, **axes}, store, manufacturer)
    else:
        members = []
        for value in rng.sample(primary_pool, size):
            values = {**base, primary: value}
            if secondary and rng.random() < 0.6:
                values[secondary] = rng.choice(ptype.value_pools[secondary])
            members.append(Member("simple", values, store, manufacturer))
    family = Family(
        index=index, ptype=ptype, brand=brand, store=store, manufacturer=manufacturer,
        main_category=main_category, base=base, primary=primary, members=members,
        line_centre=line_centre, cube_keys=tuple(axes) if line else (),
        layout=layout, extras={name: rng.choice(pool) for name, pool in ptype.extras.items()},
        title_segments=title_segments, title_joiner=title_joiner, feature_plan=points,
        feature_header=rng.choice(("caps", "lenticular", "plain", "check")),
        keywords=rng.sample(ptype.keywords, min(4, len(ptype.keywords))),
        description_style=rng.randrange(3), price_base=price_base,
        price_ending=price_ending, quality=quality, popularity=popularity,
        first_day=rng.randint(DAY_FIRST, DAY_LAST_LISTING),
        model_prefix="".join(rng.choice(ALNUM[10:]) for _ in range(rng.randint(2, 3))) + str(rng.randint(1, 99)),
        dims=f"{length} x {width} x {height} inches", weight=weight, pos_order=pos, neg_order=neg)
    return family


def iter_families(seed: int) -> Iterator[Family]:
    index = 0
    while True:
        yield make_family(seed, index)
        index += 1

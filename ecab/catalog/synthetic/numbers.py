"""A listing's price, average rating and rating count: a family's own draws, or a line listing's within the
line's brackets (one price, the same half star, the same ecab.fields.RATING_NUMBER_BUCKETS bucket)."""
from __future__ import annotations

import math
import random

from ecab.catalog.synthetic.model import Family
from ecab.fields import RATING_NUMBER_BUCKETS


def round_price(raw: float, ending: float) -> float:
    whole = max(1, round(raw))
    return round(whole - 1 + ending if ending else float(whole), 2)


def family_price(family: Family, rng: random.Random) -> float | None:
    if rng.random() < 0.3:
        return None
    raw = family.price_base * rng.choice((1.0, 1.0, 1.0, 0.9, 0.95, 1.05, 1.1, 1.2))
    return round_price(raw, family.price_ending)


def half_star_floor(average: float) -> float:
    return max(1.0, math.floor(average * 2) / 2)


def count_bucket(count: int) -> int | None:
    below = [b for b in RATING_NUMBER_BUCKETS if b <= count]
    return below[-1] if below else None


def line_numbers(family: Family, rng: random.Random) -> tuple[float | None, float, int]:
    """(price, average rating, rating count) of a line's listing: the line's price (one item, one price),
    a rating within the centre's half star and a count within its bucket, each listing its own draw, so a
    requirement drawn from any listing's numbers holds for every listing of the line and no listing's
    numbers single it out."""
    price, average, count = family.line_centre
    floor, bucket = half_star_floor(average), count_bucket(count)
    new_average = round(rng.uniform(floor, min(5.0, floor + 0.4)), 1)
    if bucket is None:
        new_count = rng.randint(1, RATING_NUMBER_BUCKETS[0] - 1)
    else:
        above = [b for b in RATING_NUMBER_BUCKETS if b > bucket]
        new_count = rng.randint(bucket, (above[0] - 1) if above else max(bucket, int(count * 1.6)))
    return price, max(1.0, min(5.0, new_average)), new_count


def draw_rating_number(family: Family, rng: random.Random) -> int:
    return max(1, min(50_000, int(rng.lognormvariate(family.popularity, 0.6))))

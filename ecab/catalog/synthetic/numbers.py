"""A listing's price, average rating and rating count: a family's own draws, or a line member's within its
anchor's brackets (ecab.fields.PRICE_BUCKETS, half stars, RATING_NUMBER_BUCKETS)."""
from __future__ import annotations

import math
import random

from ecab.catalog.synthetic.model import Family, Member
from ecab.fields import PRICE_BUCKETS, RATING_NUMBER_BUCKETS


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


def _price_bracket_low(price: float) -> float:
    """The largest price bucket at or below `price` (0 below the first): prices from there up to `price`
    share its price cap."""
    below = [b for b in PRICE_BUCKETS if b <= price]
    if price >= PRICE_BUCKETS[-1]:
        return float(math.floor(price / 50) * 50)
    return float(below[-1]) if below else 0.0


def _price_bracket_top(price: float) -> float:
    """The smallest price bucket strictly above `price` (the next multiple of 50 past the last bucket)."""
    for bucket in PRICE_BUCKETS:
        if bucket > price:
            return float(bucket)
    return float((math.floor(price / 50) + 1) * 50)


def line_numbers(family: Family, member: Member, rng: random.Random) -> tuple[float | None, float, int]:
    """(price, average rating, rating count) of a line member: its own, within the anchor's brackets (the
    same price bucket and never dearer, the same half star, the same rating-count bucket), so a requirement
    drawn from any of them holds for the others; except a dup's one `aspect`, which lands outside them
    (dearer than the next price bucket, rated below the half star, fewer ratings than the bucket)."""
    price, average, count = family.anchor_numbers
    if member.kind == "anchor":
        return price, average, count
    floor, bucket = half_star_floor(average), count_bucket(count)
    new_price = price
    if price is not None:
        low = _price_bracket_low(price)
        new_price = round_price(rng.uniform(max(low, 0.8 * price), price), family.price_ending)
        if not low <= new_price <= price:
            new_price = price
    new_average = round(rng.uniform(floor, min(5.0, floor + 0.4)), 1)
    if bucket is None:
        new_count = rng.randint(1, RATING_NUMBER_BUCKETS[0] - 1)
    else:
        above = [b for b in RATING_NUMBER_BUCKETS if b > bucket]
        new_count = rng.randint(bucket, (above[0] - 1) if above else max(bucket, int(count * 1.6)))
    if member.aspect == "price" and price is not None:
        top = _price_bracket_top(price)
        new_price = max(round_price(top * rng.uniform(1.08, 1.45), family.price_ending), round(top + 1, 2))
    elif member.aspect == "rating":
        new_average = round(rng.uniform(max(1.0, floor - 1.0), floor - 0.1), 1)
    elif member.aspect == "count" and bucket is not None:
        new_count = rng.randint(max(1, bucket // 4), bucket - 1)
    return (new_price if new_price is None or new_price > 0 else price), max(1.0, min(5.0, new_average)), new_count


def draw_rating_number(family: Family, rng: random.Random) -> int:
    return max(1, min(50_000, int(rng.lognormvariate(family.popularity, 0.6))))

"""A task's family: the centre its listings' numbers and dates are drawn around, the facts half of them carry
instead of the target's file values (drift), and the listing facts each listing has of its own (rank, date
first available, weight, model number), never a field a rubric of the target's tasks reads. The target's own
listing is one member like the others: it draws its varied facts from the same centre and carries the
drifted value exactly when the family's balanced assignment (cube.py) says so."""
from __future__ import annotations

import copy
import datetime
import math
import random
import re
from dataclasses import dataclass, field
from typing import Callable, Iterable

from ecab.catalog.siblings.checks import key_form, satisfies, twin_keys
from ecab.catalog.siblings.listing_text import detail_key, phrase_pattern
from ecab.catalog.siblings.pools import ValuePools, canonical, kin_token, split_options
from ecab.core.rubric_types import reads_reviews
from ecab.core.text import normalize
from ecab.fields import MULTI_OPTION_FIELDS
from ecab.schema import Product, Task


# Each task's family is drawn around a CENTRE that is itself a draw around the file's target (the same spread
# both times), and every listing, the target's own included, is a draw around that centre: the file's values
# appear nowhere, and the target is neither the median of the family's numbers nor the middle of its dates
# (docs/decisions.md#target-siblings).
RATING_SPREAD, COUNT_SPREAD, PRICE_SPREAD = 0.6, 0.7, 0.12     # rating: logit-normal; count, price: log-normal
RANK_SPREAD, WEIGHT_SPREAD, DATE_SPREAD = 0.8, 0.08, 200         # log-normal, log-normal, +-days
DRIFTED_FACTS = 2     # facts (no rubric reads them) on which half of a family differs from the file's target
DRIFT_FIELDS = frozenset(MULTI_OPTION_FIELDS | {"Special Feature"})
_NUMBER = re.compile(r"\d[\d,]*")
_DATE_FORMATS = ("%B %d, %Y", "%b %d, %Y")


@dataclass
class Family:
    """One task's family: the centre its listings are drawn around, the detail values half of them carry
    instead of the file target's (on 1-2 facts no rubric reads; key -> value), the cents prices end in."""

    rating: float | None        # on the logit scale of (rating - 1) / 4: draws never pile up at 1 or 5 stars
    count: float | None
    price: float | None
    rank: float = 1.0
    weight: float = 1.0
    days: int = 0
    drift: dict[str, str] = field(default_factory=dict)
    cents: tuple[int, ...] = ()


def _logit_of_stars(stars: float) -> float:
    u = min(0.99, max(0.01, (stars - 1.0) / 4.0))
    return math.log(u / (1.0 - u))


def stars_of_logit(logit: float) -> float:
    return 1.0 + 4.0 / (1.0 + math.exp(-logit))


def family_of(task: Task, pools: ValuePools, rng: random.Random, protected: set[str]) -> Family:
    """The family's centre and drifted facts. A drifted key stands for its near-duplicates too (they get
    the same value, `vary_listing`); the fallback widens a multi-valued QUERY rubric field (every listing
    matching the query still satisfies it; a hidden field already takes two values in the cube)."""
    p = task.target_product
    fam = Family(
        rating=None if p.average_rating is None
        else _logit_of_stars(float(p.average_rating)) + rng.gauss(0, RATING_SPREAD),
        count=None if not p.rating_number else float(p.rating_number) * math.exp(rng.gauss(0, COUNT_SPREAD)),
        price=None if p.price is None else float(p.price) * math.exp(rng.gauss(0, PRICE_SPREAD)),
        rank=math.exp(rng.gauss(0, RANK_SPREAD)), weight=math.exp(rng.gauss(0, WEIGHT_SPREAD)),
        days=rng.randint(-DATE_SPREAD, DATE_SPREAD), cents=tuple(pools.cents))
    title = normalize(p.title)
    keys = [k for k, v in (p.details or {}).items()
            if isinstance(v, str) and v.strip() and k not in VARIED_FACTS and key_form(k) not in protected
            and canonical(k) not in ("Brand", "Manufacturer") and normalize(v) not in title]
    rng.shuffle(keys)
    forms: set[str] = set()
    for key in keys:
        if len(fam.drift) == DRIFTED_FACTS:
            break
        if key_form(key) in forms:
            continue
        current = {normalize(o) for o in split_options(p.details[key])} | {normalize(p.details[key])}
        alternative = next((v for v in pools.values(p.main_category, key, rng, kin=kin_token(task))
                            if normalize(v) not in current and normalize(v) not in title), None)
        if alternative is not None:
            fam.drift[key] = alternative
            forms.add(key_form(key))
    # Too few such facts: half of the family lists one more option on a multi-valued field a query rubric
    # reads ("Waterproof" -> "Waterproof, Lightweight"), where every rubric of the task still holds.
    rubrics = [r for r in task.rubrics if r.type == "attribute_match" and canonical(r.field) in DRIFT_FIELDS
               and r.info_source == "query"]
    rng.shuffle(rubrics)
    for r in rubrics:
        drift_key = detail_key(p.details, r.field)
        if len(fam.drift) >= DRIFTED_FACTS or drift_key is None or key_form(drift_key) in forms or \
                not isinstance(p.details[drift_key], str):
            continue
        current = {normalize(o) for o in split_options(p.details[drift_key])}
        for v in pools.values(p.main_category, drift_key, rng, kin=kin_token(task))[:20]:
            if normalize(v) in current or any(normalize(v) in c or c in normalize(v) for c in current):
                continue
            trial = copy.deepcopy(p)
            trial.details[drift_key] = f"{p.details[drift_key]}, {v}"
            if all(satisfies(x, trial, task) for x in task.rubrics if not reads_reviews(x)):
                fam.drift[drift_key] = trial.details[drift_key]
                forms.add(key_form(drift_key))
                break
    return fam


def _vary_rank(value: str, rng: random.Random, fam: Family) -> str:
    factor = fam.rank * math.exp(rng.gauss(0, RANK_SPREAD))
    return _NUMBER.sub(lambda m: f"{max(1, round(int(m.group(0).replace(',', '')) * factor)):,}", value)


def _vary_date(value: str, rng: random.Random, fam: Family) -> str:
    for fmt in _DATE_FORMATS:
        try:
            day = datetime.datetime.strptime(value.strip(), fmt)
        except ValueError:
            continue
        moved = day + datetime.timedelta(days=fam.days + rng.randint(-DATE_SPREAD, DATE_SPREAD))
        return f"{moved.strftime('%B')} {moved.day}, {moved.year}"
    return value


def _vary_weight(value: str, rng: random.Random, fam: Family) -> str:
    match = re.match(r"\s*(\d+(?:\.\d+)?)(.*)", value)
    if not match:
        return value
    number = float(match.group(1)) * fam.weight * math.exp(rng.gauss(0, WEIGHT_SPREAD))
    digits = len(match.group(1).split(".")[1]) if "." in match.group(1) else 0
    return f"{number:.{digits}f}{match.group(2)}" if digits else f"{max(1, round(number))}{match.group(2)}"


def _vary_model(value: str, rng: random.Random, fam: Family) -> str:
    chars = list(value)
    spots = [i for i, c in enumerate(chars) if c.isalnum()][-2:]
    for i in spots:
        pool = "0123456789" if chars[i].isdigit() else ("ABCDEFGHJKLMNPRSTUVWXYZ" if chars[i].isupper()
                                                          else "abcdefghjkmnprstuvwxyz")
        chars[i] = rng.choice(pool)
    return "".join(chars)


VARIED_FACTS: dict[str, Callable[[str, random.Random, Family], str]] = {
    "Best Sellers Rank": _vary_rank, "Date First Available": _vary_date, "Item Weight": _vary_weight,
    "Item model number": _vary_model, "Part Number": _vary_model,
}


def vary_listing(product: Product, rng: random.Random, protected: set[str], fam: Family,
                 drifted: Iterable[str] = ()) -> None:
    """The listing facts a listing has of its own (rank, date, weight, model number), and the family's
    drifted value on each key of `drifted` (and its near-duplicate keys)."""
    for key in drifted:
        for twin in twin_keys(product.details, key) or [key]:
            product.details[twin] = fam.drift[key]
    for key in list(product.details):
        vary = VARIED_FACTS.get(key)
        value = product.details[key]
        if vary is _vary_rank and isinstance(value, dict) and key_form(key) not in protected:
            factor = fam.rank * math.exp(rng.gauss(0, RANK_SPREAD))    # {"Category": 12345, ...}
            product.details[key] = {k: (max(1, round(v * factor)) if isinstance(v, int) and not isinstance(v, bool)
                                        else v) for k, v in value.items()}
            continue
        if vary is None or key_form(key) in protected or not isinstance(value, str) or not value:
            continue
        new = vary(value, rng, fam)
        if key in ("Item model number", "Part Number") and new != value:   # the literal model number only
            product.title = phrase_pattern(value).sub(lambda m: new, product.title or "")
        product.details[key] = new

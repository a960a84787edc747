"""Reviews with concrete, checkable opinions: each member of a family hears a partly different slice of its
type's opinion table, so review evidence can tell members apart; a product line's listings share theirs."""
from __future__ import annotations

import random

from ecab.catalog.synthetic.model import Family
from ecab.catalog.synthetic.seeding import DAY_LAST_REVIEW, UNIX_DAY0
from ecab.catalog.synthetic.tables.reviews import GENERIC_OPINIONS, REVIEW_FILLERS, REVIEW_PREFIXES, REVIEW_TITLES
from ecab.schema import Review

MAX_REVIEWS_PER_PRODUCT = 20  # the original review build caps at 20 (docs/original-harness.md §1.3)


def _sentence(opinion: str, rng: random.Random) -> str:
    """One review sentence that contains the opinion verbatim (case aside)."""
    prefix = rng.choice(REVIEW_PREFIXES)
    body = opinion if prefix else opinion[0].upper() + opinion[1:]
    return f"{prefix}{body}."


def _opinion_profile(family: Family, member: int, rng: random.Random) -> tuple[list[str], list[str]]:
    """A member's slice of the type's opinions: neighbours in a family overlap only partly; a product line's
    listings share the line's."""
    pos, neg = family.pos_order, family.neg_order
    if family.is_line:
        # One product line, one product: its listings' buyers say the same things. No listing has a remark
        # of its own: a review_driven task's opinions would then be accepted only on listings whose few
        # reviews missed it, and "the fewest reviews" would point at the target (docs/decisions.md#adversaries).
        return pos[:4], neg[:3]
    mine_pos = [pos[(2 * member + t) % len(pos)] for t in range(4)]
    mine_neg = [neg[(2 * member + t) % len(neg)] for t in range(3)]
    extra = rng.choice(pos)
    if extra not in mine_pos:
        mine_pos.append(extra)
    return mine_pos, mine_neg


def _review_rating(average: float, rng: random.Random) -> int:
    """Amazon's J shape: happy reviewers give 5 (or 4), unhappy ones 1-3; the mix tracks the average."""
    happy = min(0.98, max(0.02, (average - 1.7) / 3.1))  # 4.8 * happy + 1.7 * (1 - happy) = average
    if rng.random() < happy:
        return 5 if rng.random() < 0.8 else 4
    roll = rng.random()
    return 1 if roll < 0.5 else 2 if roll < 0.8 else 3


def _review_text(rating: int, pos: list[str], neg: list[str], rng: random.Random,
                 cover: list[str] | None = None) -> tuple[str, str]:
    """(text, the main opinion) for one review: 1-4 sentences, at least one concrete opinion. `cover`: the
    positive opinions not yet heard on this listing; a happy review mentions the first of them (and no
    generic remark), so a product line's listings all come to carry its opinions."""
    if rating >= 4 and cover:
        first = cover.pop(0)
        opinions = [first] + rng.sample([o for o in pos if o != first], rng.choice((0, 0, 1)))
        sentences = [_sentence(o, rng) for o in opinions]
        if rating == 4 and rng.random() < 0.3:
            sentences.append(f"Only complaint: {rng.choice(neg)}.")
        mood = "positive"
    elif rating >= 4:
        opinions = rng.sample(pos, rng.choice((1, 1, 2)))
        if cover is None and rng.random() < 0.15:
            opinions.append(rng.choice(GENERIC_OPINIONS["positive"]))
        sentences = [_sentence(o, rng) for o in opinions]
        if rating == 4 and rng.random() < 0.3:
            sentences.append(f"Only complaint: {rng.choice(neg)}.")
        mood = "positive"
    elif rating == 3:
        opinions = [rng.choice(pos)]
        sentences = [_sentence(opinions[0], rng), f"However, {rng.choice(neg)}."]
        mood = "mixed"
    else:
        opinions = rng.sample(neg, rng.choice((1, 1, 2)))
        if rng.random() < 0.15:
            opinions.append(rng.choice(GENERIC_OPINIONS["negative"]))
        sentences = [_sentence(o, rng) for o in opinions]
        mood = "negative"
    if len(sentences) < 4 and rng.random() < 0.5:
        sentences.append(rng.choice(REVIEW_FILLERS[mood]))
    return " ".join(sentences[:4]), opinions[0]


def listing_reviews(family: Family, member: int, index: int, product_id: str, average: float, rating_number: int,
                    rng: random.Random) -> list[Review]:
    roll = rng.random()
    if family.is_line:   # a line's own listings share its reviewed product, each heard in 10+ reviews
        count = MAX_REVIEWS_PER_PRODUCT if roll < 0.4 else rng.randint(10, MAX_REVIEWS_PER_PRODUCT - 1)
    elif roll < 0.05:
        count = 0
    elif roll < 0.15:
        count = rng.randint(1, 4)
    else:
        count = MAX_REVIEWS_PER_PRODUCT if rng.random() < 0.35 else rng.randint(5, MAX_REVIEWS_PER_PRODUCT - 1)
    count = min(count, rating_number)
    pos, neg = _opinion_profile(family, member, rng)
    cover = list(pos) if family.is_line else None
    noun = family.ptype.entity
    first_day = family.first_day + member * 11
    reviews = []
    for k in range(count):
        rating = _review_rating(average, rng)
        text, main_opinion = _review_text(rating, pos, neg, rng, cover)
        if rng.random() < 0.3:
            title = main_opinion[0].upper() + main_opinion[1:]
        else:
            title = rng.choice(REVIEW_TITLES[rating]).replace("{noun}", noun)
        day = rng.randint(min(first_day + 3, DAY_LAST_REVIEW), DAY_LAST_REVIEW)
        timestamp = (day - UNIX_DAY0) * 86_400_000 + rng.randrange(86_400) * 1000
        reviews.append(Review(review_id=index * MAX_REVIEWS_PER_PRODUCT + k + 1, product_id=product_id,
                              rating=float(rating), title=title, text=text,
                              helpful_vote=min(5000, int(rng.paretovariate(1.3)) - 1),
                              verified_purchase=rng.random() < 0.85, timestamp=timestamp))
    return reviews

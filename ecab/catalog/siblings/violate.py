"""Violating one rubric: a listing made to fail it while every rubric it must keep still holds (another
plausible value of the field, an excluded value present, another product line in the title, another store;
numbers and reviews are chosen later, numbers.py and make.py).

A violation is a CHOICE (which value, which product line, which store) and its APPLICATION to a listing. The
family plans one choice per hidden rubric (the one wrong value every listing failing that rubric carries,
cube.py) and applies it to each cube vertex; a query-rubric violator draws its own choice. Applying a choice
writes the new value under every near-duplicate key of the field and says it wherever the listing's text
stated the old one, and is accepted only when the violation is real (`checks.nominal_violation`: no twin key,
title, bullet or description still stating the required value) and every rubric to keep still holds.
"""
from __future__ import annotations

import copy
import random
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from ecab.catalog.siblings.checks import nominal_violation, satisfies, twin_keys
from ecab.catalog.siblings.listing_text import replace_option, replace_phrase, rewrite_stated, swap_words
from ecab.catalog.siblings.pools import ValuePools, canonical, kin_token
from ecab.core.rubric_checks import EntityMatcher, entity_phrases
from ecab.core.rubric_types import names_where, type_of
from ecab.core.text import keyword_tokens, normalize
from ecab.schema import Product, Rubric, Task


# The head noun of an entity phrase -> the product line a sibling becomes instead (a neighbouring product a
# shopper could confuse with it). Keys are singular keyword tokens (ecab.core.text.singular).
LINE_SWAPS: dict[str, tuple[str, ...]] = {
    "protector": ("Camera Lens Protector", "Privacy Filter"), "screen": ("Camera Lens", "Bezel"),
    "case": ("Holster", "Sleeve", "Pouch"), "cover": ("Holster", "Pouch"), "skin": ("Sleeve",),
    "watch": ("Band", "Strap"), "tracker": ("Band",), "smartwatch": ("Fitness Band",),
    "keycap": ("Switches", "Wrist Rest"), "keyboard": ("Keypad", "Mouse"), "mouse": ("Mouse Pad",),
    "adapter": ("Cable", "Cord"), "charger": ("Cable", "Holder"), "block": ("Cable",), "cube": ("Cable",),
    "dock": ("Cable", "Mount"), "stand": ("Holder", "Mount"), "pad": ("Stand", "Mount"),
    "cable": ("Adapter", "Splitter"), "cord": ("Adapter",), "coupler": ("Crimper", "Splitter"),
    "camera": ("Doorbell", "Floodlight"), "monitor": ("Mount",), "dvr": ("NVR",), "nvr": ("DVR",),
    "bracket": ("Clip", "Strap"), "mount": ("Clip", "Strap"), "holder": ("Clip",), "lockbox": ("Key Cabinet",),
    "box": ("Bag", "Tin"), "cabinet": ("Cart", "Shelf"), "sticker": ("Patches", "Pins"),
    "decal": ("Patches",), "brush": ("Spatula", "Sponge"), "sponge": ("Brush",), "router": ("Switch",),
    "ap": ("Switch", "Router"), "phone": ("Tablet",), "smartphone": ("Tablet",), "tablet": ("E-Reader",),
    "earbud": ("Ear Tips",), "headphone": ("Ear Pads",), "speaker": ("Soundbar",), "light": ("Bulb",),
    "lamp": ("Bulb",), "bag": ("Pouch",), "pen": ("Refills",), "notebook": ("Binder",),
}
GENERIC_LINES = ("Organizer", "Cleaning Kit", "Replacement Parts", "Storage Case")
ATTRIBUTE_CANDIDATES = 40
LATER = ("number", "review")     # violations chosen per listing later: numbers (numbers.py), reviews (make.py)
NUMERIC_TYPES = names_where(lambda t: t.violation in LATER)   # ("numeric_range", "budget_match", "review_opinion")


@dataclass(frozen=True)
class Choice:
    """How a listing fails one rubric: `value` is the new detail value / excluded value / store, or the
    (token, replacement) of a product-line swap; None for numbers and reviews (drawn per listing)."""

    rubric_id: str
    value: Any = None


def choices(product: Product, rubric: Rubric, task: Task, pools: ValuePools, rng: random.Random
            ) -> Iterator[Choice]:
    """Candidate ways to fail `rubric`, most plausible first (not yet checked: `apply` decides), by its type's
    `violation`."""
    violation = type_of(rubric).violation
    if violation in LATER:
        yield Choice(rubric.id)
    elif violation == "value":
        latin = str(rubric.expected_value).isascii()
        values = [v for v in pools.values(product.main_category, rubric.field, rng, kin=kin_token(task))
                  if v.isascii() or not latin]     # "防水" for "Waterproof": a translation, not another value
        for value in values[:ATTRIBUTE_CANDIDATES]:
            yield Choice(rubric.id, value)
    elif violation == "excluded":
        excluded = [v for v in rubric.expected_value if isinstance(v, str) and v.strip()]
        rng.shuffle(excluded)
        for value in excluded:
            yield Choice(rubric.id, value if not value.islower() else value.title())
    elif violation == "line":
        yield from _entity_choices(product, rubric, pools, rng)
    elif violation == "store":
        stores = [s for s in pools.stores if normalize(s) != normalize(rubric.expected_value)]
        rng.shuffle(stores)
        for store in stores[:10]:
            yield Choice(rubric.id, store)


def apply(product: Product, rubric: Rubric, choice: Choice, task: Task, keep: Sequence[Rubric]) -> bool:
    """Make `product` fail `rubric` by `choice` (in place) when the violation is real and every rubric in
    `keep` (mechanical) still holds; False (product untouched) otherwise. Numbers and reviews: True (later)."""
    violation = type_of(rubric).violation
    if violation in LATER:
        return True
    trial = copy.deepcopy(product)
    if violation == "value":
        ok = _apply_attribute(trial, rubric, str(choice.value))
    elif violation == "excluded":
        ok = _apply_negative(trial, rubric, str(choice.value))
    elif violation == "line":
        ok = _apply_entity(trial, rubric, *choice.value)
    elif violation == "store":
        trial.store = choice.value
        ok = True
    else:
        ok = False
    if not ok or satisfies(rubric, trial, task) or nominal_violation(rubric, trial, task) is not None:
        return False
    if not all(satisfies(r, trial, task) for r in keep):
        return False
    _copy_into(product, trial)
    return True


def violate_rubric(product: Product, rubric: Rubric, task: Task, pools: ValuePools, rng: random.Random,
                   keep: Sequence[Rubric]) -> Choice | None:
    """Make `product` fail `rubric` by the first candidate choice that works; the choice, or None."""
    for choice in choices(product, rubric, task, pools, rng):
        if apply(product, rubric, choice, task, keep):
            return choice
    return None


def _apply_attribute(product: Product, rubric: Rubric, value: str) -> bool:
    """The new value under every key naming the field (the option stating the old one swapped, on a
    multi-valued value), the brand's other places for Brand / Manufacturer, and the text said anew."""
    expected = str(rubric.expected_value)
    keys = twin_keys(product.details, rubric.field)
    for key in keys:
        old = product.details[key]
        product.details[key] = replace_option(old, expected, value) if isinstance(old, str) else value
    if canonical(rubric.field) in ("Brand", "Manufacturer"):
        _rebrand(product, expected, value)
    rewrite_stated(product, rubric.field, expected, value)
    return True


def _rebrand(product: Product, old: str, new: str) -> None:
    for key in ("Brand", "Manufacturer"):
        if isinstance(product.details.get(key), str) and normalize(product.details[key]) == normalize(old):
            product.details[key] = new
    if normalize(product.store) == normalize(old):
        product.store = new
    product.title = replace_phrase(product.title, old, new)


def _apply_negative(product: Product, rubric: Rubric, shown: str) -> bool:
    """One of the excluded values present (under every key naming the field)."""
    keys = twin_keys(product.details, rubric.field)
    if not keys:
        return False   # "[]" excludes nothing: only a missing field fails it, and the key set stays
    old = product.details[keys[0]]
    for key in keys:
        product.details[key] = shown
    if canonical(rubric.field) == "Brand" and isinstance(old, str):
        _rebrand(product, old, shown)
    return True


def _entity_choices(product: Product, rubric: Rubric, pools: ValuePools, rng: random.Random
                    ) -> Iterator[Choice]:
    """Another product line in the title: the entity's head noun swapped for a neighbouring one; an entity
    that is the brand's name becomes another brand."""
    phrases = entity_phrases(rubric)
    token_sets = [keyword_tokens(p) for p in phrases]
    common = [t for t in (token_sets[0] if token_sets else []) if all(t in ts for ts in token_sets)]
    candidates = list(reversed(common)) + [t for ts in token_sets for t in reversed(ts) if t not in common]
    own_brand = set(keyword_tokens(product.brand)) | set(keyword_tokens(product.store))
    for token in dict.fromkeys(candidates):
        if token in own_brand:
            swaps = [b for b in pools.values(product.main_category, "Brand", rng)
                     if token not in keyword_tokens(b)][:40]
        else:
            swaps = list(LINE_SWAPS.get(token, ())) or list(GENERIC_LINES)
        rng.shuffle(swaps)
        for swap in swaps:
            if token not in keyword_tokens(swap):
                yield Choice(rubric.id, (token, swap))


def _apply_entity(product: Product, rubric: Rubric, token: str, swap: str) -> bool:
    """Every occurrence of the line's word swapped (title, bullets, description): no entity phrase of the
    rubric names the title."""
    product.title = swap_words(product.title, token, swap)
    product.features = [swap_words(b, token, swap) for b in product.features or []]
    product.description = [swap_words(d, token, swap) for d in product.description or []]
    return EntityMatcher(rubric).match(product.title) is None


def _copy_into(product: Product, other: Product) -> None:
    for name in ("title", "store", "features", "description", "details", "price", "average_rating",
                 "rating_number"):
        setattr(product, name, getattr(other, name))

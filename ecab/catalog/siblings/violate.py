"""Violating one rubric: a copy of the target made to fail it while every rubric it must keep still holds
(another plausible value of the field, an excluded value present, another product line in the title,
another store; numbers and reviews are chosen later, numbers.py and make.py)."""
from __future__ import annotations

import copy
import random
from typing import Sequence

from ecab.catalog.siblings.checks import satisfies
from ecab.catalog.siblings.listing_text import (detail_key, replace_option, replace_phrase, rewrite_text,
                                                swap_words)
from ecab.catalog.siblings.pools import ValuePools, canonical, kin_token
from ecab.core.rubric_checks import EntityMatcher, entity_phrases
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


def violate_rubric(product: Product, rubric: Rubric, task: Task, pools: ValuePools, rng: random.Random,
                   keep: Sequence[Rubric]) -> bool:
    """Make `product` fail `rubric` while every rubric in `keep` (mechanical, to keep) still holds."""
    if rubric.type == "attribute_match":
        return violate_attribute(product, rubric, task, pools, rng, keep)
    if rubric.type == "negative_attribute":
        return violate_negative(product, rubric, task, rng, keep)
    if rubric.type == "entity_match":
        return violate_entity(product, rubric, task, pools, rng, keep)
    if rubric.type == "store_match":
        return violate_store(product, rubric, pools, rng)
    return rubric.type in ("numeric_range", "budget_match", "review_opinion")   # numbers / reviews later


def violate_attribute(product: Product, rubric: Rubric, task: Task, pools: ValuePools,
                      rng: random.Random, keep: Sequence[Rubric]) -> bool:
    """Another plausible value of the rubric's field (and the bullets say it), such that the rubric fails
    and every other rubric on the same field still holds."""
    expected = str(rubric.expected_value)
    key = detail_key(product.details, rubric.field)
    brand_like = canonical(rubric.field) in ("Brand", "Manufacturer")
    in_title = brand_like or canonical(rubric.field) == "Color"
    for value in pools.values(product.main_category, rubric.field, rng, kin=kin_token(task))[:40]:
        for title in ((True, False) if in_title else (False,)):
            trial = copy.deepcopy(product)
            if key is not None:
                old = trial.details[key]
                trial.details[key] = replace_option(old, expected, value) if isinstance(old, str) else value
            if title:   # the title names the brand or color too (unless that changes another requirement)
                trial.title = replace_phrase(trial.title, expected, value)
            if brand_like:
                _rebrand(trial, expected, value)
            if satisfies(rubric, trial, task):   # a bullet still states the value: the bullets say the new one
                rewrite_text(trial, expected, value, title=False)
            if satisfies(rubric, trial, task) or not all(satisfies(r, trial, task) for r in keep):
                continue
            if _distinctive(expected):   # the description (which no rubric reads) says the new value too
                trial.description = [replace_phrase(d, expected, value) for d in trial.description or []]
            _copy_into(product, trial)
            return True
    return False


def _distinctive(value: str) -> bool:
    """Long enough, and not a bare number, to be replaced in prose without hitting unrelated words."""
    text = normalize(value)
    return len(text.replace(" ", "")) >= 4 and not text.replace(" ", "").replace(".", "").isdigit()


def _rebrand(product: Product, old: str, new: str) -> None:
    for key in ("Brand", "Manufacturer"):
        if isinstance(product.details.get(key), str) and normalize(product.details[key]) == normalize(old):
            product.details[key] = new
    if normalize(product.store) == normalize(old):
        product.store = new


def violate_negative(product: Product, rubric: Rubric, task: Task, rng: random.Random,
                     keep: Sequence[Rubric]) -> bool:
    """One of the excluded values present."""
    excluded = [v for v in rubric.expected_value if isinstance(v, str) and v.strip()]
    key = detail_key(product.details, rubric.field)
    if not excluded or key is None:
        return False   # "[]" excludes nothing: only a missing field fails it, and the key set stays
    rng.shuffle(excluded)
    for value in excluded:
        shown = value if not value.islower() else value.title()
        trial = copy.deepcopy(product)
        trial.details[key] = shown
        if canonical(rubric.field) == "Brand":
            _rebrand(trial, str(product.details.get(key)), shown)
        if satisfies(rubric, trial, task) or not all(satisfies(r, trial, task) for r in keep):
            continue
        _copy_into(product, trial)
        return True
    return False


def violate_entity(product: Product, rubric: Rubric, task: Task, pools: ValuePools, rng: random.Random,
                   keep: Sequence[Rubric]) -> bool:
    """Another product line in the title: the entity's head noun swapped for a neighbouring one (every
    occurrence, also in bullets and description), so no entity phrase of the rubric names the title; an
    entity that is the brand's name becomes another brand."""
    phrases = entity_phrases(rubric)
    token_sets = [keyword_tokens(p) for p in phrases]
    common = [t for t in (token_sets[0] if token_sets else []) if all(t in ts for ts in token_sets)]
    candidates = list(reversed(common)) + [t for ts in token_sets for t in reversed(ts) if t not in common]
    matcher = EntityMatcher(rubric)
    for token in candidates:
        own_brand = set(keyword_tokens(product.brand)) | set(keyword_tokens(product.store))
        if token in own_brand:
            swaps = [b for b in pools.values(product.main_category, "Brand", rng)
                     if token not in keyword_tokens(b)][:40]
        else:
            swaps = list(LINE_SWAPS.get(token, ())) or list(GENERIC_LINES)
        rng.shuffle(swaps)
        for swap in swaps:
            if token in keyword_tokens(swap):
                continue
            trial = copy.deepcopy(product)
            trial.title = swap_words(trial.title, token, swap)
            trial.features = [swap_words(b, token, swap) for b in trial.features or []]
            trial.description = [swap_words(d, token, swap) for d in trial.description or []]
            if matcher.match(trial.title) is None and all(satisfies(r, trial, task) for r in keep):
                _copy_into(product, trial)
                return True
    return False


def violate_store(product: Product, rubric: Rubric, pools: ValuePools, rng: random.Random) -> bool:
    stores = [s for s in pools.stores if normalize(s) != normalize(rubric.expected_value)]
    if not stores:
        return False
    product.store = rng.choice(stores)
    return True


def _copy_into(product: Product, other: Product) -> None:
    for name in ("title", "store", "features", "description", "details", "price", "average_rating",
                 "rating_number"):
        setattr(product, name, getattr(other, name))

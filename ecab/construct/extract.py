"""Stage 2: extract verifiable features of a target product (docs/original-harness.md §5.4).

Detail fields (alias-aware), each kept with its intent's probability (Brand 0.2), a multi-option value
reduced to one option, unclean values dropped; rating and rating-count thresholds from buckets; a price
cap; for negative_constraint, 1-2 features marked negative. Every feature's expected_value is fixed
here, in code, and is checked against the target with the shared judge before it is kept, so a feature
the target itself would fail never reaches a rubric.

Deliberate difference from the original: the price cap is the smallest bucket strictly ABOVE the price
(the original took the smallest bucket >= price, so a $15.00 product failed its own "under $15").
"""
from __future__ import annotations

import math
import random
import re
from collections.abc import Mapping
from typing import Any

from ecab.catalog.knowledge import CatalogKnowledge
from ecab.construct.draft import Feature
from ecab.construct.intents import Intent, get_intent
from ecab.fields import (
    DETAIL_FIELDS,
    MULTI_OPTION_FIELDS,
    NEGATIVE_ATTRIBUTE_FIELDS,
    PRICE_BUCKETS,
    RATING_NUMBER_BUCKETS,
    lookup_detail,
)
from ecab.judge.rules import check_rubric
from ecab.schema import Product, Rubric

NUMERIC_ALLOWED_FIELDS = ("Number of Items", "Screen Size")
MAX_VALUE_CHARS = 120
MAX_OPTION_WORDS, MAX_OPTION_CHARS = 4, 40

_URL = re.compile(r"https?://|www\.", re.IGNORECASE)
_HTML_ENTITY = re.compile(r"&(?:[a-z]+|#\d+|#x[0-9a-f]+);", re.IGNORECASE)
_ASIN = re.compile(r"\bB0[A-Z0-9]{8}\b")
_VARIANT_SUFFIX = re.compile(r"-[a-z]\d{1,3}$", re.IGNORECASE)
_EMOJI = re.compile("[\U0001F000-\U0001FAFF\u2600-\u27BF\uFE0F]")
_NUMERIC = re.compile(r"^[\d\s.,+\-/x%]+$", re.IGNORECASE)
_OPTION_SPLIT = re.compile(r"\s*[,/|]\s*")
_STYLE_BUNDLE_WORDS = ("bundle", "pack", "piece set", "piece", "count")


class ExtractionError(ValueError):
    """The product yields too few usable features for its intent (the candidate is skipped)."""


# ---------------------------------------------------------------------------------------------------------
# Value cleaning
# ---------------------------------------------------------------------------------------------------------

def collapse_whitespace(text: str) -> str:
    return " ".join(text.split())


def as_text(value: Any) -> str | None:
    """A detail value usable as a feature: strings and plain numbers only (nested metadata is not)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return f"{value:g}"
    return value if isinstance(value, str) else None


def is_clean_value(value: str, bare_field: str) -> bool:
    """The cleaning rules of docs/original-harness.md §5.4: False when the value cannot be a crisp, checkable
    requirement."""
    if not value or len(value) > MAX_VALUE_CHARS:
        return False
    if "See more" in value or "See less" in value or _URL.search(value) or _HTML_ENTITY.search(value):
        return False
    if "\u203a" in value or _ASIN.search(value) or _VARIANT_SUFFIX.search(value) or _EMOJI.search(value):
        return False
    if _NUMERIC.match(value) and bare_field not in NUMERIC_ALLOWED_FIELDS:
        return False
    # Scraped metadata sometimes repeats itself ("Black Leather Case Black Leather Case").
    if len(value) > 50 and value[:30] in value[len(value) // 2:]:
        return False
    return True


def reduce_options(value: str, bare_field: str, rng: random.Random) -> str:
    """One option of a multi-valued field ("Nylon, Silicone" -> "Nylon"); other fields are kept whole."""
    value = collapse_whitespace(value)
    if bare_field not in MULTI_OPTION_FIELDS:
        return value
    parts = [p for p in _OPTION_SPLIT.split(value) if p]
    if len(parts) < 2:
        return value
    short = [p for p in parts if len(p.split()) <= MAX_OPTION_WORDS and len(p) <= MAX_OPTION_CHARS]
    return rng.choice(short) if short else value


def is_valid_negative(feature: Feature) -> bool:
    """A feature that can be turned into 'not these other values' (docs/original-harness.md §5.4 step 7)."""
    key = feature.detail_key
    if key is None or key not in NEGATIVE_ATTRIBUTE_FIELDS or feature.type != "attribute_match":
        return False
    value = str(feature.value)
    if key in ("Product Benefits", "Material Feature"):
        if len(value) > 50 or ("," not in value and len(value.split()) > 6):
            return False
    if key == "Style":
        lowered = value.lower()
        if any(c.isdigit() for c in value) or any(w in lowered for w in _STYLE_BUNDLE_WORDS):
            return False
    return True


# ---------------------------------------------------------------------------------------------------------
# Numeric thresholds
# ---------------------------------------------------------------------------------------------------------

def rating_threshold(rating: float) -> float:
    """The half-star floor of a rating, at least 1.0 (4.7 -> 4.5)."""
    return max(1.0, math.floor(rating * 2) / 2)


def rating_number_threshold(count: int) -> int | None:
    """The largest bucket <= count (None below the smallest bucket)."""
    eligible = [b for b in RATING_NUMBER_BUCKETS if b <= count]
    return eligible[-1] if eligible else None


def price_cap(price: float) -> int:
    """The smallest bucket strictly above the price, else the next multiple of 50 strictly above it.

    Strictly above, so the target (priced exactly at a bucket) still satisfies its own "under $cap".
    """
    for bucket in PRICE_BUCKETS:
        if bucket > price:
            return bucket
    return int((math.floor(price / 50) + 1) * 50)


def format_number(value: float) -> str:
    return f"{value:g}"


def normalize_numeric_expected(sentence: str, value: float) -> Any:
    """The original's keyword rule turning a numeric rubric sentence into an expected_value shape."""
    s = sentence.lower()
    if any(k in s for k in ("more than", "over", "above")):
        return {"value": value, "op": ">"}
    if any(k in s for k in ("at least", "or better", "minimum", "no less than")):
        return {"min": value}
    if any(k in s for k in ("less than", "below", "under")):
        return {"value": value, "op": "<"}
    if any(k in s for k in ("at most", "no more than")):
        return {"max": value}
    return value


# ---------------------------------------------------------------------------------------------------------
# Feature builders
# ---------------------------------------------------------------------------------------------------------

def detail_feature(key: str, value: str, product: Product) -> Feature:
    return Feature(field=f"details.{key}", value=value, type="attribute_match", expected_value=value,
                   rubric_text=f"The recommended product's {key} should be/contain '{value}'")


def numeric_feature(field: str, threshold: float, sentence: str) -> Feature:
    return Feature(field=field, value=threshold, type="numeric_range",
                   expected_value=normalize_numeric_expected(sentence, threshold), rubric_text=sentence)


def holds_for_target(feature: Feature, product: Product) -> bool:
    """The shared judge's verdict of this feature's rubric on its own target."""
    rubric = Rubric(id="probe", type=feature.type, field=feature.field, expected_value=feature.expected_value)
    return check_rubric(rubric, product).satisfied is True


def _ordered_detail_fields(present: list[str], prefer_fields: list[str] | None, rng: random.Random) -> list[str]:
    if not prefer_fields:
        rng.shuffle(present)
        return present
    preferred = [f for f in present if f in prefer_fields]
    rest = [f for f in present if f not in prefer_fields]
    rng.shuffle(preferred)
    rng.shuffle(rest)
    return preferred + rest


def detail_features(product: Product, intent: Intent, rng: random.Random,
                    prefer_fields: list[str] | None) -> list[Feature]:
    present = [f for f in DETAIL_FIELDS if as_text(lookup_detail(product.details, f)) is not None]
    features = []
    for key in _ordered_detail_fields(present, prefer_fields, rng):
        if rng.random() >= intent.keep_probability(key):
            continue
        value = reduce_options(as_text(lookup_detail(product.details, key)), key, rng)
        if not is_clean_value(value, key):
            continue
        feature = detail_feature(key, value, product)
        if holds_for_target(feature, product):
            features.append(feature)
    return features


def numeric_features(product: Product, intent: Intent, rng: random.Random) -> list[Feature]:
    features = []
    rating = product.average_rating
    if rating and rng.random() < intent.keep_probability("average_rating"):
        t = rating_threshold(float(rating))
        features.append(numeric_feature(
            "average_rating", t, f"The recommended product should have an average rating of at least {format_number(t)}"))
    count = product.rating_number
    if count is not None and count >= RATING_NUMBER_BUCKETS[0] and rng.random() < intent.keep_probability("rating_number"):
        t = rating_number_threshold(int(count))
        features.append(numeric_feature("rating_number", t, f"The recommended product should have at least {t} ratings"))
    price = product.price
    if price and rng.random() < intent.keep_probability("price"):
        cap = price_cap(float(price))
        features.append(numeric_feature("price", cap, f"The recommended product should be priced under ${cap}"))
    return [f for f in features if holds_for_target(f, product)]


def mark_negatives(features: list[Feature], rng: random.Random) -> None:
    valid = [f for f in features if is_valid_negative(f)]
    if not valid:
        return
    for feature in rng.sample(valid, min(rng.randint(1, 2), len(valid))):
        feature.negative = True


def select_diverse(features: list[Feature], max_features: int, rng: random.Random) -> list[Feature]:
    """All features when few enough; else one random feature per type, then random fill
    (docs/original-harness.md §5.4 step 8)."""
    if len(features) <= max_features:
        return list(features)
    by_type: dict[str, list[Feature]] = {}
    for f in features:
        by_type.setdefault(f.type, []).append(f)
    chosen = [rng.choice(group) for group in by_type.values()]
    rest = [f for f in features if f not in chosen]
    rng.shuffle(rest)
    return chosen + rest[: max_features - len(chosen)]


def extract_features(product: Product, intent: str | Intent, rng: random.Random, prefer_fields: list[str] | None = None,
                     min_features: int = 8, max_features: int = 20) -> list[Feature]:
    """The verifiable features of `product` for `intent` (docs/original-harness.md §5.4), each with its expected_value
    fixed.

    Raises ExtractionError when fewer than `min_features` remain.
    """
    intent = get_intent(intent)
    features = detail_features(product, intent, rng, prefer_fields) + numeric_features(product, intent, rng)
    seen, unique = set(), []
    for f in features:                      # dedupe on field (one product per call)
        if f.field not in seen:
            seen.add(f.field)
            unique.append(f)
    features = unique
    if intent.id == "negative_constraint":
        mark_negatives(features, rng)
    rng.shuffle(features)
    selected = select_diverse(features, max_features, rng)
    if intent.id == "negative_constraint" and not any(f.negative for f in selected):
        negatives = [f for f in features if f.negative]
        if negatives and selected:
            selected[-1] = negatives[0]
    if intent.id == "negative_constraint" and not any(f.negative for f in selected):
        raise ExtractionError("negative_constraint: no attribute can be turned into a negative constraint")
    if len(selected) < min_features:
        raise ExtractionError(f"only {len(selected)} usable features (need {min_features})")
    return selected


# ---------------------------------------------------------------------------------------------------------
# Negative constraints: the excluded values
# ---------------------------------------------------------------------------------------------------------

def build_value_pools(products) -> CatalogKnowledge:
    """What construction may know about a set of products (value pools, title phrases), from their rows
    alone: `CatalogKnowledge.from_products` (ecab/catalog/knowledge.py). A catalog's own is
    `ecab.catalog.base.catalog_knowledge(catalog)`; this is for product lists (tests, tools)."""
    return CatalogKnowledge.from_products(list(products))


def as_knowledge(pools: CatalogKnowledge | Mapping[tuple[str, str], list[tuple[str, int]]] | None) -> CatalogKnowledge:
    """A CatalogKnowledge from a knowledge object or a bare {(main_category, key): [(value, count)]} map."""
    if isinstance(pools, CatalogKnowledge):
        return pools
    return CatalogKnowledge(value_pools=dict(pools or {}))


def choose_excluded_values(feature: Feature, product: Product, pools, rng: random.Random,
                           max_values: int = 2, top_k: int = 6) -> list[str]:
    """1-2 concrete values of the feature's field that the target does NOT have, from the catalog's own
    values (`pools`: the catalog's knowledge, ecab/catalog/knowledge.py).

    The values of the products sharing the target's entity phrase come first, most frequent first: the
    alternatives of the same kind of thing ("Wallet" vs "Bumper" for a phone case, never a laptop's form
    factor); else the values of its main category. The same rule for every catalog source. An alternative
    is kept only if the judge's negative rule still passes on the target with it excluded, so the target
    satisfies its own negative rubric by construction. Empty when no safe alternative exists.
    """
    knowledge = as_knowledge(pools)
    key = feature.detail_key
    category = product.main_category or ""
    entity = knowledge.entity_of(product)
    pool = knowledge.values(category, key, entity.phrase) if entity is not None else []
    pool = pool or knowledge.values(category, key)
    safe: list[str] = []
    for value in pool:
        if not is_clean_value(value, key):
            continue
        probe = Rubric(id="probe", type="negative_attribute", field=feature.field, expected_value=[value])
        if check_rubric(probe, product).satisfied is True and value.lower() not in (s.lower() for s in safe):
            safe.append(value)
        if len(safe) >= top_k:
            break
    if not safe:
        return []
    n = min(len(safe), rng.randint(1, max_values))
    return sorted(rng.sample(safe, n), key=safe.index)


def assign_exclusions(features: list[Feature], product: Product, pools, rng: random.Random) -> None:
    """Fill expected_value (the excluded list) of every negative feature; a negative with no safe
    alternative is turned back into a plain attribute feature rather than excluding nothing."""
    for feature in features:
        if not feature.negative:
            continue
        excluded = choose_excluded_values(feature, product, pools, rng)
        if excluded:
            feature.expected_value = excluded
        else:
            feature.negative = False
            feature.expected_value = feature.value

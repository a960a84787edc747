"""Stage 4: split features over query / persona / clarification (docs/original-harness.md §5.5).

Persona gets max(2, floor(P x 0.25)) features, clarification the same, the query the rest (at least 4),
where P counts the features that may move. Review opinions and budget stay in the query, and so does any
feature whose value is spelled in the title (the title's entity phrase is in the query, so the value
could not be hidden) and any feature no other product fails alone (select.py: a hidden requirement must
matter). Negatives are always persona-eligible.

Deliberate difference from the original: an unselected "both" feature goes to the query once (the
original appended it twice).
"""
from __future__ import annotations

import math
import random
import re

from ecab.construct.draft import SOURCES, Feature
from ecab.construct.intents import Intent, get_intent
from ecab.core.rubric_types import names_where

PERSONA_RATIO = 0.25
CLARIFICATION_RATIO = 0.25
MIN_QUERY, MIN_PERSONA, MIN_CLARIFICATION = 4, 2, 2
ALWAYS_QUERY_TYPES = names_where(lambda t: t.always_query)   # budget_match, review_opinion, store_match

_TOKEN = re.compile(r"[a-z0-9]+")


class PartitionError(ValueError):
    """The features cannot fill every source to its minimum."""


def normalize_text(text: str) -> str:
    """Lower-case alphanumeric tokens joined by single spaces (the original's partition normalisation)."""
    return " ".join(_TOKEN.findall(str(text).lower()))


def bare_field(feature: Feature) -> str:
    return feature.detail_key or feature.field


def is_fixed_to_query(feature: Feature, title_norm: str) -> bool:
    if feature.type in ALWAYS_QUERY_TYPES or feature.witnessed is False:
        return True
    value = normalize_text(feature.value)
    return len(value) > 2 and value in title_norm


def partition_features(features: list[Feature], intent: str | Intent, rng: random.Random, *, title: str = "",
                       min_query: int = MIN_QUERY, min_persona: int = MIN_PERSONA,
                       min_clarification: int = MIN_CLARIFICATION) -> dict[str, list[Feature]]:
    """{"query": [...], "persona": [...], "clarification": [...]}: every feature in exactly one source,
    query features in their input order. Raises PartitionError when a minimum cannot be met."""
    intent = get_intent(intent)
    title_norm = normalize_text(title)
    fixed: list[Feature] = []
    pure_persona: list[Feature] = []
    both: list[Feature] = []
    pure_clar: list[Feature] = []
    query_only: list[Feature] = []
    for f in features:
        field = bare_field(f)
        if is_fixed_to_query(f, title_norm):
            fixed.append(f)
        elif field in intent.persona_fields or f.negative:
            (both if field in intent.clarification_fields else pure_persona).append(f)
        elif field in intent.clarification_fields:
            pure_clar.append(f)
        else:
            query_only.append(f)

    movable = len(features) - len(fixed)
    if movable + len(fixed) < min_query + min_persona + min_clarification:
        raise PartitionError(f"{len(features)} features cannot fill query/persona/clarification minimums "
                             f"{min_query}/{min_persona}/{min_clarification}")
    n_persona = min(max(min_persona, math.floor(movable * PERSONA_RATIO)), len(pure_persona) + len(both))
    shuffled_persona, shuffled_both = pure_persona[:], both[:]
    rng.shuffle(shuffled_persona)
    rng.shuffle(shuffled_both)
    persona = (shuffled_persona + shuffled_both)[:n_persona]

    clar_pool = pure_clar[:] + [f for f in both if f not in persona]
    rng.shuffle(clar_pool)
    n_clar = min(max(min_clarification, math.floor(movable * CLARIFICATION_RATIO)), len(clar_pool))
    clarification = clar_pool[:n_clar]

    hidden = {id(f) for f in persona + clarification}
    query = [f for f in features if id(f) not in hidden]   # each feature once, input order
    parts = {"query": query, "persona": persona, "clarification": clarification}
    short = [f"{s} {len(parts[s])} < {m}" for s, m in
             (("query", min_query), ("persona", min_persona), ("clarification", min_clarification))
             if len(parts[s]) < m]
    if short:
        raise PartitionError("partition below minimum: " + ", ".join(short))
    return {s: parts[s] for s in SOURCES}

"""The clarification verbalizer (docs/original-harness.md §5.9): one slot per clarification rubric, with its
trigger keywords, the answer that states the exact value, and the hidden info."""
from __future__ import annotations

import random

from ecab.construct.draft import Draft
from ecab.construct.verbalize.phrases import dimension, explicit_mod, negative_mod, numeric_mod
from ecab.construct.verbalize.tables import (ATTRIBUTE_RESPONSES, GENERIC_EXTRA_KEYWORDS, MOD_RESPONSES,
                                             NUMERIC_RESPONSES, SLOT_KEYWORDS)
from ecab.construct.verbalize.text import bare_field, join_words
from ecab.core.rubric_types import type_of
from ecab.schema import ClarificationScript, ClarificationSlot, Rubric

DEFAULT_RESPONSE = ("Hmm, I'm not sure about that. Could you ask me about something more specific? "
                    "Like what features or specs I'm looking for?")
EMPTY_SCRIPT_RESPONSE = "I think I've covered everything in my initial request."
MAX_CLARIFICATION_TURNS = 10
MIN_KEYWORDS, MAX_KEYWORDS = 7, 10


# Frequent question words. A keyword containing one of them scores on almost any question under the
# lenient rule (e.g. "leather" contains "the"), so such keywords are never generated from values.
COMMON_QUESTION_WORDS = ("the", "you", "your", "what", "which", "how", "for", "and", "need", "want", "like",
                         "any", "prefer", "should", "would", "have", "with", "are", "can", "does", "there",
                         "that", "this", "about")


def keyword_is_safe(keyword: str) -> bool:
    """Long enough not to hide inside ordinary words, and free of common question words."""
    return len(keyword) >= 4 and not any(w in keyword for w in COMMON_QUESTION_WORDS)


def _value_keywords(rubric: Rubric) -> list[str]:
    if type_of(rubric).value_kind == "range":
        return []
    values = rubric.expected_value if isinstance(rubric.expected_value, list) else [rubric.expected_value]
    out = []
    for v in values:
        kw = " ".join(str(v).lower().split())
        if len(kw) <= 30 and keyword_is_safe(kw):
            out.append(kw)
    return out


def slot_keywords(rubric: Rubric) -> list[str]:
    """7-10 lowercased trigger keywords: the dimension name first, then (when short and specific) the
    value itself, so a question naming the value also reaches the slot, then generic synonyms."""
    bare = bare_field(rubric.field)
    dim = dimension(rubric.field).lower()
    keywords: list[str] = [dim]
    for kw in _value_keywords(rubric) + SLOT_KEYWORDS.get(bare, []):
        if kw not in keywords and len(keywords) < MAX_KEYWORDS:
            keywords.append(kw)
    padding = [w for w in bare.lower().split() if len(w) >= 4] + [f"{dim} {x}" for x in GENERIC_EXTRA_KEYWORDS]
    for kw in padding:
        if len(keywords) >= MIN_KEYWORDS:
            break
        if kw not in keywords:
            keywords.append(kw)
    return keywords


def slot_response(rubric: Rubric, rng: random.Random) -> str:
    """1-2 natural sentences containing the exact value (numeric: the explicit threshold phrase)."""
    dim = dimension(rubric.field)
    kind = type_of(rubric).value_kind
    if kind == "range":
        templates = NUMERIC_RESPONSES.get(rubric.field, ["It should be a product {m}."])
        return rng.choice(templates).format(m=numeric_mod(rubric.field, rubric.expected_value))
    if kind == "excluded":
        neg = join_words([str(v) for v in rubric.expected_value], "or")
        return rng.choice([f"I don't want anything {negative_mod(rubric.field, list(rubric.expected_value), keep_case=True)}.",
                           f"For the {dim}, please avoid {neg}."])
    value = rubric.expected_value
    if bare_field(rubric.field) != "Number of Items":
        answer = rng.choice(MOD_RESPONSES).format(mod=explicit_mod(rubric.field, value, rng, keep_case=True))
        # The answer must carry the exact value (not a plural of it): fall back to the plain frames.
        if str(value) in answer:
            return answer
    return rng.choice(ATTRIBUTE_RESPONSES).format(dim=dim, v=value)


def hidden_info(rubric: Rubric) -> str:
    """The slot's hidden info: its rubric type's template ({dim}, {v}; {mod} the threshold phrase of a range,
    {values} the excluded values)."""
    record = type_of(rubric)
    fill = {"dim": dimension(rubric.field), "v": rubric.expected_value}
    if record.value_kind == "range":
        fill["mod"] = numeric_mod(rubric.field, rubric.expected_value)
    elif record.value_kind == "excluded":
        fill["values"] = join_words([str(v) for v in rubric.expected_value])
    return record.hidden_info.format(**fill)


def build_clarification(draft: Draft, rng: random.Random) -> ClarificationScript:
    slots = []
    for i, r in enumerate((r for r in draft.rubrics if r.info_source == "clarification"), start=1):
        slots.append(ClarificationSlot(slot_id=f"cl_{i}", linked_rubric_ids=[r.id], hidden_info=hidden_info(r),
                                       trigger_keywords=slot_keywords(r), user_response=slot_response(r, rng),
                                       revealed=False))
    return ClarificationScript(clarification_slots=slots,
                               default_response=DEFAULT_RESPONSE if slots else EMPTY_SCRIPT_RESPONSE,
                               max_clarification_turns=MAX_CLARIFICATION_TURNS)

"""Why a candidate is not a task: the reason codes construction records (docs/architecture.md §4).

Three kinds: skips (the stages could not build a draft; not counted as generated candidates, like the
original's silent drops), validation rejections (validate.validate_draft; grouped like the paper's Table 12:
broken / ungradable, leakage, semantically invalid, ...) and runtime errors (the original's statuses for a
verbalizer or validator that raised). The benchmark folder's rejections.md lists them with these texts.
"""
from __future__ import annotations

from typing import Any, Iterable

from ecab.construct.draft import Draft

# Skips: the candidate is dropped before any text exists.
SKIP_REASONS = {
    "too_few_features": "fewer usable features than min_features",
    "no_negative": "negative_constraint: no attribute with a safe excluded alternative",
    "partition_failed": "features cannot fill query/persona/clarification minimums",
    "no_voucher": "no valid voucher for the price",
    "too_few_reviews": "review_driven: fewer than 10 reviews or 2 usable opinions",
    "too_few_load_bearing": "fewer load-bearing features than min_features, or one the intent needs is not "
                            "load-bearing (construct.load_bearing_only)",
    "stage_error": "the candidate product could not be read from the catalog",
}
# The catalog, not the attempt's draw, decides these: another attempt would only repeat the work.
FINAL_SKIPS = frozenset({"too_few_load_bearing"})
RUNTIME_REASONS = {
    "generation_runtime_error": "the verbalizer raised an error (recorded in error_message)",
    "validation_runtime_error": "validation raised an error (recorded in error_message)",
}


# Validation rejections, grouped like the paper's Table 12 (broken / ungradable, leakage, semantically invalid)
REJECTION_GROUPS: dict[str, list[str]] = {
    "broken output": ["rubric_changed", "entity_invalid", "query_missing_surface"],
    "ungradable hidden source": ["implicit_selection_invalid", "persona_mismatch", "clarification_incomplete",
                                 "unreachable_slot"],
    "leakage": ["leak_hidden_value", "leak_implicit_value", "persona_noise"],
    "semantically invalid": ["target_fails_rubric"],
    "not unique": ["not_unique"],
    "hidden intent does not matter": ["hidden_not_load_bearing", "query_not_load_bearing", "query_too_narrow"],
}
REJECTION_REASONS: dict[str, str] = {
    "rubric_changed": "verbalization changed a locked rubric (id, type, field, expected value or source)",
    "entity_invalid": "no single entity_match rubric grounded in the target's title",
    "query_missing_surface": "a query rubric is not stated in the query",
    "implicit_selection_invalid": "an implicit rubric is not an implicit-eligible query attribute",
    "persona_mismatch": "product_requirements do not match the persona rubrics",
    "clarification_incomplete": "a clarification rubric lacks a slot, keywords or an answer with its value",
    "unreachable_slot": "a natural question about a slot's dimension does not reveal that slot",
    "leak_hidden_value": "a persona or clarification value appears in the query",
    "leak_implicit_value": "an implicit rubric's literal value appears in the query",
    "persona_noise": "persona noise outside the safe-field whitelist",
    "target_fails_rubric": "the target product does not satisfy every rubric",
    "not_unique": "more catalog products than construct.max_matches satisfy every rubric",
    "hidden_not_load_bearing": "a persona or clarification rubric is not load-bearing (no other product "
                               "satisfies every other rubric and fails it; construct.min_hidden_load_bearing)",
    "query_not_load_bearing": "too few query rubrics are load-bearing (construct.min_query_load_bearing)",
    "query_too_narrow": "fewer products than construct.min_query_matches satisfy the query's rubrics",
}
REASON_GROUP: dict[str, str] = {code: group for group, codes in REJECTION_GROUPS.items() for code in codes}
assert set(REASON_GROUP) == set(REJECTION_REASONS)


def rejection_rows(drafts: Iterable[Draft]) -> list[dict[str, Any]]:
    """Counts per rejection reason, Table-12 style: [{group, reason, label, count}] in REJECTION_REASONS
    order, only reasons that occurred."""
    counts: dict[str, int] = {}
    for d in drafts:
        if d.rejection:
            counts[d.rejection] = counts.get(d.rejection, 0) + 1
    return [{"group": REASON_GROUP[code], "reason": code, "label": REJECTION_REASONS[code], "count": counts[code]}
            for code in REJECTION_REASONS if code in counts]

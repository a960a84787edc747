"""Template verbalizer: a locked rubric plan into text (docs/original-harness.md §5.6 QueryBuilder, §5.8, §5.9).

It writes only text: the user query, each query rubric's `description` / `query_surface`, the persona
(`product_requirements` from the persona rubrics plus whitelisted noise) and the clarification script.
It never touches a rubric's id, type, field, expected_value or info_source; validation compares a
fingerprint of those before and after (`validate.rubric_lock`).

Every query rubric is realised as one *surface* phrase that is placed verbatim in the query, so the
query/rubric alignment holds by construction:

- explicit attribute: a per-field post-modifier of the entity ("made of Nylon", "in Black", "with a
  USB-C connector", "compatible with iPhone 14", "sold as a single-item listing");
- implicit attribute: a per-field wrapper around a one-hop clue from clues.py ("that connects via the
  short-range wireless tech with a blue runic logo"), never the literal value;
- numeric: explicit thresholds ("rated at least 4.5 stars", "with at least 200 ratings", "priced under $30");
- negative: the excluded values spelled out ("not in Blue or Red");
- budget: the voucher with every number, and the budget;
- review opinion: the opinion text itself, framed as review evidence to find.

Sentences come from several opening styles per intent (intents.py) and varied frames, all chosen with
the caller's rng, so the output is deterministic for a given rng state. Filler text (problems,
contexts) is never allowed to contain a hidden or implicit value.

The package, one module per verbalizer plus what they share:
  query.py          the user query and the query rubrics' surfaces
  persona.py        the persona (product_requirements and noise)
  clarification.py  the clarification script (slots, keywords, answers)
  phrases.py        per-field phrases the query and clarification share (explicit, implicit, negative, numeric,
                    voucher); text.py words, numbers, articles and value rendering; tables.py the phrase tables
This module runs the three on a draft (`verbalize`) and gives every rubric its text fields and key order.
"""
from __future__ import annotations

import random

from ecab.construct.draft import Draft
from ecab.construct.verbalize.clarification import build_clarification
from ecab.construct.verbalize.persona import build_persona
from ecab.construct.verbalize.query import build_query
from ecab.core.rubric_types import QUERY_RUBRIC_KEYS as _QUERY_KEYS, type_of
from ecab.schema import Rubric

# ---------------------------------------------------------------------------------------------------------
# Rubric record shapes (the released file's key orders, docs/original-harness.md §5.6 "Final rubric shapes")
# ---------------------------------------------------------------------------------------------------------

# A query rubric's keys; a type with extra keys (entity_match) has them before info_source (RubricType.query_keys).
QUERY_RUBRIC_KEYS = list(_QUERY_KEYS)
ENTITY_RUBRIC_KEYS = type_of("entity_match").query_keys()
HIDDEN_RUBRIC_KEYS = ["id", "description", "type", "field", "expected_value", "info_source", "implicit_eligible",
                      "must_hide_value", "query_hint"]
# Scaffold keys the original's compiler drops from query rubrics once they are verbalized.
SCAFFOLD_KEYS = ("implicit_eligible", "must_hide_value", "query_hint")


# ---------------------------------------------------------------------------------------------------------
# Rubric text fields and key order
# ---------------------------------------------------------------------------------------------------------

def _finish_query_rubric(rubric: Rubric, surface: str) -> None:
    rubric.description = surface
    for key in SCAFFOLD_KEYS:
        rubric.extras.pop(key, None)
    rubric.extras["query_surface"] = surface
    rubric.key_order = type_of(rubric).query_keys()


def _finish_hidden_rubric(rubric: Rubric) -> None:
    rubric.extras.setdefault("implicit_eligible", False)
    rubric.extras.setdefault("must_hide_value", None)
    rubric.extras.setdefault("query_hint", "")
    rubric.key_order = list(HIDDEN_RUBRIC_KEYS)


def verbalize(draft: Draft, rng: random.Random) -> None:
    """Fill the draft's text: user_query, query rubric surfaces, persona and clarification script."""
    surfaces = build_query(draft, rng)
    for r in draft.rubrics:
        if r.info_source == "query":
            _finish_query_rubric(r, surfaces[r.id])
        else:
            _finish_hidden_rubric(r)
    draft.persona = build_persona(draft, rng)
    draft.clarification_script = build_clarification(draft, rng)

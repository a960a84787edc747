"""The query verbalizer: each query rubric as one surface phrase placed verbatim in the user query, and the
query around them (an opening in the intent's style, frames, negatives, review evidence, the budget). Which
phrase states a rubric is its type's `query_phrase` (ecab/core/rubric_types.py)."""
from __future__ import annotations

import random

from ecab.construct import clues
from ecab.construct.draft import Draft
from ecab.construct.intents import get_intent
from ecab.construct.verbalize.phrases import (budget_surface, explicit_mod, implicit_mods, negative_mod,
                                              number_of_items_mod, numeric_mod)
from ecab.construct.verbalize.tables import (BUDGET_FRAMES, CONTEXTS, DEFAULT_SCENARIOS, MOD_FRAMES, NEGATIVE_FRAMES,
                                             PROBLEMS, REVIEW_FRAMES, SCENARIOS)
from ecab.construct.verbalize.text import bare_field, capitalize, join_words, mentions, with_article
from ecab.core.rubric_types import stated_values, type_of
from ecab.core.text import normalize
from ecab.schema import Rubric


# ---------------------------------------------------------------------------------------------------------
# Surfaces per query rubric
# ---------------------------------------------------------------------------------------------------------

def attribute_surface(rubric: Rubric, implicit: bool, rng: random.Random,
                      avoid: tuple[str, ...] = (), product_context: str = "") -> tuple[str, bool]:
    """(surface, used_clue). Falls back to the explicit phrase when no clue fits (validation then flags
    the implicit rubric's value in the query). `product_context` (entity phrase and title) keeps clues
    written for one kind of product off the others."""
    bare = bare_field(rubric.field)
    value = str(rubric.expected_value)
    if implicit:
        clue = clues.clue_for(rubric.field, value, rng, avoid=avoid, context=product_context)
        if clue is not None:
            return rng.choice(implicit_mods(bare, clue)).format(c=clue), True
    if bare == "Number of Items":
        return number_of_items_mod(value, rng), False
    return explicit_mod(rubric.field, value, rng), False


# Opinions quoted from reviews often drop their subject ("does not bleed through thin paper"); the frame
# adds "it" in front so the sentence reads, while the opinion itself stays verbatim (it is the surface).
SUBJECTLESS_STARTS = frozenset({
    "does", "doesn't", "did", "didn't", "is", "isn't", "was", "wasn't", "has", "had", "holds", "held", "charges",
    "charged", "survived", "stays", "stayed", "keeps", "kept", "feels", "felt", "works", "worked", "looks",
    "arrived", "lasts", "lasted", "fits", "runs", "gets", "takes", "makes", "sounds", "dries", "writes",
    "sticks", "cleans", "heats", "connects", "pairs", "never", "still", "barely", "really", "comes", "came"})


def opinion_clause(opinion: str) -> str:
    first = opinion.split()[0].lower() if opinion.split() else ""
    return f"it {opinion}" if first in SUBJECTLESS_STARTS else opinion


def review_surface(rubric: Rubric) -> str:
    """The opinion itself, lower-cased at the start when it is an ordinary capitalised word."""
    text = rubric.opinion.strip().rstrip(".")
    if len(text) > 1 and text[0].isupper() and text[1].islower():
        text = text[0].lower() + text[1:]
    return text


def safe_choice(rng: random.Random, options: list[str], forbidden: list[str]) -> str:
    """A random option that mentions no forbidden value (the first option as a last resort is never
    needed in practice: options are generic)."""
    allowed = [o for o in options if not any(mentions(o, f) for f in forbidden)]
    return rng.choice(allowed or options)


# ---------------------------------------------------------------------------------------------------------
# Query assembly
# ---------------------------------------------------------------------------------------------------------

def _opening(style: str, entity: str, mods: list[str], forbidden: list[str], category: str, intent: str,
             rng: random.Random) -> str:
    a_entity = with_article(entity)
    tail = (" " + join_words(mods)) if mods else ""
    if intent == "use_case_scenario" and style in ("problem-first", "context-first"):
        scene = safe_choice(rng, SCENARIOS.get(category, DEFAULT_SCENARIOS), forbidden)
        return f"{scene}, so I need {a_entity}{tail}."
    if style == "problem-first":
        problem = safe_choice(rng, PROBLEMS, forbidden)
        return f"{problem}, so I'm looking for {a_entity}{tail}."
    if style == "context-first":
        context = safe_choice(rng, CONTEXTS + SCENARIOS.get(category, []), forbidden)
        return f"{context}, and I need {a_entity}{tail}."
    if style == "question-first":
        return rng.choice([f"Can you find me {a_entity}{tail}?", f"Any suggestions for {a_entity}{tail}?",
                           f"Could you help me pick {a_entity}{tail}?"])
    return rng.choice([f"I need {a_entity}{tail}.", f"Find me {a_entity}{tail}.", f"I'm looking for {a_entity}{tail}.",
                       f"Please recommend {a_entity}{tail}."])


def _chunks(items: list[str], rng: random.Random, max_size: int = 3) -> list[list[str]]:
    out, i = [], 0
    while i < len(items):
        size = rng.randint(1, max_size)
        out.append(items[i:i + size])
        i += size
    return out


def forbidden_values(draft: Draft) -> list[str]:
    """Values the query must not mention: hidden (persona / clarification) and implicit values (an implicit
    rubric's value, never the values a query negative excludes: the query names them)."""
    out: list[str] = []
    implicit = set(draft.implicit_rubric_ids)
    for r in draft.rubrics:
        if r.info_source != "query" or (r.id in implicit and type_of(r).value_kind != "excluded"):
            out.extend(stated_values(r))
    return [v for v in out if len(normalize(v)) > 2]


def build_query(draft: Draft, rng: random.Random) -> dict[str, str]:
    """Write draft.user_query; return {rubric_id: surface} for every query rubric."""
    intent = get_intent(draft.intent)
    implicit = set(draft.implicit_rubric_ids)
    query_rubrics = [r for r in draft.rubrics if r.info_source == "query"]
    entity_rubric = next((r for r in query_rubrics if type_of(r).query_phrase == "entity"), None)
    entity = draft.entity.query_surface if draft.entity else (entity_rubric.expected_value if entity_rubric else "item")

    surfaces: dict[str, str] = {}
    mods: list[str] = []
    negatives: list[tuple[str, str]] = []   # (sentence, surface)
    opinions: list[str] = []
    budget_sentence = ""
    used_clue: dict[str, bool] = {}
    forbidden = forbidden_values(draft)
    for r in query_rubrics:
        phrase = type_of(r).query_phrase
        if phrase == "attribute":
            s, used_clue[r.id] = attribute_surface(r, r.id in implicit, rng, avoid=tuple(forbidden),
                                                   product_context=f"{entity} {draft.product.title}")
            mods.append(s)
        elif phrase == "numeric":
            s = numeric_mod(r.field, r.expected_value)
            mods.append(s)
        elif phrase == "negative":
            sentence, surface = rng.choice(NEGATIVE_FRAMES)
            neg = negative_mod(r.field, list(r.expected_value))
            s = surface.format(neg=neg)
            negatives.append((sentence.format(neg=neg), s))
        elif phrase == "opinion":
            s = review_surface(r)
            opinions.append(s)
        elif phrase == "budget":
            s = budget_surface(draft.voucher, r.expected_value, rng)
            budget_sentence = rng.choice(BUDGET_FRAMES).format(b=s)
        elif phrase == "entity":
            s = str(r.expected_value)
        else:  # "plain" (store_match): state it plainly
            s = f"sold by {r.expected_value}"
            mods.append(s)
        surfaces[r.id] = s
    draft.meta["implicit_without_clue"] = [rid for rid, ok in used_clue.items() if rid in implicit and not ok]

    rng.shuffle(mods)
    style = rng.choice(list(intent.opening_styles))
    sentences: list[str] = []
    if style == "review-targeted" and opinions:
        lead = f"with reviews saying {join_words([opinion_clause(o) for o in opinions])}"
        sentences.append(_opening("direct-request", entity, [lead], forbidden, draft.product.main_category,
                                  draft.intent, rng))
        opinions = []
        head, rest = [], mods
    else:
        n_head = min(len(mods), rng.randint(1, 2))
        head, rest = mods[:n_head], mods[n_head:]
        sentences.append(_opening(style, entity, head, forbidden, draft.product.main_category, draft.intent, rng))

    frames = rng.sample(MOD_FRAMES, len(MOD_FRAMES))   # no frame twice in a row
    body: list[str] = [capitalize(frames[i % len(frames)].format(mods=join_words(chunk)))
                       for i, chunk in enumerate(_chunks(rest, rng))]
    body += [sentence for sentence, _ in negatives]
    if opinions:
        body.append(rng.choice(REVIEW_FRAMES).format(ops=join_words([opinion_clause(o) for o in opinions])))
    rng.shuffle(body)
    sentences += body
    if budget_sentence:
        sentences.append(budget_sentence)
    draft.user_query = " ".join(capitalize(s) for s in sentences)
    return surfaces

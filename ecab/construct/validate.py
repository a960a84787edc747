"""Mechanical validation of a verbalized draft (docs/original-harness.md §5.11; the paper's §4 "Validation by design",
App. D-E).

`validate_draft` runs every check, records each problem as a readable string in
`draft.validation_issues`, sets `draft.rejection` to the reason code of the first failing check (in the
order below) and `draft.match_count` to the number of catalog products that satisfy every rubric.

Checks, in order (reason codes in reasons.REJECTION_REASONS):
1. rubric lock: id, type, field, expected_value and info_source unchanged by verbalization;
2. entity: exactly one entity_match rubric whose title_span is in the target's title;
3. query alignment: every query rubric's surface occurs in the query, and every explicit attribute
   value is stated in it;
4. implicit selection: implicit rubrics are query attribute rubrics of implicit-eligible fields;
5. leaks: no persona / clarification value and no implicit value occurs in the query;
6. persona: noise only on the SAFE_NOISE_FIELDS whitelist; `product_requirements` keyed exactly by the
   persona rubrics, with their values;
7. clarification: one slot per clarification rubric, 7-10 keywords, an answer containing the value;
8. reachability: natural questions about each slot's dimension (a table independent of the keywords),
   asked through the ask_user rule on a fresh user, reveal that slot;
9. the target satisfies every rubric under the shared judge rules (`ecab.judge.rules.check_rubric`);
10. uniqueness: at most `max_matches` catalog products satisfy every rubric;
11. hidden intent matters (issue 15, with a `Gate`): the validity audit (ecab/construct/load_bearing.py, review
    opinions included) over the target's main category finds every persona and clarification rubric
    load-bearing (at least `Gate.hidden_load_bearing` of them), at least `Gate.query_load_bearing` of the
    query rubrics load-bearing, and at least `Gate.query_matches` products satisfying the query's rubrics.

Text matching uses the judge's normalization (`ecab.core.text`) on token boundaries, with a simple
plural allowed, for values longer than 2 characters (docs/original-harness.md §5.11). Token boundaries avoid false
leaks of short values inside words ("All" in "wall"); the original used a bare substring.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Iterable

from ecab.catalog.base import CatalogReader
from ecab.construct.category_products import FULL_SCAN_LIMIT, category_products, products_by_category
from ecab.construct.draft import Draft
from ecab.construct.load_bearing import audit_products, construction_memo
from ecab.construct.verbalize.clarification import MAX_KEYWORDS, MIN_KEYWORDS
from ecab.construct.verbalize.persona import expected_requirement_keys, product_requirements
from ecab.construct.verbalize.phrases import dimension, numeric_values
from ecab.construct.verbalize.text import bare_field, mentions
from ecab.core.rubric_checks import EntityMatcher
from ecab.core.rubric_types import ALL_RUBRIC_TYPES, reads_reviews, stated_values
from ecab.core.text import contains_phrase, normalize, options
from ecab.env.user import ScriptedUser
from ecab.fields import IMPLICIT_ELIGIBLE_FIELDS, SAFE_NOISE_FIELDS
from ecab.judge.rules import check_rubric
from ecab.schema import ClarificationScript, Product, Rubric

# ---------------------------------------------------------------------------------------------------------
# The rubric lock (PAPER App. D.1)
# ---------------------------------------------------------------------------------------------------------

LOCK_FIELDS = ("id", "type", "field", "expected_value", "info_source")


def rubric_lock(rubrics: Iterable[Rubric]) -> str:
    """sha256 over (id, type, field, expected_value, info_source) of every rubric, in order."""
    rows = [[getattr(r, k) for k in LOCK_FIELDS] for r in rubrics]
    return hashlib.sha256(json.dumps(rows, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


# ---------------------------------------------------------------------------------------------------------
# Natural questions per dimension (reachability), written independently of the slot keywords
# ---------------------------------------------------------------------------------------------------------

NATURAL_QUESTIONS: dict[str, list[str]] = {
    "Special Feature": ["Any special features you need?", "What features matter most to you?"],
    "Material Feature": ["Any material feature you care about?", "What material qualities do you want?"],
    "Product Benefits": ["What benefits are you hoping for?", "What results do you want from it?"],
    "Finish Type": ["What finish do you want?", "What kind of surface finish do you prefer?"],
    "Recommended Uses For Product": ["What will you use it for?", "What's the intended use?"],
    "Connectivity Technology": ["How should it connect?", "What connectivity do you need?"],
    "Connector Type": ["Which connector type do you need?", "What plug or connector should it have?"],
    "Pattern": ["Do you want a particular pattern or print?", "What pattern do you like?"],
    "Mounting Type": ["How do you want to mount it?", "What mounting type do you need?"],
    "Screen Size": ["What screen size do you want?", "How big should the display be?"],
    "Graphics Coprocessor": ["Which graphics card do you need?", "Any GPU requirement?"],
    "Computer Memory Type": ["What memory type do you need?", "Which kind of memory should it use?"],
    "Hardware Platform": ["Which hardware platform is it for?", "What platform or system is it for?"],
    "Video Capture Resolution": ["What video resolution do you need?", "What recording quality do you want?"],
    "Ink Color": ["What ink color do you want?", "Which ink colour should it write in?"],
    "Shape": ["What shape do you want?", "Any preferred shape?"],
    "Closure": ["What kind of closure do you want?", "How should it fasten?"],
    "Point Type": ["What point type do you prefer?", "How fine should the pen tip be?"],
    "average_rating": ["What minimum star rating do you need?", "How well rated should it be?"],
    "rating_number": ["How many ratings should it have?", "How many reviews should it have at least?"],
    "price": ["Any price limit?", "What's your budget?", "How much do you want to spend?"],
    "Item Form": ["What item form do you prefer?", "Do you want a cream, gel or liquid formula?"],
    "Scent": ["What scent do you like?", "Do you want any particular fragrance?"],
    "Brand": ["Which brand do you prefer?", "Any brands you want to avoid?"],
    "Color": ["What color do you prefer?", "Any colors you want to avoid?"],
    "Material": ["What material should it be made of?", "Any materials you want to avoid?"],
    "Style": ["What style do you like?", "Any styles you want to avoid?"],
    "Form Factor": ["What form factor do you want?"],
    "Operating System": ["Which operating system do you use?"],
    "Wireless Type": ["Which wireless type do you need?"],
    "Power Source": ["How should it be powered?", "What power source do you want?"],
    "Shell Type": ["What shell type do you want for the case?"],
}


def natural_questions(field: str) -> list[str]:
    bare = bare_field(field)
    if bare in NATURAL_QUESTIONS:
        return NATURAL_QUESTIONS[bare]
    dim = dimension(field)
    return [f"What {dim} do you need?", f"Any preference on {dim}?"]


# ---------------------------------------------------------------------------------------------------------
# Text helpers
# ---------------------------------------------------------------------------------------------------------

def value_in_text(text: str, value: Any) -> str | None:
    """The part of `value` (whole value or one of its options, > 2 characters) found in `text`, else None."""
    v = normalize(value)
    if len(v) <= 2:
        return None
    if mentions(text, v):
        return str(value)
    for option in options(v):
        if len(option) > 2 and mentions(text, option):
            return option
    return None


def _hidden_values(rubric: Rubric) -> list[str]:
    """String values a hidden rubric must keep out of the query (numeric thresholds are not checked,
    like the original: a number is too common to mean a leak)."""
    return stated_values(rubric)


def _surface(rubric: Rubric) -> str:
    return str(rubric.extras.get("query_surface") or "")


# ---------------------------------------------------------------------------------------------------------
# The checks: each returns (reason code, issue) pairs
# ---------------------------------------------------------------------------------------------------------

Issue = tuple[str, str]


def check_lock(draft: Draft) -> list[Issue]:
    locked = draft.meta.get("rubric_lock")
    if locked is None or locked == rubric_lock(draft.rubrics):
        return []
    return [("rubric_changed", "rubric lock: the rubric fingerprint changed during verbalization")]


def check_entity(draft: Draft) -> list[Issue]:
    entities = [r for r in draft.rubrics if r.type == "entity_match"]
    if len(entities) != 1:
        return [("entity_invalid", f"entity: expected exactly one entity_match rubric, found {len(entities)}")]
    span = str(entities[0].extras.get("title_span") or "")
    if not span or not contains_phrase(normalize(draft.product.title), normalize(span)):
        return [("entity_invalid", f"entity: title_span {span!r} ({entities[0].id}) is not in the target's title")]
    return []


def check_query_alignment(draft: Draft) -> list[Issue]:
    issues = []
    query = normalize(draft.user_query)
    implicit = set(draft.implicit_rubric_ids)
    if not query:
        return [("query_missing_surface", "query: the user query is empty")]
    for r in draft.rubrics:
        if r.info_source != "query":
            continue
        surface = _surface(r)
        if not surface or not contains_phrase(query, normalize(surface)):
            issues.append(("query_missing_surface",
                           f"query: surface {surface!r} of {r.id} ({r.type}, {r.field}) is not in the query"))
            continue
        explicit_attribute = (r.type == "attribute_match" and r.id not in implicit
                              and bare_field(r.field) != "Number of Items")
        if explicit_attribute and not mentions(draft.user_query, str(r.expected_value)):
            issues.append(("query_missing_surface",
                           f"query: explicit value {r.expected_value!r} ({r.id}) is not stated in the query"))
        if r.type == "numeric_range":
            missing = [n for n in numeric_values(r.expected_value) if not contains_phrase(query, n)]
            if missing:
                issues.append(("query_missing_surface",
                               f"query: threshold {missing[0]} of {r.id} ({r.field}) is not in the query"))
    return issues


def check_implicit_selection(draft: Draft) -> list[Issue]:
    by_id = {r.id: r for r in draft.rubrics}
    issues = []
    for rid in draft.implicit_rubric_ids:
        r = by_id.get(rid)
        if r is None or r.info_source != "query" or r.type != "attribute_match" \
                or bare_field(r.field) not in IMPLICIT_ELIGIBLE_FIELDS:
            issues.append(("implicit_selection_invalid",
                           f"implicit: {rid} is not an implicit-eligible query attribute rubric"))
    return issues


def check_leaks(draft: Draft) -> list[Issue]:
    issues = []
    implicit = set(draft.implicit_rubric_ids)
    for r in draft.rubrics:
        if r.info_source in ("persona", "clarification"):
            for value in _hidden_values(r):
                hit = value_in_text(draft.user_query, value)
                if hit:
                    issues.append(("leak_hidden_value",
                                   f"leak: {r.info_source} value {hit!r} ({r.id}) appears in the query"))
        elif r.id in implicit:
            hit = value_in_text(draft.user_query, r.expected_value)
            if hit:
                issues.append(("leak_implicit_value",
                               f"leak: implicit value {hit!r} ({r.id}, {r.field}) appears in the query"))
    return issues


def check_persona(draft: Draft) -> list[Issue]:
    persona = draft.persona
    if persona is None:
        return [("persona_mismatch", "persona: missing")]
    issues = []
    for key in persona.extras:
        issues.append(("persona_noise", f"persona: top-level key {key!r} is not allowed"))
    for section, allowed in SAFE_NOISE_FIELDS.items():
        data = getattr(persona, section) or {}
        for key in data:
            if key not in allowed:
                issues.append(("persona_noise", f"persona: noise field {section}.{key} is not on the whitelist"))
    wanted = product_requirements(draft.rubrics)
    got = persona.product_requirements or {}
    if set(got) != expected_requirement_keys(draft.rubrics):
        issues.append(("persona_mismatch", f"persona: product_requirements keys {sorted(got)} != persona rubric "
                                           f"keys {sorted(expected_requirement_keys(draft.rubrics))}"))
    else:
        for key, value in wanted.items():
            if got.get(key) != value:
                issues.append(("persona_mismatch",
                               f"persona: product_requirements[{key!r}] = {got.get(key)!r}, expected {value!r}"))
    return issues


def answer_states_value(rubric: Rubric, answer: str) -> bool:
    """The slot answer contains the exact value (numeric: every threshold; negative: every excluded value)."""
    if rubric.type == "numeric_range":
        text = normalize(answer)
        return all(contains_phrase(text, n) for n in numeric_values(rubric.expected_value))
    values = rubric.expected_value if isinstance(rubric.expected_value, list) else [rubric.expected_value]
    return all(contains_phrase(normalize(answer), normalize(v)) for v in values)


def check_clarification(draft: Draft) -> list[Issue]:
    script = draft.clarification_script
    rubrics = [r for r in draft.rubrics if r.info_source == "clarification"]
    if script is None:
        return [("clarification_incomplete", "clarification: script missing")] if rubrics else []
    issues = []
    for r in rubrics:
        slots = [s for s in script.clarification_slots if r.id in s.linked_rubric_ids]
        if len(slots) != 1:
            issues.append(("clarification_incomplete",
                           f"clarification: {r.id} ({r.field}) is linked to {len(slots)} slots, expected 1"))
            continue
        slot = slots[0]
        n = len(slot.trigger_keywords)
        if not MIN_KEYWORDS <= n <= MAX_KEYWORDS:
            issues.append(("clarification_incomplete",
                           f"clarification: slot {slot.slot_id} has {n} trigger keywords, expected "
                           f"{MIN_KEYWORDS}-{MAX_KEYWORDS}"))
        if not slot.user_response or not answer_states_value(r, slot.user_response):
            issues.append(("clarification_incomplete",
                           f"clarification: slot {slot.slot_id} answer does not state the value of {r.id}"))
    return issues


def reachability_issues(script: ClarificationScript, rubrics: list[Rubric], matcher: str = "original") -> list[str]:
    """Each slot must be revealed by every natural question about its dimension, asked first on a fresh
    user (all slots still hidden: the hardest case, since every other slot competes)."""
    by_id = {r.id: r for r in rubrics}
    problems = []
    probe = ScriptedUser(script, matcher=matcher)
    for slot in script.clarification_slots:
        linked = [by_id[rid] for rid in slot.linked_rubric_ids if rid in by_id]
        if not linked:
            continue
        for question in natural_questions(linked[0].field):
            got = probe.reveals(question)
            if got != slot.slot_id:
                problems.append(f"unreachable: slot {slot.slot_id} ({linked[0].id}, {bare_field(linked[0].field)}) "
                                f"is not revealed by {question!r} (reveals {got or 'nothing'})")
    return problems


def check_reachability(draft: Draft) -> list[Issue]:
    if draft.clarification_script is None:
        return []
    return [("unreachable_slot", p) for p in reachability_issues(draft.clarification_script, draft.rubrics)]


def _reviews_for(draft: Draft, catalog: CatalogReader | None, product_id: str) -> list:
    if product_id == draft.product.product_id and draft.reviews:
        return draft.reviews
    return catalog.get_reviews(product_id) if catalog is not None else []


def check_target(draft: Draft, catalog: CatalogReader | None, review_checker) -> list[Issue]:
    issues = []
    reviews = None
    for r in draft.rubrics:
        if reads_reviews(r) and reviews is None:
            reviews = _reviews_for(draft, catalog, draft.product.product_id)
        verdict = check_rubric(r, draft.product, voucher=draft.voucher, reviews=reviews,
                               review_checker=review_checker)
        if verdict.satisfied is not True:
            issues.append(("target_fails_rubric",
                           f"target: {r.id} ({r.type}, {r.field}) is not satisfied: {verdict.reasoning}"))
    return issues


# ---------------------------------------------------------------------------------------------------------
# Uniqueness
# ---------------------------------------------------------------------------------------------------------

def candidate_products(draft: Draft, catalog: CatalogReader, candidate_ids: list[str] | None = None) -> list[Product]:
    """The products worth a full rubric check: the given ids, else the target's main_category
    (ecab/construct/category_products.py: the whole category, or its entity-phrase title matches on large
    catalogs)."""
    small = catalog.count() <= FULL_SCAN_LIMIT
    if candidate_ids is not None and small:
        wanted = set(candidate_ids)
        return [p for group in products_by_category(catalog).values() for p in group if p.product_id in wanted]
    if candidate_ids is not None:
        out: list[Product] = []
        for i in range(0, len(candidate_ids), 500):
            out.extend(catalog.get_products(candidate_ids[i:i + 500]))
        return out
    entity = draft.entity.canonical_entity if draft.entity else None
    return list(category_products(catalog, draft.product, entity))


# Cheap, selective rubric types first; review embeddings last and only for survivors (each type's match_cost).
_CHECK_ORDER = {t.name: t.match_cost for t in ALL_RUBRIC_TYPES}


def count_matches(draft: Draft, catalog: CatalogReader, *, review_checker=None,
                  candidate_ids: list[str] | None = None) -> tuple[int, list[str]]:
    """(number of catalog products satisfying every rubric, their ids)."""
    ordered = sorted(draft.rubrics, key=lambda r: _CHECK_ORDER.get(r.type, 8))
    # Entity rubrics reject most of a category, so they run first as a bare title test (no verdict text).
    entities = [EntityMatcher(r) for r in ordered if r.type == "entity_match"]
    cheap = [r for r in ordered if not reads_reviews(r) and r.type != "entity_match"]
    costly = [r for r in ordered if reads_reviews(r)]
    hits = []
    for product in candidate_products(draft, catalog, candidate_ids):
        if not all(m.match(product.title or "") is not None for m in entities):
            continue
        if not all(check_rubric(r, product, voucher=draft.voucher).satisfied is True for r in cheap):
            continue
        if costly:
            reviews = _reviews_for(draft, catalog, product.product_id)
            if not all(check_rubric(r, product, voucher=draft.voucher, reviews=reviews,
                                    review_checker=review_checker).satisfied is True for r in costly):
                continue
        hits.append(product.product_id)
    return len(hits), hits


# ---------------------------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------------------------

_CHEAP_CHECKS = (check_lock, check_entity, check_query_alignment, check_implicit_selection, check_leaks,
                 check_persona, check_clarification, check_reachability)


@dataclass(frozen=True)
class Gate:
    """How much the hidden intent must matter (construct.min_* keys; docs/architecture.md §4)."""

    hidden_load_bearing: float = 1.0    # share of persona + clarification rubrics that must be load-bearing
    query_load_bearing: float = 0.8     # share of query rubrics that must be load-bearing
    query_matches: int = 5              # products (the target included) satisfying the query's rubrics


def check_validity(draft: Draft, catalog: CatalogReader, gate: Gate, review_checker=None) -> list[Issue]:
    """The validity audit of the draft's rubrics (review opinions included) against the gate."""
    entity = draft.entity.canonical_entity if draft.entity else None
    products = category_products(catalog, draft.product, entity)
    audit = audit_products(draft.rubrics, draft.product, products, voucher=draft.voucher,
                           reviews_of=lambda pid: _reviews_for(draft, catalog, pid), review_checker=review_checker,
                           include_reviews=True, memo=construction_memo(catalog), task_id=draft.sample_id,
                           intent=draft.intent)
    draft.meta["audit"] = audit
    issues: list[Issue] = []
    hidden = [r for r in audit.rubrics if r.info_source in ("persona", "clarification")]
    idle = [r for r in hidden if not r.load_bearing]
    if hidden and (len(hidden) - len(idle)) / len(hidden) < gate.hidden_load_bearing:
        issues.append(("hidden_not_load_bearing",
                       "validity: " + ", ".join(f"{r.id} ({r.info_source}, {r.field})" for r in idle)
                       + " not load-bearing: no other product satisfies every other rubric and fails it"))
    query = [r for r in audit.rubrics if r.info_source == "query"]
    bearing = sum(1 for r in query if r.load_bearing)
    if query and bearing / len(query) < gate.query_load_bearing:
        idle_q = [f"{r.id} ({r.type}, {r.field})" for r in query if not r.load_bearing]
        issues.append(("query_not_load_bearing",
                       f"validity: {bearing} of {len(query)} query rubrics load-bearing (need "
                       f"{gate.query_load_bearing:.0%}); not: {', '.join(idle_q)}"))
    if audit.match_query < gate.query_matches:
        issues.append(("query_too_narrow", f"validity: {audit.match_query} products satisfy the query's rubrics "
                                           f"(need {gate.query_matches})"))
    return issues


def validate_draft(draft: Draft, catalog: CatalogReader | None, *, max_matches: int, review_checker=None,
                   candidate_ids: list[str] | None = None, gate: Gate | None = None) -> None:
    """Run every check; set draft.validation_issues, draft.rejection (first failing reason) and
    draft.match_count. The uniqueness scan runs only when everything else passed (it is the costly one),
    and the validity audit (with a `gate`) only on a unique draft."""
    found: list[Issue] = []
    for check in _CHEAP_CHECKS:
        found.extend(check(draft))
    found.extend(check_target(draft, catalog, review_checker))
    draft.match_count = None
    if not found and catalog is not None and gate is not None and candidate_ids is None:
        # The validity audit counts the products satisfying every rubric over the same products with the
        # same judge (count_matches), so it stands in for the uniqueness scan.
        issues = check_validity(draft, catalog, gate, review_checker)
        count = draft.match_count = draft.meta["audit"].match_all
        if count > max_matches:
            found.append(("not_unique", f"uniqueness: {count} catalog products satisfy every rubric "
                                        f"(max {max_matches})"))
        else:
            found.extend(issues)
    elif not found and catalog is not None:
        count, ids = count_matches(draft, catalog, review_checker=review_checker, candidate_ids=candidate_ids)
        draft.match_count = count
        draft.meta["matching_ids"] = ids[:20]
        if count > max_matches:
            found.append(("not_unique", f"uniqueness: {count} catalog products satisfy every rubric "
                                        f"(max {max_matches})"))
    draft.validation_issues = [text for _, text in found]
    draft.rejection = found[0][0] if found else None

"""Mechanical validation (ecab/construct/validate.py): every check passes on honest drafts and catches a
planted defect; uniqueness is counted on a real LanceDB catalog with near-duplicate families."""
from __future__ import annotations

import collections
import copy
import random

import pytest
from draft_support import synthetic_products, verbalized_drafts

from ecab.catalog.synthetic import product_type_of
from ecab.construct import validate as v
from ecab.construct.draft import Draft, EntitySpec
from ecab.construct.reasons import REASON_GROUP, REJECTION_GROUPS, REJECTION_REASONS, rejection_rows
from ecab.construct.verbalize.clarification import build_clarification
from ecab.construct.verbalize.persona import build_persona
from ecab.construct.verbalize.text import with_article
from ecab.fields import INTENTS, persona_key
from ecab.judge.rules import check_rubric
from ecab.schema import ClarificationSlot, Rubric


@pytest.fixture(scope="module")
def drafts():
    # Every 17th product: spread over the catalog's product lines rather than the first few.
    return verbalized_drafts(synthetic_products(1000, seed=5), per_intent=6, stride=17, rng_prefix="v-")


@pytest.fixture(scope="module")
def valid(drafts):
    """Drafts that pass every check but uniqueness (no catalog): the baseline for planted defects."""
    good = []
    for d in drafts:
        v.validate_draft(d, None, max_matches=1)
        if d.rejection is None:
            good.append(d)
    return good


def fresh(d: Draft) -> Draft:
    return copy.deepcopy(d)


def test_most_honest_drafts_pass_and_every_rejection_is_a_known_reason(drafts, valid):
    assert len(valid) >= 0.8 * len(drafts), collections.Counter(d.rejection for d in drafts)
    assert {d.intent for d in valid} == set(INTENTS)
    for d in drafts:
        assert d.rejection is None or d.rejection in REJECTION_REASONS
        assert bool(d.validation_issues) == (d.rejection is not None)
        assert d.match_count is None   # no catalog given


def test_reason_table_groups_every_code_and_counts(drafts):
    assert set(REASON_GROUP) == set(REJECTION_REASONS)
    assert len(REJECTION_GROUPS) == 6
    fake = [Draft(sample_id=str(i), intent="product_search", product=drafts[0].product) for i in range(3)]
    fake[0].rejection = fake[1].rejection = "leak_hidden_value"
    table = rejection_rows(fake)
    assert table == [{"group": "leakage", "reason": "leak_hidden_value",
                      "label": REJECTION_REASONS["leak_hidden_value"], "count": 2}]


def _first(valid, predicate):
    return fresh(next(d for d in valid if predicate(d)))


def _spelled_persona_value(r: Rubric) -> bool:
    # The leak check skips values of two characters or fewer ("AC"): they occur inside ordinary words.
    return r.info_source == "persona" and r.type == "attribute_match" and len(str(r.expected_value)) > 3


def test_planted_hidden_value_in_the_query_is_a_leak(valid):
    d = _first(valid, lambda d: any(_spelled_persona_value(r) for r in d.rubrics))
    hidden = next(r for r in d.rubrics if _spelled_persona_value(r))
    d.user_query += f" Oh, and {hidden.expected_value}."
    v.validate_draft(d, None, max_matches=1)
    assert d.rejection == "leak_hidden_value"
    assert any(hidden.id in issue and "persona value" in issue for issue in d.validation_issues)


def test_planted_implicit_value_in_the_query_is_a_leak(valid):
    def long_implicit(d):   # values of <= 2 characters are not checked (docs/original-harness.md §5.11)
        return [r for r in d.rubrics if r.id in d.implicit_rubric_ids and len(str(r.expected_value)) > 2]

    d = _first(valid, long_implicit)
    r = long_implicit(d)[0]
    d.user_query += f" It must be {str(r.expected_value).upper()}s."    # case and plural do not hide it
    v.validate_draft(d, None, max_matches=1)
    assert d.rejection == "leak_implicit_value", (d.validation_issues, r, d.user_query)


def test_short_value_inside_a_word_is_not_a_leak():
    assert v.value_in_text("wall mount for the hallway", "All") is None
    assert v.value_in_text("Something for ALL skin", "All") == "All"
    assert v.value_in_text("made of nylon", "Nylon, Silicone") == "nylon"


def test_missing_surface_and_unstated_value_are_caught(valid):
    d = _first(valid, lambda d: True)
    r = next(r for r in d.rubrics if r.info_source == "query" and r.type != "entity_match")
    d.user_query = d.user_query.replace(r.extras["query_surface"], "something nice")
    v.validate_draft(d, None, max_matches=1)
    assert d.rejection == "query_missing_surface"


def test_rubric_change_after_the_lock_is_caught(valid):
    d = _first(valid, lambda d: True)
    d.rubrics[0].expected_value = {"min": 1.0} if d.rubrics[0].type == "numeric_range" else "Tampered"
    v.validate_draft(d, None, max_matches=1)
    assert d.rejection == "rubric_changed"


def test_target_failing_a_rubric_is_caught(valid):
    d = _first(valid, lambda d: any(r.type == "attribute_match" and r.info_source == "persona" for r in d.rubrics))
    r = next(r for r in d.rubrics if r.type == "attribute_match" and r.info_source == "persona")
    r.expected_value = "Qzxv Not A Value"
    d.persona.product_requirements[persona_key(r.field)] = r.expected_value
    d.meta["rubric_lock"] = v.rubric_lock(d.rubrics)
    v.validate_draft(d, None, max_matches=1)
    assert d.rejection == "target_fails_rubric", d.validation_issues


def test_persona_noise_and_requirement_mismatch_are_caught(valid):
    d = _first(valid, lambda d: True)
    d.persona.lifestyle["favorite_brand"] = "Anker"
    v.validate_draft(d, None, max_matches=1)
    assert d.rejection == "persona_noise"
    d = _first(valid, lambda d: True)
    d.persona.product_requirements["color_preference"] = "Black"
    d.persona.product_requirements.pop(next(iter(d.persona.product_requirements)))
    v.validate_draft(d, None, max_matches=1)
    assert d.rejection == "persona_mismatch"


def test_clarification_slot_missing_or_without_value_is_caught(valid):
    d = _first(valid, lambda d: d.clarification_script.clarification_slots)
    d.clarification_script.clarification_slots.pop()
    v.validate_draft(d, None, max_matches=1)
    assert d.rejection == "clarification_incomplete"
    d = _first(valid, lambda d: d.clarification_script.clarification_slots)
    d.clarification_script.clarification_slots[0].user_response = "Whatever you think is best."
    v.validate_draft(d, None, max_matches=1)
    assert d.rejection == "clarification_incomplete"


def test_generated_slots_are_reachable_and_a_broken_slot_is_not(valid):
    with_slots = [d for d in valid if d.clarification_script.clarification_slots]
    assert with_slots
    for d in with_slots:
        assert v.reachability_issues(d.clarification_script, d.rubrics) == []
    d = fresh(with_slots[0])
    slot: ClarificationSlot = d.clarification_script.clarification_slots[-1]
    # Keywords that no natural question about the dimension would ever contain.
    slot.trigger_keywords = ["zqxj", "vvkw", "pfft", "qoph", "wxyz", "jjkk", "zzyx"]
    problems = v.reachability_issues(d.clarification_script, d.rubrics)
    assert problems and all(slot.slot_id in p for p in problems)
    v.validate_draft(d, None, max_matches=1)
    assert d.rejection == "unreachable_slot"


def test_rubric_lock_fingerprints_exactly_the_locked_fields():
    a = [Rubric(id="r1", type="attribute_match", field="details.Color", expected_value="Black")]
    b = [Rubric(id="r1", type="attribute_match", field="details.Color", expected_value="Black",
                description="different text", extras={"query_surface": "in Black"})]
    assert v.rubric_lock(a) == v.rubric_lock(b)
    b[0].info_source = "persona"
    assert v.rubric_lock(a) != v.rubric_lock(b)


# ---------------------------------------------------------------------------------------------------------
# Uniqueness on a real LanceDB catalog
# ---------------------------------------------------------------------------------------------------------

def _family_draft(catalog) -> tuple[Draft, list]:
    """A draft whose rubrics only a near-duplicate family shares: entity phrase + brand + store-level
    details that do not vary inside the family."""
    products = [p for batch in catalog.iter_products(256) for p in batch]
    families = collections.defaultdict(list)
    for p in products:
        t = product_type_of(p)
        if t is not None and p.brand:
            families[(t.key, p.brand, p.store)].append(p)
    (key, members) = max(families.items(), key=lambda kv: len(kv[1]))
    assert len(members) >= 2
    target = members[0]
    entity = product_type_of(target).entity
    rubrics = [Rubric(id="r1", type="attribute_match", field="details.Brand", expected_value=target.brand),
               Rubric(id="r2", type="entity_match", field="title", expected_value=entity,
                      extras={"query_surface": entity, "canonical_entity": entity, "title_span": entity})]
    d = Draft(sample_id="family", intent="product_search", product=target, rubrics=rubrics,
              entity=EntitySpec(entity, entity, entity))
    return d, products


def test_uniqueness_counts_a_near_duplicate_family(small_catalog):
    d, products = _family_draft(small_catalog)
    count, ids = v.count_matches(d, small_catalog)
    brute = [p.product_id for p in products
             if all(check_rubric(r, p).satisfied is True for r in d.rubrics)]
    assert count == len(brute) > 1
    assert sorted(ids) == sorted(brute) and d.product.product_id in ids
    # Explicit candidate ids give the same answer.
    assert v.count_matches(d, small_catalog, candidate_ids=[p.product_id for p in products])[0] == count
    # validate_draft records the count and rejects above max_matches, accepts at or under it.
    d.user_query = f"I need {with_article(d.entity.query_surface)} from {d.product.brand}."
    d.rubrics[0].extras["query_surface"] = f"from {d.product.brand}"
    d.rubrics[1].extras["query_surface"] = d.entity.query_surface
    d.persona = build_persona(d, random.Random(0))
    d.clarification_script = build_clarification(d, random.Random(0))
    v.validate_draft(d, small_catalog, max_matches=1)
    assert d.match_count == count and d.rejection == "not_unique"
    assert any(f"{count} catalog products" in i for i in d.validation_issues)
    v.validate_draft(d, small_catalog, max_matches=count)
    assert d.rejection is None and d.match_count == count


def test_a_distinguishing_detail_narrows_the_family(small_catalog):
    d, products = _family_draft(small_catalog)
    before, _ = v.count_matches(d, small_catalog)
    t = product_type_of(d.product)
    key = t.variants[0]
    value = d.product.details.get(key)
    assert isinstance(value, str) and value
    d.rubrics.insert(0, Rubric(id="r0", type="attribute_match", field=f"details.{key}", expected_value=value))
    after, ids = v.count_matches(d, small_catalog)
    assert 1 <= after < before and d.product.product_id in ids


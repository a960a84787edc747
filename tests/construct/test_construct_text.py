"""The template verbalizer and the clue table (ecab/construct/verbalize/, clues.py).

Drafts come from the real stages (extract -> partition -> rubrics) over synthetic products, so the
properties are checked on the rubric plans construction actually produces, for all 8 intents.
"""
from __future__ import annotations

import collections
import json
import random
import re

import pytest
from draft_support import synthetic_products, verbalized_drafts

from ecab.catalog.synthetic import PRODUCT_TYPES
from ecab.construct import clues
from ecab.construct.draft import Draft
from ecab.construct.intents import INTENT_TABLE
from ecab.construct.validate import natural_questions, rubric_lock
from ecab.construct.verbalize.clarification import (EMPTY_SCRIPT_RESPONSE, build_clarification, keyword_is_safe,
                                                     slot_keywords)
from ecab.construct.verbalize.persona import expected_requirement_keys
from ecab.construct.verbalize.phrases import budget_surface, dimension, explicit_mod, voucher_phrase
from ecab.construct.verbalize.tables import SLOT_KEYWORDS
from ecab.construct.verbalize.text import mentions, with_article
from ecab.env.user import ScriptedUser
from ecab.fields import IMPLICIT_ELIGIBLE_FIELDS, INTENTS, SAFE_NOISE_FIELDS, persona_key
from ecab.core.text import contains_phrase, normalize, singular
from ecab.schema import ClarificationScript, ClarificationSlot, Rubric, StackedCoupon, Voucher, VoucherTier

PER_INTENT = 12


@pytest.fixture(scope="module")
def synthetic():
    return synthetic_products(300, seed=3)


def make_drafts(synthetic, per_intent: int = PER_INTENT):
    """Verbalized drafts: up to `per_intent` per intent, stages run with per-draft seeded rngs."""
    return verbalized_drafts(synthetic, per_intent=per_intent)


@pytest.fixture(scope="module")
def drafts(synthetic):
    return make_drafts(synthetic)


def tokens(text: str) -> set[str]:
    return {singular(t) for t in normalize(text).replace(",", " ").split()}


# ---------------------------------------------------------------------------------------------------------
# Clue table
# ---------------------------------------------------------------------------------------------------------

def test_every_implicit_eligible_synthetic_value_has_a_clue():
    missing = sorted({(field, value) for t in PRODUCT_TYPES.values() for field, values in t.value_pools.items()
                      if field in IMPLICIT_ELIGIBLE_FIELDS for value in values if not clues.has_clue(field, value)})
    assert missing == []


def test_no_clue_contains_its_value_or_a_word_of_it():
    offenders = []
    for field, rows in clues.CLUES.items():
        for value, found in rows.items():
            value_words = {t for t in tokens(value) if len(t) >= 3}
            for clue in found:
                if contains_phrase(normalize(clue), value) or value_words & tokens(clue):
                    offenders.append((field, value, clue))
    assert offenders == []


def test_clue_lookup_is_alias_and_case_tolerant_and_composes_options():
    rng = random.Random(0)
    assert clues.clue_for("details.Connectivity Technology", "BLUETOOTH", rng) in clues.CLUES["Connectivity Technology"]["bluetooth"]
    assert clues.clue_for("Item Form", "Cream", rng) == "a thick, semi-solid emulsion"
    assert clues.has_clue("details.Material", "Nylon, Silicone")          # composed from both options
    composed = clues.clue_for("Material", "Nylon, Silicone", rng)
    assert " and " in composed and "nylon" not in composed.lower()
    assert not clues.has_clue("Material", "Unobtainium")
    assert not clues.has_clue("Color", "Black")                            # Color is not implicit-eligible
    assert clues.clue_for("Brand", "Anker", rng) is None


def test_type_specific_clues_only_describe_their_products():
    rng = random.Random(0)
    keyboard = "keyboard Keymate Mechanical Keyboard Full Size"
    tripod = "tripod Trekcam Aluminum Tripod 60 Inch Full Size"
    assert "number pad" in " ".join(clues.clues_for("Form Factor", "Full Size", keyboard))
    assert clues.clues_for("Form Factor", "Full Size", tripod)                       # a generic clue is left
    assert "number pad" not in " ".join(clues.clues_for("Form Factor", "Full Size", tripod))
    assert "journal" not in clues.clue_for("Style", "Bullet", rng, context="security camera Dome Camera 2K")
    # every value with a restricted clue keeps an unrestricted one, so no product loses its clue
    for field, rows in clues.CLUES.items():
        for value, found in rows.items():
            assert any((field, c) not in clues.CLUE_SCOPES for c in found), (field, value)


@pytest.mark.parametrize("phrase, article", [
    ("USB hub", "a"), ("USB-C cable", "a"), ("usb-c cable", "a"), ("HDMI port", "an"), ("8-inch tablet", "an"),
    ("one-piece case", "a"), ("11% coupon", "an"), ("18% coupon", "an"), ("9% coupon", "a"), ("SSD", "an"),
    ("LED lamp", "an"), ("On Ear design", "an"), ("universal mount", "a"), ("ultra wide lens", "an"),
    ("hour", "an"), ("IPX5 rating", "an"), ("NVIDIA card", "an"), ("VESA mount", "a"), ("iPhone case", "an"),
    ("European plug", "a"), ("Open Ear form factor", "an"), ("MagSafe charger", "a")])
def test_article_follows_the_sound_and_keeps_the_case(phrase, article):
    assert with_article(phrase) == f"{article} {phrase}"


@pytest.mark.parametrize("field, value, expected", [
    ("Connectivity Technology", "Wired", "with a wired connection"),
    ("Power Source", "Battery Powered", "that is battery powered"),
    ("Power Source", "AC Adapter", "powered by an AC adapter"),
    ("Mounting Type", "Handlebar Mount", "with a handlebar mount"),
    ("Mounting Type", "Desktop", "desktop use"),
    ("Water Resistance Level", "Water Resistant", "that is water resistant"),
    ("Form Factor", "On Ear", "an on ear"),
    ("Special Feature", "Waterproof, SPF", "waterproof/SPF"),
    ("Age Range (Description)", "Adult", "for adults"),
    ("Compatible Devices", "Smartphone", "any smartphone"),
    ("Connector Type", "USB Type C", "a USB Type C connector"),
])
def test_explicit_phrases_read_naturally_and_state_the_value(field, value, expected):
    texts = {explicit_mod(field, value, random.Random(seed)) for seed in range(8)}
    assert all(mentions(t, value) for t in texts), texts          # validation's "value is stated"
    assert any(expected in t for t in texts), texts


# ---------------------------------------------------------------------------------------------------------
# Query
# ---------------------------------------------------------------------------------------------------------

def test_drafts_cover_every_intent_and_several_opening_styles(drafts):
    assert {d.intent for d in drafts} == set(INTENTS)
    openings = collections.Counter(" ".join(d.user_query.split()[:2]) for d in drafts)
    assert len(openings) >= 8, openings           # varied sentence templates, not one mould


def test_every_query_rubric_surface_is_in_the_query_and_explicit_values_are_stated(drafts):
    for d in drafts:
        query = normalize(d.user_query)
        for r in d.rubrics:
            if r.info_source != "query":
                continue
            surface = r.extras["query_surface"]
            assert surface and r.description == surface
            assert contains_phrase(query, normalize(surface)), (d.sample_id, r.id, surface, d.user_query)
            if r.type == "attribute_match" and r.id not in d.implicit_rubric_ids \
                    and r.field != "details.Number of Items":
                # the value itself, or its simple plural ("Adult" -> "suitable for adults"), as validation reads it
                assert mentions(surface, str(r.expected_value)), (r.id, surface)
            if r.type == "negative_attribute":
                assert all(contains_phrase(normalize(surface), normalize(v)) for v in r.expected_value)
            if r.type == "numeric_range" and r.field == "average_rating":
                assert re.search(r"at least [\d.]+ stars", surface), surface
            if r.type == "numeric_range" and r.field == "rating_number":
                assert re.search(r"at least \d+ ratings", surface), surface
            if r.type == "numeric_range" and r.field == "price":
                assert re.search(r"priced under \$\d+", surface), surface
            if r.type == "review_opinion":
                assert normalize(surface) == normalize(r.opinion)


def test_implicit_surfaces_hide_the_value_and_fillers_add_no_hidden_value(drafts):
    """An implicit surface never contains its value; a hidden or implicit value can reach the query only
    inside some other query rubric's surface (an overlap of the plan, e.g. "PC, Mac" as Compatible
    Devices next to a hidden Operating System "Mac", or a clue "bendy clear phone covers" for a material
    next to an implicit "Clear" finish, which validation rejects), never through the verbalizer's own
    filler text."""
    implicit_seen = 0
    for d in drafts:
        surfaces_text = " ".join(r.extras["query_surface"] for r in d.rubrics if r.info_source == "query")
        for r in d.rubrics:
            if r.id in d.implicit_rubric_ids:
                implicit_seen += 1
                assert not mentions(r.extras["query_surface"], r.expected_value), (r.id, r.extras)
                if mentions(d.user_query, r.expected_value):
                    others = " ".join(o.extras["query_surface"] for o in d.rubrics
                                      if o.info_source == "query" and o.id != r.id)
                    assert mentions(others, r.expected_value), (d.sample_id, r.id, d.user_query)
            elif r.info_source != "query" and r.type == "attribute_match":
                if mentions(d.user_query, r.expected_value):
                    assert mentions(surfaces_text, r.expected_value), (d.sample_id, r.id, d.user_query)
    assert implicit_seen >= len(drafts)


def test_voucher_text_spells_out_every_number_and_the_budget():
    rng = random.Random(1)
    fixed = Voucher(voucher_type="shop", threshold=14.33, discount_type="fixed", face_value=2.55, budget=28.26)
    pct = Voucher(voucher_type="brand", threshold=2.19, discount_type="percentage", discount=0.14, cap=1.28,
                  budget=4.34)
    tiered = Voucher(voucher_type="platform", threshold=12.0, discount_type="tiered", active_tier=1, budget=25.5,
                     tiers=[VoucherTier(tier=1, threshold=12.0, discount_type="fixed", face_value=1.5),
                            VoucherTier(tier=2, threshold=40.0, discount_type="percentage", discount=0.2, cap=9.0)])
    stacked = Voucher(voucher_type="stacked", discount_type="stacked", threshold=9.0, budget=21.0,
                      coupons=[StackedCoupon(coupon_index=0, voucher_type="brand", discount_type="percentage",
                                             threshold=9.0, discount=0.1, cap=2.5),
                               StackedCoupon(coupon_index=1, voucher_type="shop", discount_type="fixed",
                                             threshold=6.0, face_value=1.25)])
    cases = [(fixed, ["$2.55", "$14.33", "$28.26"]), (pct, ["14%", "$2.19", "$1.28", "$4.34"]),
             (tiered, ["$1.50", "$12.00", "20%", "$9.00", "$40.00", "tier 1 applies", "$25.50"]),
             (stacked, ["10%", "$9.00", "$2.50", "$1.25", "$6.00", "first", "then", "in order", "$21.00"])]
    for voucher, numbers in cases:
        text = budget_surface(voucher, voucher.budget, rng)
        for n in numbers:
            assert n in text, (n, text)
    assert voucher_phrase(Voucher(voucher_type="shop", threshold=5, discount_type="percentage",
                                     discount=0.08, cap=1, budget=9), rng).startswith("an 8%")


def test_coupon_budget_queries_state_the_voucher_and_review_driven_frames_opinions(drafts):
    coupon = [d for d in drafts if d.intent == "coupon_budget"]
    review = [d for d in drafts if d.intent == "review_driven"]
    assert coupon and review
    for d in coupon:
        assert f"${d.voucher.budget:.2f}" in d.user_query
    for d in review:
        assert re.search(r"reviews (saying|that mention)", d.user_query), d.user_query


def test_verbalize_is_deterministic_for_a_given_rng(synthetic):
    first = [(d.user_query, d.persona.to_dict(), d.clarification_script.to_dict()) for d in make_drafts(synthetic, 2)]
    again = [(d.user_query, d.persona.to_dict(), d.clarification_script.to_dict()) for d in make_drafts(synthetic, 2)]
    assert first == again


def test_verbalize_keeps_the_rubric_lock(drafts):
    for d in drafts:
        assert rubric_lock(d.rubrics) == d.meta["rubric_lock"]


def test_verbalize_writes_the_released_key_orders(drafts, released_samples):
    real = [json.loads(line) for line in released_samples.read_text().splitlines() if line.strip()]
    real_shapes = {tuple(r) for s in real for r in s["rubrics"]}
    for d in drafts:
        for r in d.rubrics:
            assert tuple(r.to_dict()) in real_shapes, (r.id, list(r.to_dict()))


# ---------------------------------------------------------------------------------------------------------
# Persona
# ---------------------------------------------------------------------------------------------------------

def test_persona_requirements_map_persona_rubrics_and_noise_is_whitelisted(drafts):
    negatives = 0
    for d in drafts:
        p = d.persona
        assert re.fullmatch(r"U_\d{5}", p.user_id)
        assert list(p.to_dict()) == ["user_id", "demographics", "lifestyle", "shopping_habits",
                                     "product_requirements"]
        for section, keys in SAFE_NOISE_FIELDS.items():
            assert set(getattr(p, section)) <= set(keys)
        persona_rubrics = [r for r in d.rubrics if r.info_source == "persona"]
        for r in persona_rubrics:
            if r.type == "negative_attribute":
                negatives += 1
                assert set(r.expected_value) <= set(p.product_requirements["avoid_preferences"])
                assert r.expected_value, "ecab fills the excluded values the original left empty"
            else:
                assert p.product_requirements[persona_key(r.field)] == r.expected_value
        assert set(p.product_requirements) == expected_requirement_keys(d.rubrics)
    assert negatives > 0


# ---------------------------------------------------------------------------------------------------------
# Clarification slots
# ---------------------------------------------------------------------------------------------------------

def test_slots_have_7_to_10_keywords_with_the_dimension_and_answers_with_the_value(drafts):
    n = 0
    for d in drafts:
        script = d.clarification_script
        clar = [r for r in d.rubrics if r.info_source == "clarification"]
        assert [s.slot_id for s in script.clarification_slots] == [f"cl_{i}" for i in range(1, len(clar) + 1)]
        assert script.max_clarification_turns == 10 and script.default_response
        for slot, r in zip(script.clarification_slots, clar):
            n += 1
            assert slot.linked_rubric_ids == [r.id] and not slot.revealed and slot.hidden_info
            assert 7 <= len(slot.trigger_keywords) <= 10, slot.trigger_keywords
            assert slot.trigger_keywords[0] == dimension(r.field).lower()
            assert len(set(slot.trigger_keywords)) == len(slot.trigger_keywords)
            if r.type == "numeric_range":
                assert any(re.search(p, slot.user_response) for p in
                           (r"at least [\d.]+ stars", r"at least \d+ ratings", r"under \$\d+")), slot.user_response
            else:
                values = r.expected_value if isinstance(r.expected_value, list) else [r.expected_value]
                assert all(v in slot.user_response for v in values), (slot.user_response, values)
            assert 1 <= len(re.findall(r"[.!?](\s|$)", slot.user_response)) <= 2
    assert n > len(drafts)


def test_generic_slot_keywords_avoid_short_tokens_and_common_question_words():
    allowed_short = {"usb", "gpu", "ddr", "nib", "gel"}
    offenders = []
    for field, keywords in SLOT_KEYWORDS.items():
        dim = dimension(f"details.{field}").lower() if field[0].isupper() else dimension(field)
        for kw in keywords:
            # A piece of the dimension name itself is allowed: the dimension is always a keyword anyway.
            if kw != kw.lower() or not (keyword_is_safe(kw) or kw in allowed_short or kw in dim):
                offenders.append((field, kw))
    assert offenders == []
    assert not keyword_is_safe("leather") and not keyword_is_safe("ink")


def test_natural_questions_reach_their_slot_against_every_competing_dimension():
    """Worst case for the lenient rule: the competing slot comes first (ties go to it)."""
    fields = sorted(set().union(*(i.clarification_fields for i in INTENT_TABLE.values())))

    def rubric(f):
        if f in ("average_rating", "rating_number", "price"):
            return Rubric(id="r1", type="numeric_range", field=f,
                          expected_value={"value": 30, "op": "<"} if f == "price" else {"min": 4.0})
        return Rubric(id="r1", type="attribute_match", field=f"details.{f}", expected_value="Qzx Value")

    failures = []
    for a in fields:
        for b in fields:
            if a == b:
                continue
            script = ClarificationScript(clarification_slots=[
                ClarificationSlot(slot_id="other", trigger_keywords=slot_keywords(rubric(b)), user_response="b"),
                ClarificationSlot(slot_id="mine", trigger_keywords=slot_keywords(rubric(a)), user_response="a")])
            user = ScriptedUser(script)
            for q in natural_questions(rubric(a).field):
                assert len(q) < 100
                if user.reveals(q) != "mine":
                    failures.append((a, b, q))
    assert failures == []


def test_empty_clarification_gets_the_covered_everything_script(synthetic):
    products, _, _ = synthetic
    d = Draft(sample_id="x", intent="product_search", product=products[0])
    d.rubrics = [Rubric(id="r1", type="entity_match", field="title", expected_value="thing",
                        extras={"query_surface": "", "canonical_entity": "thing", "title_span": "thing"})]
    script = build_clarification(d, random.Random(0))
    assert script.clarification_slots == [] and script.default_response == EMPTY_SCRIPT_RESPONSE

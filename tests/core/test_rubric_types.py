"""core/rubric_types.py (issue 28, item 4): one RubricType record per rubric type. Every schema type has a record,
each record's check agrees with the judge, its value shape with the schema, its LLM rule with the judge's
prompt, and the tables derived from the records equal the literal tables they replaced (the refactor is pinned:
a built benchmark stays the same bytes)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from ecab.core import rubric_types as rt
from ecab.core.rubric_checks import CheckInputs
from ecab.core.rubric_types import (
    ALL_RUBRIC_TYPES,
    BY_NAME,
    LEGACY_RUBRIC_TYPES,
    RUBRIC_TYPE_NAMES,
    RUBRIC_TYPES,
    RubricType,
    reads_reviews,
    rubric_verdict,
    stated_values,
    type_of,
)
from ecab.judge.rules import check_rubric
from ecab.schema import LEGACY_RUBRIC_TYPES as SCHEMA_LEGACY_TYPES
from ecab.schema import RUBRIC_TYPES as SCHEMA_TYPES
from ecab.schema import FormatError, Product, Review, Rubric, Voucher

ROOT = Path(__file__).resolve().parents[2]

KINDS = {
    "value_kind": {"text", "excluded", "range", "amount", "opinion"},
    "query_phrase": {"attribute", "numeric", "negative", "opinion", "budget", "entity", "plain"},
    "violation": {"value", "excluded", "line", "store", "number", "review"},
}


# ---------------------------------------------------------------------------------------------------------
# One record per type, the schema's names
# ---------------------------------------------------------------------------------------------------------

def test_every_schema_type_has_one_record_in_the_schema_order():
    assert RUBRIC_TYPE_NAMES == SCHEMA_TYPES
    assert tuple(t.name for t in RUBRIC_TYPES) == SCHEMA_TYPES
    assert tuple(t.name for t in LEGACY_RUBRIC_TYPES) == SCHEMA_LEGACY_TYPES
    assert len(RUBRIC_TYPES) == 6
    assert list(BY_NAME) == [*SCHEMA_TYPES, *SCHEMA_LEGACY_TYPES]
    assert all(BY_NAME[t.name] is t for t in ALL_RUBRIC_TYPES)


def test_records_are_frozen_and_their_kinds_are_the_documented_ones():
    for record in ALL_RUBRIC_TYPES:
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(record, "name", "other")
        hash(record)
        for field, allowed in KINDS.items():
            assert getattr(record, field) in allowed, (record.name, field)
        for template in (record.description, record.query_hint, record.hidden_info, *dict(record.field_hints).values()):
            assert isinstance(template, str)
        # every kind named in a record is described in the module docstring
        for field in KINDS:
            assert f'"{getattr(record, field)}"' in rt.__doc__


def test_type_of_takes_a_rubric_a_feature_or_a_name_and_refuses_an_unknown_type():
    rubric = Rubric(id="r1", type="numeric_range", field="price", expected_value={"max": 5})
    assert type_of(rubric) is type_of("numeric_range") is rt.NUMERIC_RANGE
    with pytest.raises(ValueError, match="no rule for rubric type 'color_match'"):
        type_of("color_match")
    assert reads_reviews(Rubric(id="r", type="review_opinion", field="reviews", expected_value="x"))
    assert not reads_reviews(rubric) and not reads_reviews(Rubric(id="r", type="color_match"))


# ---------------------------------------------------------------------------------------------------------
# The value: the schema decides, the record names the shape
# ---------------------------------------------------------------------------------------------------------

GOOD: dict[str, list[Any]] = {
    "attribute_match": ["Black"], "entity_match": ["phone case"], "store_match": ["Acme"],
    "negative_attribute": [["Blue", "Red"], []], "budget_match": [25, 19.99],
    "review_opinion": ["feels sturdy", {"opinion": "feels sturdy"}],
    "numeric_range": [4, {"min": 4.0}, {"max": 30}, {"min": 1, "max": 2}, [1, 2], {"value": 4, "op": ">="}],
}
BAD: dict[str, list[Any]] = {
    "attribute_match": [3, ["Black"]], "entity_match": [None], "store_match": [{"store": "Acme"}],
    "negative_attribute": ["Blue", [1]], "budget_match": ["25", True],
    "review_opinion": [3, {"text": "x"}], "numeric_range": ["4", {"op": ">"}, [1, 2, 3], {}],
}


@pytest.mark.parametrize("record", ALL_RUBRIC_TYPES, ids=lambda t: t.name)
def test_the_value_shape_is_the_schemas(record: RubricType):
    for value in GOOD[record.name]:
        assert record.accepts(value), value
    for value in BAD[record.name]:
        assert not record.accepts(value), value
        with pytest.raises(FormatError) as err:
            Rubric.from_dict({"id": "r", "type": record.name, "field": "f", "expected_value": value})
        assert f"{record.name} expects {record.value_shape}" in str(err.value)


# ---------------------------------------------------------------------------------------------------------
# The check agrees with the judge
# ---------------------------------------------------------------------------------------------------------

@dataclass
class _Match:
    satisfied: bool
    score: float
    sentence: str
    lexical: bool
    n_sentences: int


class LexicalChecker:
    """A review checker without an embedder: the opinion occurs in a review, lower-cased."""

    threshold = 0.5

    def check(self, opinion, reviews, product_id=None):
        hit = next((r.text for r in reviews if opinion.lower() in r.text.lower()), "")
        return _Match(bool(hit), 1.0 if hit else 0.0, hit, bool(hit), len(reviews))


def product(**kw) -> Product:
    base = {"product_id": "P1", "title": "Acme Rugged Phone Case for iPhone 14", "store": "Acme", "price": 20.0,
            "average_rating": 4.2, "rating_number": 120, "features": ["Shock-absorbing TPU bumper"],
            "details": {"Color": "Black", "Material": "Silicone, TPU"}}
    base.update(kw)
    return Product.from_dict(base)


VOUCHER = Voucher.from_dict({"voucher_type": "simple", "discount_type": "fixed", "face_value": 5.0,
                             "threshold": 10.0, "budget": 16.0})
REVIEWS = [Review(review_id=1, product_id="P1", rating=5, title="", text="It feels sturdy in the hand.")]

# (type, field, expected_value, extras, product overrides, satisfied)
CASES = [
    ("attribute_match", "details.Color", "Black", {}, {}, True),
    ("attribute_match", "details.Material", "TPU", {}, {}, True),
    ("attribute_match", "details.Color", "Blue", {}, {}, False),
    ("numeric_range", "average_rating", {"min": 4.0}, {}, {}, True),
    ("numeric_range", "price", {"value": 20.0, "op": "<"}, {}, {}, False),
    ("numeric_range", "rating_number", [100, 200], {}, {"rating_number": None}, False),
    ("entity_match", "title", "phone case", {"title_span": "Phone Case"}, {}, True),
    ("entity_match", "title", "screen protector", {}, {}, False),
    ("negative_attribute", "details.Color", ["Blue", "Red"], {}, {}, True),
    ("negative_attribute", "details.Color", ["black"], {}, {}, False),
    ("negative_attribute", "details.Pattern", [], {}, {}, False),       # a missing field is not satisfied
    ("budget_match", "budget", 16.0, {}, {}, True),                      # 20 - 5 = 15 <= 16
    ("budget_match", "budget", 14.0, {}, {}, False),
    ("review_opinion", "reviews", "feels sturdy", {}, {}, True),
    ("review_opinion", "reviews", "charges fast", {}, {}, False),
    ("store_match", "store", " acme ", {}, {}, True),
    ("store_match", "store", "Other Store", {}, {}, False),
]


@pytest.mark.parametrize("rtype, field, expected, extras, overrides, satisfied", CASES)
def test_each_records_check_agrees_with_the_judge(rtype, field, expected, extras, overrides, satisfied):
    rubric = Rubric.from_dict({"id": "r1", "type": rtype, "field": field, "expected_value": expected, **extras})
    prod = product(**overrides)
    record = type_of(rubric)
    direct = record.check(rubric, prod, CheckInputs(VOUCHER, REVIEWS, LexicalChecker()))
    judged = check_rubric(rubric, prod, voucher=VOUCHER, reviews=REVIEWS, review_checker=LexicalChecker())
    assert direct.satisfied is judged.satisfied is satisfied, (direct, judged)
    assert (direct.reasoning, direct.evidence, direct.method) == (judged.reasoning, judged.evidence, judged.method)
    assert rubric_verdict(rubric, prod, voucher=VOUCHER, reviews=REVIEWS, review_checker=LexicalChecker()) == judged


def test_every_type_is_covered_both_ways_and_an_unknown_type_has_no_rule():
    assert {(c[0], c[-1]) for c in CASES} == {(t.name, s) for t in ALL_RUBRIC_TYPES for s in (True, False)}
    with pytest.raises(ValueError, match="no rule for rubric type"):
        rubric_verdict(Rubric(id="r1", type="color_match", field="x", expected_value="y"), product())


def test_what_a_check_reads_is_what_the_record_says():
    """reads_reviews: only that type needs reviews (and a review checker); uses_voucher: only that type's verdict
    changes with the voucher; extra_keys: the entity's title_span names the entity."""
    prod = product()
    for record in ALL_RUBRIC_TYPES:
        expected = GOOD[record.name][0]
        rubric = Rubric(id="r1", type=record.name, field="details.Color", expected_value=expected)
        if not record.reads_reviews:
            assert record.check(rubric, prod, CheckInputs(VOUCHER)) == \
                record.check(rubric, prod, CheckInputs(VOUCHER, REVIEWS, LexicalChecker()))
        else:
            with pytest.raises(ValueError, match="review checker"):
                record.check(rubric, prod, CheckInputs(VOUCHER, REVIEWS, None))
        if not record.uses_voucher:
            assert record.check(rubric, prod, CheckInputs(None)) == record.check(rubric, prod, CheckInputs(VOUCHER))
    budget = Rubric(id="r1", type="budget_match", field="budget", expected_value=16.0)
    assert rubric_verdict(budget, prod, voucher=VOUCHER).satisfied is True
    assert rubric_verdict(budget, prod).satisfied is False
    entity = Rubric(id="r1", type="entity_match", field="title", expected_value="case cover",
                    extras={"title_span": "Phone Case"})
    assert rubric_verdict(entity, prod).satisfied is True
    assert rt.ENTITY_MATCH.extra_keys == ("canonical_entity", "title_span")


# ---------------------------------------------------------------------------------------------------------
# The LLM judge
# ---------------------------------------------------------------------------------------------------------

def test_the_llm_rule_of_every_type_is_the_judge_prompts_and_the_judged_types_its_default():
    from ecab.judge.llm import JUDGE_SYSTEM_PROMPT, LLM_TYPES

    rule_lines = [line for line in JUDGE_SYSTEM_PROMPT.splitlines() if line.startswith("- ")]
    assert sorted(rule_lines) == sorted(f"- {t.name}: {t.judge_rule}" for t in ALL_RUBRIC_TYPES)
    assert LLM_TYPES == tuple(t.name for t in ALL_RUBRIC_TYPES)
    judged = tuple(t.name for t in ALL_RUBRIC_TYPES if t.llm_judged)
    assert judged == ("review_opinion",)
    conf = yaml.safe_load((ROOT / "conf" / "judge" / "llm.yaml").read_text(encoding="utf-8"))
    assert tuple(conf["types"]) == judged


# ---------------------------------------------------------------------------------------------------------
# The derived tables equal the literal ones they replaced
# ---------------------------------------------------------------------------------------------------------

def test_construction_tables_equal_their_old_literals():
    from ecab.construct import load_bearing, partition, rubrics, validate
    from ecab.construct import verbalize

    # partition.py: only membership is read (`in`); the old literal listed them in another order
    assert set(partition.ALWAYS_QUERY_TYPES) == {"store_match", "review_opinion", "budget_match"}
    assert validate._CHECK_ORDER == {"entity_match": 0, "attribute_match": 1, "numeric_range": 2,
                                     "negative_attribute": 3, "budget_match": 4, "store_match": 5,
                                     "review_opinion": 9}
    assert load_bearing._COST == {"entity_match": 0, "store_match": 1, "numeric_range": 2, "budget_match": 3,
                                  "attribute_match": 4, "negative_attribute": 5, "review_opinion": 9}
    query_keys = ["id", "type", "field", "expected_value", "description", "query_surface", "info_source"]
    entity_keys = ["id", "type", "field", "expected_value", "description", "query_surface", "canonical_entity",
                   "title_span", "info_source"]
    assert rubrics.QUERY_KEYS == verbalize.QUERY_RUBRIC_KEYS == query_keys
    assert rubrics.ENTITY_KEYS == verbalize.ENTITY_RUBRIC_KEYS == entity_keys
    assert {t.name: t.query_keys() for t in ALL_RUBRIC_TYPES} == \
        {t.name: entity_keys if t.name == "entity_match" else query_keys for t in ALL_RUBRIC_TYPES}
    assert {t.name for t in ALL_RUBRIC_TYPES if t.implicit_eligible} == {"attribute_match"}
    assert {t.name for t in ALL_RUBRIC_TYPES if t.reads_reviews} == {"review_opinion"}
    assert {t.name for t in ALL_RUBRIC_TYPES if t.uses_voucher} == {"budget_match"}


def test_sibling_tables_equal_their_old_literals():
    from ecab.catalog.siblings import violate

    assert violate.NUMERIC_TYPES == ("numeric_range", "budget_match", "review_opinion")
    assert {t.name: t.violation for t in ALL_RUBRIC_TYPES} == {
        "attribute_match": "value", "negative_attribute": "excluded", "entity_match": "line",
        "store_match": "store", "numeric_range": "number", "budget_match": "number", "review_opinion": "review"}


def _old_hidden_values(rubric: Rubric) -> list[str]:
    """validate._hidden_values before the records."""
    if rubric.type == "negative_attribute":
        return [str(v) for v in rubric.expected_value]
    if rubric.type in ("attribute_match", "entity_match", "store_match") and isinstance(rubric.expected_value, str):
        return [rubric.expected_value]
    return []


def test_stated_values_are_the_old_hidden_values():
    for record in ALL_RUBRIC_TYPES:
        for value in GOOD[record.name]:
            rubric = Rubric(id="r", type=record.name, field="details.Color", expected_value=value)
            assert stated_values(rubric) == _old_hidden_values(rubric), (record.name, value)


def _old_query_hint(feature) -> str | None:
    """The type-specific branches of rubrics.query_hint before the records (None: the per-field hints)."""
    v = feature.value
    if feature.type == "numeric_range":
        if feature.field == "average_rating":
            return f"Mention that it must be at least {v:g} stars."
        if feature.field == "rating_number":
            return f"Mention that it must be at least {v} ratings."
        if feature.field == "price":
            return f"Mention that it must be under ${v}."
    if feature.type == "review_opinion":
        return ("Mention that you want a product with reviews mentioning '{v}'. Frame it as review evidence you "
                "want to find, not as reviews the user has already read.").format(v=v)
    key = feature.detail_key or feature.field
    if feature.negative:
        return (f"Express a negative constraint on the {key} dimension by excluding other concrete values. "
                f"Do not exclude the product's actual value '{v}'.")
    return None


def _old_description(feature) -> str:
    if feature.negative:
        return (f"Exclude concrete alternative values on the {feature.detail_key} dimension while keeping the "
                f"target product value '{feature.value}' valid")
    if feature.type == "review_opinion":
        return f"A review of the recommended product should mention: {feature.value}"
    return feature.rubric_text


FEATURES = [
    ("numeric_range", "average_rating", 4.5, False), ("numeric_range", "average_rating", 4.0, False),
    ("numeric_range", "rating_number", 200, False), ("numeric_range", "price", 29.99, False),
    ("numeric_range", "details.Screen Size", 6, False), ("review_opinion", "review", "feels sturdy", False),
    ("attribute_match", "details.Color", "Black", True), ("attribute_match", "details.Color", "Black", False),
    ("attribute_match", "details.Brand", "Acme", False),
]


@pytest.mark.parametrize("ftype, field, value, negative", FEATURES)
def test_verbalization_templates_render_the_old_text(ftype, field, value, negative):
    from ecab.construct.draft import Feature
    from ecab.construct.rubrics import query_hint, rubric_description

    feature = Feature(field=field, value=value, type=ftype, rubric_text=f"The product's {field} is {value}",
                      negative=negative)
    old = _old_query_hint(feature)
    if old is not None:
        assert query_hint(feature) == old
    assert rubric_description(feature) == _old_description(feature)


def test_budget_entity_and_clarification_wording_render_the_old_text():
    from ecab.construct.verbalize.clarification import hidden_info
    from ecab.construct.verbalize.phrases import dimension, numeric_mod
    from ecab.construct.verbalize.text import join_words

    budget = 23.5
    assert rt.BUDGET_MATCH.description.format(v=budget) == \
        f"The total cost after applying the voucher should be within the budget of ${budget:.2f}"
    assert rt.ENTITY_MATCH.description.format(v="phone case") == "phone case"
    cases: list[tuple[str, str, Any]] = [("numeric_range", "average_rating", {"min": 4.5}), ("numeric_range", "price", 30),
             ("negative_attribute", "details.Color", ["Blue", "Red", "Green"]),
             ("attribute_match", "details.Material", "TPU"), ("store_match", "store", "Acme")]
    for rtype, field, value in cases:
        rubric = Rubric(id="r", type=rtype, field=field, expected_value=value, info_source="clarification")
        dim = dimension(field)
        if rtype == "numeric_range":
            old = f"The shopper wants a product {numeric_mod(field, value)}."
        elif rtype == "negative_attribute":
            old = f"The shopper wants to avoid these {dim} values: {join_words([str(v) for v in value])}."
        else:
            old = f"The shopper requires the {dim} to be {value}."
        assert hidden_info(rubric) == old

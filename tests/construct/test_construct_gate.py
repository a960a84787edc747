"""Construction accepts only tasks whose hidden intent matters (issue 15, item 2): the feature selection
(construct/select.py), the validator's gate (validate.check_validity), the new rejection reasons, the
sampler's neighbourhood order and the construct.min_* knobs."""
from __future__ import annotations

import random

import pytest

from ecab.config import ConfigError, check_number
from ecab.construct import validate as v
from ecab.construct.benchmark_folder import REJECTIONS_TABLE
from ecab.construct.draft import Draft, Feature
from ecab.construct.load_bearing import audit_products
from ecab.construct.partition import partition_features
from ecab.construct.pipeline import construct
from ecab.construct.reasons import REASON_GROUP, REJECTION_REASONS
from ecab.construct.sample import RICH_NEIGHBOURHOOD, interleave_by_category, neighbourhood_scores
from ecab.construct.select import NotLoadBearing, select_load_bearing
from ecab.construct.settings import construct_settings
from ecab.construct.validity import audit_tasks
from ecab.schema import Product, Rubric


class MemoryCatalog:
    """Just what selection and the gate read: rows, reviews (none here), a fingerprint."""

    def __init__(self, products: list[Product], name: str):
        self.products, self.fingerprint = products, f"gate-test-{name}"

    def count(self) -> int:
        return len(self.products)

    def iter_products(self, batch_size: int = 1024):
        yield self.products

    def get_reviews(self, product_id: str, limit: int = 20):
        return []


def _product(pid: str, **details) -> Product:
    base = {"Brand": "Kelvo", "Color": "Black", "Material": "Steel", "Style": "Modern", "Finish Type": "Matte"}
    return Product(product_id=pid, title="Kelvo Desk Lamp, LED", main_category="Home", store="Kelvo",
                   average_rating=4.6, rating_number=150, price=30.0, details={**base, **details})


def _features(*keys: str) -> list[Feature]:
    target = _product("T")
    return [Feature(field=f"details.{k}", value=target.details[k], type="attribute_match",
                    expected_value=target.details[k]) for k in keys]


CATALOG = MemoryCatalog([
    _product("T"),
    _product("RED", Color="Red"),                          # witness for Color
    _product("WOOD", Material="Wood"),                     # witness for Material
    _product("CLASSIC-B", Style="Classic", Brand="Orbo"),  # fails Style and Brand only
    _product("GLOSS-RED", **{"Finish Type": "Glossy", "Color": "Red"}),   # fails two: witnesses nothing
    Product(product_id="FAN", title="Kelvo Desk Fan", main_category="Home", details={"Brand": "Kelvo"}),
], "select")


def test_selection_marks_which_features_have_a_witness_and_keeps_them_all():
    draft = Draft(sample_id="s", intent="product_search", product=_product("T"))
    features = _features("Color", "Material", "Style", "Brand", "Finish Type")
    picked = select_load_bearing(draft, features, CATALOG, None, min_features=3, min_witnessed=2)
    # RED and WOOD fail Color and Material alone; CLASSIC-B fails Style and Brand together (a witness for
    # neither), and nothing fails Finish Type. Nothing is dropped: the unwitnessed go to the query.
    assert [f.detail_key for f in picked.features] == ["Color", "Material", "Style", "Brand", "Finish Type"]
    assert {f.detail_key: f.witnessed for f in picked.features} == {
        "Color": True, "Material": True, "Style": False, "Brand": False, "Finish Type": False}
    assert picked.idle_query == 3
    audit = audit_products([Rubric(id=f"r{i}", type="attribute_match", field=f.field, expected_value=f.value)
                            for i, f in enumerate(picked.features)], draft.product, CATALOG.products)
    assert [r.load_bearing for r in audit.rubrics] == [f.witnessed for f in picked.features]
    assert audit.match_all == 1
    # The partition hides only witnessed features: the three others are fixed to the query.
    parts = partition_features(picked.features, "product_search", random.Random(0), min_query=3,
                               min_persona=1, min_clarification=0)
    hidden = parts["persona"] + parts["clarification"]
    assert hidden and all(f.witnessed for f in hidden)
    assert {f.detail_key for f in parts["query"]} >= {"Style", "Brand", "Finish Type"}


def test_selection_refuses_too_few_witnessed_features_or_no_witnessed_negative():
    draft = Draft(sample_id="s", intent="product_search", product=_product("T"))
    # Two witnessed features cannot fill the persona and the clarification script (2 + 2).
    with pytest.raises(NotLoadBearing, match="only 2 features have a witness"):
        select_load_bearing(draft, _features("Color", "Material", "Finish Type"), CATALOG, None, min_features=3)
    with pytest.raises(NotLoadBearing, match="only 3 features"):
        select_load_bearing(draft, _features("Color", "Material", "Finish Type"), CATALOG, None, min_features=4,
                            min_witnessed=2)
    negative = _features("Color", "Material", "Finish Type")
    negative[2].negative, negative[2].expected_value = True, ["Satin"]   # nothing else is Satin: no witness
    draft = Draft(sample_id="s", intent="negative_constraint", product=_product("T"))
    with pytest.raises(NotLoadBearing, match="no negative constraint is load-bearing"):
        select_load_bearing(draft, negative, CATALOG, None, min_features=3, min_witnessed=2)


def _gated_draft(hidden: list[str], query: list[str]) -> Draft:
    draft = Draft(sample_id="g", intent="product_search", product=_product("T"))
    feats = {f.detail_key: f for f in _features("Color", "Material", "Style", "Finish Type")}
    rubrics = [Rubric(id=f"q{i}", type="attribute_match", field=feats[k].field, expected_value=feats[k].value,
                      info_source="query") for i, k in enumerate(query)]
    rubrics += [Rubric(id=f"p{i}", type="attribute_match", field=feats[k].field, expected_value=feats[k].value,
                       info_source="persona") for i, k in enumerate(hidden)]
    draft.rubrics = rubrics
    return draft


def test_gate_reasons_name_what_does_not_matter():
    gate = v.Gate(hidden_load_bearing=1.0, query_load_bearing=0.8, query_matches=2)
    ok = v.check_validity(_gated_draft(hidden=["Color"], query=["Material"]), CATALOG, gate)
    assert ok == []
    issues = v.check_validity(_gated_draft(hidden=["Color", "Finish Type"], query=["Material"]), CATALOG, gate)
    assert [code for code, _ in issues] == ["hidden_not_load_bearing"] and "Finish Type" in issues[0][1]
    issues = v.check_validity(_gated_draft(hidden=["Color"], query=["Material", "Finish Type"]), CATALOG, gate)
    assert [code for code, _ in issues] == ["query_not_load_bearing"]
    narrow = v.Gate(hidden_load_bearing=1.0, query_load_bearing=0.8, query_matches=5)
    issues = v.check_validity(_gated_draft(hidden=["Color"], query=["Material"]), CATALOG, narrow)
    assert [code for code, _ in issues] == ["query_too_narrow"]      # 4 steel lamps match the query: 4 < 5
    for code in ("hidden_not_load_bearing", "query_not_load_bearing", "query_too_narrow"):
        assert code in REJECTION_REASONS and REASON_GROUP[code] == "hidden intent does not matter"


def test_neighbourhood_scores_put_rich_neighbourhoods_first():
    products = CATALOG.products
    scores = neighbourhood_scores(products)
    # T differs alone in Color (RED) and Material (WOOD); RED from T in Color and from GLOSS-RED in Finish
    # Type; FAN shares nothing.
    assert scores["T"] == 2 and scores["RED"] == 2 and scores["FAN"] == 0
    rich = {p.product_id: (RICH_NEIGHBOURHOOD if p.product_id == "WOOD" else 0) for p in products}
    order = interleave_by_category({"Home": [p.product_id for p in products]}, random.Random(0), 1, priority=rich)
    assert order[0] == "WOOD"
    assert sorted(order) == sorted(p.product_id for p in products)


def test_knobs_are_checked():
    with pytest.raises(ValueError, match="min_query_load_bearing"):
        construct_settings({"construct": {"min_query_load_bearing": 1.5}})
    with pytest.raises(ValueError, match="min_query_matches"):
        construct_settings({"construct": {"min_query_matches": -1}})
    with pytest.raises(ConfigError, match="construct.min_hidden_load_bearing"):
        check_number("construct.min_hidden_load_bearing", 2, "rate", 0, True, False)
    off = construct_settings({"construct": {"min_hidden_load_bearing": 0, "min_query_load_bearing": 0,
                                           "min_query_matches": 0}})
    assert off.gate is None
    assert construct_settings({}).gate == v.Gate(1.0, 0.0, 5)
    assert "min_query_matches" in construct_settings({}).fingerprint_fields()


def _cfg(**kw):
    base = {"seed": 0, "n_per_intent": 2, "intents": ["product_search", "feature_combination"],
            "workers": 1, "max_attempts": 2, "max_candidates": 25}
    return {"construct": {**base, **kw}}


def test_every_accepted_task_meets_the_gate_on_an_independent_audit(small_catalog, tmp_path):
    result = construct(_cfg(), small_catalog, out_dir=tmp_path / "b", progress=False)
    assert len(result.tasks) == 4
    report = audit_tasks(result.tasks, small_catalog, include_reviews=True)
    for row in report.tasks:
        hidden = [r for r in row.rubrics if r.info_source in ("persona", "clarification")]
        query = [r for r in row.rubrics if r.info_source == "query"]
        assert hidden and all(r.load_bearing for r in hidden), row.task_id
        assert query and row.match_query >= 5 and not row.query_singles_out, row.task_id
        assert row.match_all == 1, row.task_id          # construct.max_matches 1: one correct answer


def test_new_rejection_reasons_reach_the_rejection_table(small_catalog, tmp_path):
    # Without the selection stage, hidden rubrics with no witness reach the validator and are refused.
    result = construct(_cfg(load_bearing_only=False, max_candidates=6), small_catalog, out_dir=tmp_path / "a",
                       progress=False)
    assert result.rejection_counts["hidden_not_load_bearing"] > 0
    table = (tmp_path / "a" / REJECTIONS_TABLE).read_text()
    assert "| hidden_not_load_bearing | a persona or clarification rubric is not load-bearing" in table
    result = construct(_cfg(min_query_matches=10_000, max_candidates=6), small_catalog, out_dir=tmp_path / "b",
                       progress=False)
    assert result.tasks == [] and result.rejection_counts["query_too_narrow"] > 0
    assert "| query_too_narrow |" in (tmp_path / "b" / REJECTIONS_TABLE).read_text()

"""The data model: lossless round trip of the released format, and one clear error per bad input."""
import copy
import json
from pathlib import Path

import pytest

from ecab.schema import (FormatError, NumericRange, Product, Rubric, Task, Voucher, dumps, iter_tasks,
                         read_tasks, write_jsonl)

def read_objects(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture
def real_objects(released_samples):
    """A fresh copy of the released samples' JSON objects per call (tests edit them into bad input)."""
    return lambda: read_objects(released_samples)


def test_real_samples_round_trip_with_key_order(tmp_path, released_samples):
    originals = read_objects(released_samples)
    tasks = read_tasks(released_samples)
    assert len(tasks) == len(originals) > 0
    out = tmp_path / "benchmark.jsonl"
    write_jsonl(out, tasks)
    written = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert written == originals
    # Equality of dicts ignores order; compare the key sequences at every level too.
    assert [json.dumps(w) for w in written] == [json.dumps(o) for o in originals]


def test_real_samples_parse_into_typed_records(released_samples):
    tasks = read_tasks(released_samples)
    types = {r.type for t in tasks for r in t.rubrics}
    assert types == {"attribute_match", "numeric_range", "entity_match", "negative_attribute", "budget_match",
                     "review_opinion"}
    assert all(len([r for r in t.rubrics if r.type == "entity_match"]) == 1 for t in tasks)
    coupon = [t for t in tasks if t.intent_category == "coupon_budget"]
    assert coupon and all(isinstance(t.voucher, Voucher) for t in coupon)
    assert all(t.clarification_script.clarification_slots[0].trigger_keywords for t in tasks
               if t.clarification_script.clarification_slots)


def test_voucher_apply_reproduces_the_targets_price_after_voucher(released_samples):
    for task in read_tasks(released_samples):
        if task.voucher is None:
            continue
        price = task.target_product.price
        assert task.voucher.apply(price) == pytest.approx(task.voucher.price_after_voucher, abs=0.011)
        assert task.voucher.apply(price) <= task.voucher.budget


def test_voucher_kinds_arithmetic():
    simple = Voucher.from_dict({"voucher_type": "shop", "threshold": 20.0, "discount_type": "fixed",
                                "face_value": 5.0, "discount": None, "cap": None, "budget": 40.0})
    assert simple.apply(30.0) == 25.0
    assert simple.apply(19.99) == 19.99          # below threshold: no discount
    pct = Voucher.from_dict({"voucher_type": "brand", "threshold": 10.0, "discount_type": "percentage",
                             "face_value": None, "discount": 0.2, "cap": 3.0, "budget": 40.0})
    assert pct.apply(10.0) == 8.0 and pct.apply(100.0) == 97.0   # cap binds at 100
    tiered = Voucher.from_dict({"voucher_type": "platform", "threshold": 20.0, "discount_type": "tiered",
                                "face_value": None, "discount": None, "cap": None, "active_tier": 1,
                                "tiers": [{"tier": 1, "threshold": 20.0, "discount_type": "fixed", "face_value": 2.0,
                                           "discount": None, "cap": None},
                                          {"tier": 2, "threshold": 60.0, "discount_type": "percentage",
                                           "face_value": None, "discount": 0.25, "cap": 20.0}],
                                "budget": 50.0})
    assert tiered.kind == "tiered"
    assert tiered.apply(30.0) == 28.0 and tiered.apply(80.0) == 60.0 and tiered.apply(10.0) == 10.0
    stacked = Voucher.from_dict({"voucher_type": "stacked", "threshold": 10.0, "discount_type": "stacked",
                                 "face_value": None, "discount": None, "cap": None, "budget": 50.0,
                                 "coupons": [{"coupon_index": 0, "voucher_type": "platform",
                                              "discount_type": "percentage", "threshold": 10.0, "discount": 0.1,
                                              "cap": 100.0},
                                             {"coupon_index": 1, "voucher_type": "shop", "discount_type": "fixed",
                                              "threshold": 45.0, "face_value": 5.0}]})
    assert stacked.apply(50.0) == 40.0           # 50 -> 45 (10%), 45 >= 45 -> 40
    assert stacked.apply(40.0) == 36.0           # 40 -> 36, below the second threshold
    assert stacked.to_dict()["coupons"][0]["coupon_index"] == 0


def test_numeric_range_shapes():
    assert NumericRange.contains({"min": 4.0}, 4.0) and not NumericRange.contains({"min": 4.0}, 3.9)
    assert NumericRange.contains({"value": 30, "op": "<"}, 29.99)
    assert not NumericRange.contains({"value": 30, "op": "<"}, 30)
    assert NumericRange.contains([1, 2], 2) and NumericRange.contains(5, 5)
    assert NumericRange.contains({"min": 1, "max": 2}, 1.5) and not NumericRange.contains({"max": 2}, 2.5)
    for bad in ({"value": 3, "op": "~"}, {}, [1], "4", {"min": "4"}, True):
        assert not NumericRange.is_valid(bad)


def test_new_records_emit_declared_order():
    product = Product(product_id="B0TEST0001", title="X", details={"Brand": "Acme"})
    assert list(product.to_dict()) == list(Product.TARGET_KEYS)
    rubric = Rubric(id="r1", type="attribute_match", field="details.Brand", expected_value="Acme")
    assert list(rubric.to_dict())[:4] == ["id", "type", "field", "expected_value"]
    assert "error_message" not in Task(id="t", intent_category="x", user_query="q").to_dict()


# ------------------------------------------------------------------------------------------ bad input

def _write(tmp_path, objs_or_lines) -> Path:
    path = tmp_path / "bad.jsonl"
    lines = [o if isinstance(o, str) else json.dumps(o) for o in objs_or_lines]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _error(tmp_path, objs_or_lines) -> FormatError:
    path = _write(tmp_path, objs_or_lines)
    with pytest.raises(FormatError) as info:
        list(iter_tasks(path))
    return info.value


def test_malformed_line_names_file_and_line(tmp_path, real_objects):
    good = real_objects()[0]
    err = _error(tmp_path, [good, "{not json"])
    assert err.line == 2 and "bad.jsonl:2" in str(err) and "malformed JSON" in str(err)
    cut = _error(tmp_path, [good, '{"id": "bad", "user_query": '])      # a line cut short: where it stops
    assert "(column 29)" in str(cut)


def test_missing_required_field(tmp_path, real_objects):
    task = real_objects()[0]
    del task["user_query"]
    err = _error(tmp_path, [task])
    assert err.line == 1 and err.field == "user_query" and "required field is missing" in str(err)
    task = real_objects()[0]
    del task["target_product"]["product_id"]
    err = _error(tmp_path, [real_objects()[1], task])
    assert err.line == 2 and err.field == "target_product.product_id"


def test_unknown_rubric_type(tmp_path, real_objects):
    task = real_objects()[0]
    task["rubrics"][2]["type"] = "vibe_match"
    err = _error(tmp_path, [task])
    assert err.field == "rubrics[2].type" and "unknown rubric type 'vibe_match'" in str(err)


@pytest.mark.parametrize("rtype,value", [("numeric_range", {"minimum": 4}), ("numeric_range", "4 stars"),
                                         ("attribute_match", ["Nylon"]), ("negative_attribute", "Blue"),
                                         ("budget_match", "12.50"), ("review_opinion", 3)])
def test_wrong_expected_value_shape(tmp_path, rtype, value, real_objects):
    task = real_objects()[0]
    task["rubrics"][0]["type"] = rtype
    task["rubrics"][0]["expected_value"] = value
    if rtype == "budget_match":
        task["voucher"] = real_objects()[-1]["voucher"] or {"budget": 1.0}
    err = _error(tmp_path, [task])
    assert err.field == "rubrics[0].expected_value" and rtype in str(err)
    assert str(err).startswith(f"{tmp_path / 'bad.jsonl'}:1: field 'rubrics[0].expected_value'")


def test_dangling_references_and_non_objects(tmp_path, real_objects):
    task = real_objects()[0]
    task["implicit_rubric_ids"] = ["r99"]
    assert _error(tmp_path, [task]).field == "implicit_rubric_ids[0]"
    assert "expected a JSON object" in str(_error(tmp_path, ["[1, 2]"]))
    task = real_objects()[0]
    task["rubrics"] = {"r1": {}}
    assert _error(tmp_path, [task]).field == "rubrics"


def test_missing_file_is_a_format_error(tmp_path):
    with pytest.raises(FormatError, match="file not found"):
        read_tasks(tmp_path / "nope.jsonl")


def test_dumps_keeps_unicode(real_objects):
    task = Task.from_dict(copy.deepcopy(real_objects()[0]))
    task.user_query = "café ≤ 20€"
    assert "café ≤ 20€" in dumps(task)

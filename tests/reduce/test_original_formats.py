"""Import/export of the original harness's predictions and evaluation-results files
(docs/original-harness.md §3.3, §4.1)."""
from __future__ import annotations

import json

import pytest
from test_reduce import make_judgement, make_task, make_tasks, no_product, write_run_folder

from ecab.reduce import reduce_run
from ecab.reduce.__main__ import main as cli_main
from ecab.reduce.original import (EVALUATION_KEYS, PREDICTION_KEYS, RUBRIC_RESULT_KEYS, export_run,
                                  import_original, steps_from_messages)
from ecab.runs import RunFolder
from ecab.schema import FormatError, Step, Trajectory


def episode(tid: str, termination: str, calls: list[tuple], *, predicted=None, error=None, total=None,
            trial: int = 0) -> Trajectory:
    """A trajectory recorded the way ecab's episode loop records it: original messages AND ecab steps.

    calls: (tool, arguments, tool-result content, revealed slot or None).
    """
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": f"query {tid}"}]
    steps = []
    for i, (tool, args, content, revealed) in enumerate(calls, start=1):
        call_id = f"call_{i}"
        messages.append({"role": "assistant", "content": "Thought: x", "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": tool, "arguments": json.dumps(args)}}]})
        messages.append({"role": "tool", "tool_call_id": call_id, "content": json.dumps(content)})
        ids = [p["product_id"] for p in content.get("products", content.get("reviews", []))]
        steps.append(Step(index=i, call_index=i, tool=tool, arguments=args, is_error="error" in content,
                          error=content.get("error"), revealed_slot=revealed, result_ids=ids))
    finished = termination in ("recommended", "invalid_recommendation", "no_tool_call")
    recommended = [a.get("product_id") for t, a, _, _ in calls if t == "recommend_product"]
    return Trajectory(
        id=tid, intent_category="x", user_query=f"query {tid}", predicted_product_id=predicted, reasoning="r",
        trajectory=messages, model="gpt-x/mini", total_tool_calls=total or len(calls),
        ask_user_calls=sum(c[0] == "ask_user" for c in calls), get_profile_calls=sum(c[0] == "get_user_profile"
                                                                                    for c in calls),
        finished=finished, error=error, termination=termination,
        unit={"task_id": tid, "model": "gpt-x/mini", "budget": 100, "seed": 0, "trial": trial},
        recommended_id=recommended[-1] if recommended else None,
        recommend_call_index=(total or len(calls)) if recommended else None, steps=steps,
        revealed_slots=[c[3] for c in calls if c[3]])


def search(query, ids, page=0):
    return ("search_products", {"query": query, "page": page},
            {"products": [{"product_id": p, "title": "t"} for p in ids], "page": page, "total_found": len(ids)}, None)


def recommend(pid, valid=True):
    return ("recommend_product", {"product_id": pid, "reasoning": "fits"},
            {"recommended_product": {"product_id": pid, "title": "t"} if valid else None, "reasoning": "fits"}, None)


def build_run():
    tasks = make_tasks()
    tasks["T5"] = make_task("T5", "rating_quality", "Computers", [make_tasks()["T1"].rubrics[0]])
    t = tasks
    e1 = episode("T1", "recommended", [
        ("get_user_profile", {}, {"profile": {}}, None),
        ("ask_user", {"question": "color?"}, {"user_response": "a", "turns_remaining": 9}, "s1"),
        ("ask_user", {"question": "material?"}, {"user_response": "a", "turns_remaining": 8}, "s2"),
        ("ask_user", {"question": "more?"}, {"user_response": "I'm not sure.", "turns_remaining": 7}, None),
        search("laptop", ["P-T1", "P-x"]), search("laptop", ["P-y"], page=1),
        ("get_review_content", {"query": "battery", "product_id": "P-T1"},
         {"reviews": [{"product_id": "P-T1", "rating": 5, "title": "t", "text": "ok"}]}, None),
        ("get_product_details", {"product_id": "P-zz"}, {"error": "Product P-zz not found"}, None),
        recommend("P-T1")], predicted="P-T1")
    e2 = episode("T2", "recommended", [search("thing", ["P-other"]), recommend("P-other")], predicted="P-other")
    e3 = episode("T3", "agent_error", [search("pan", [])], error="LLM failed after retries")
    e4 = episode("T4", "invalid_recommendation", [search("cream", ["P-T4"]), recommend("BAD", valid=False)])
    e5 = episode("T5", "budget_exhausted", [search("mouse", ["P-1"]), search("mouse", ["P-2"], page=1)], total=100)
    e6 = episode("T1", "infra_error", [search("laptop", ["P-T1"])], error="connection reset", trial=1)
    judgements = [
        make_judgement(e1, t["T1"], [(r.id, True, "rule", "ok") for r in t["T1"].rubrics]),
        make_judgement(e2, t["T2"], [("r1", True, "rule", "ok"), ("r2", None, "llm", "unparseable"),
                                     ("r3", True, "rule", "ok")]),
        make_judgement(e3, t["T3"], no_product(t["T3"])),
        make_judgement(e4, t["T4"], no_product(t["T4"])),
        make_judgement(e5, t["T5"], no_product(t["T5"])),
        make_judgement(e6, t["T1"], [], runtime_error=True),
    ]
    return tasks, [e1, e2, e3, e4, e5, e6], judgements


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    root = tmp_path_factory.mktemp("orig")
    run_dir = write_run_folder(root, build_run())
    original = reduce_run(run_dir, plots=False)
    paths = export_run(run_dir, root / "export")
    return root, run_dir, original, paths


def read_lines(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_export_writes_exactly_the_spec_keys(exported):
    root, _, _, paths = exported
    names = [p.name for p in paths]
    assert names == ["predictions_gpt-x_mini_trial0.jsonl", "predictions_gpt-x_mini_trial0_evaluation_results.jsonl",
                     "predictions_gpt-x_mini_trial1.jsonl", "predictions_gpt-x_mini_trial1_evaluation_results.jsonl"]
    predictions = read_lines(paths[0])
    assert [p["id"] for p in predictions] == ["T1", "T2", "T3", "T4", "T5"]          # sorted by id
    for line in predictions:
        extra = {"error"} if line["id"] == "T3" else set()
        assert list(line) == list(PREDICTION_KEYS) + sorted(extra)
    evaluation = read_lines(paths[1])
    for line in evaluation:
        extra = {"error"} if line["id"] == "T3" else set()
        assert set(line) == set(PREDICTION_KEYS) | set(EVALUATION_KEYS) | extra
        for result in line["rubric_results"]:
            assert list(result) == list(RUBRIC_RESULT_KEYS)
    t2 = next(line for line in evaluation if line["id"] == "T2")
    assert t2["all_satisfied"] is None and t2["satisfaction_rate"] == 1.0 and t2["failed_rubric_count"] == 0
    t5 = next(line for line in evaluation if line["id"] == "T5")
    assert t5["failed_rubric_ids"] == ["r1"] and t5["failed_reasons"] == ["No valid product recommended"]
    [infra] = read_lines(paths[3])
    assert infra["runtime_error"] is True and infra["rubric_results"] == [] and infra["all_satisfied"] is False
    assert infra["error_message"] == "connection reset"


def test_export_is_the_same_bytes_from_a_folder_of_the_previous_layout(exported, tmp_path):
    """The original-format export reads the run through RunFolder: a folder of the previous layout
    (uncompressed part files, verdicts.jsonl) and the compact one give byte-identical files."""
    root, _, _, paths = exported
    legacy = write_run_folder(tmp_path, build_run(), legacy=True)
    again = export_run(legacy, tmp_path / "export")
    assert [p.name for p in again] == [p.name for p in paths]
    assert all(a.read_bytes() == b.read_bytes() for a, b in zip(again, paths))


def test_steps_are_rebuilt_from_the_messages(exported):
    _, run_dir, _, _ = exported
    tasks, trajectories, _ = build_run()
    e1 = trajectories[0]
    rebuilt = steps_from_messages(e1.trajectory, tasks["T1"])
    keys = ("call_index", "tool", "arguments", "is_error", "revealed_slot", "result_ids")
    assert [[getattr(s, k) for k in keys] for s in rebuilt] == [[getattr(s, k) for k in keys] for s in e1.steps]
    assert rebuilt[7].error == "Product P-zz not found"


def test_round_trip_gives_the_same_summary_numbers(exported):
    root, _, original, paths = exported
    out = root / "runs" / "imported"
    manifest = import_original(out, benchmark=root / "tasks.jsonl", predictions=paths[0], evaluation=paths[1])
    assert manifest["imported_episodes"] == 5 and manifest["model"] == "gpt-x/mini"
    trial1 = import_original(root / "runs" / "imported1", benchmark=root / "tasks.jsonl", evaluation=paths[3])
    assert trial1["imported_episodes"] == 1
    imported = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    infra_only = json.loads((root / "runs" / "imported1" / "summary.json").read_text(encoding="utf-8"))
    assert infra_only["runtime_error_count"] == 1 and infra_only["evaluated_samples"] == 0
    assert (out / "verdicts.llm.jsonl.gz").is_file() and (out / "trajectories" / "part-imported.jsonl.gz").is_file()
    assert RunFolder(out).active_judge() == "llm" and sorted(p.name for p in out.glob("verdicts*")) == [
        "verdicts.llm.jsonl.gz"]
    same = ("overall_accuracy", "overall_rubric_satisfaction", "evaluated_samples", "exact_match_correct",
            "non_exact_but_correct", "judge_only_correct", "judge_misjudged_count", "total_rubrics",
            "satisfied_rubrics", "unscored_rubrics", "by_intent",
            "persona_utilization", "valid_finish_rate", "invalid_recommendation_count",
            "review_evidence_failures", "accuracy_given", "failure_by_source")

    def without_methods(groups):        # the original's verdicts are all LLM ones: only the methods differ
        return {k: {x: y for x, y in v.items() if x != "methods"} for k, v in groups.items()}

    for key in ("by_rubric_type", "by_source"):
        assert without_methods(imported[key]) == without_methods(original[key]), key
        assert sum(g["methods"]["llm"] for g in imported[key].values()) == 7     # T1 4 + T2 3 verdicts
    for key in same:
        if key in ("by_intent",):
            assert imported[key] == {k: {**v, "count": v["count"] - (k == "product_search"),
                                         "runtime_error_count": 0} if k == "product_search" else v
                                     for k, v in original[key].items()}, key
        else:
            assert imported[key] == original[key], key
    for key in ("calls_per_tool_mean", "first_ask_user_position_mean", "search_depth", "profile_read_rate",
                "finish_rate"):
        assert imported["interaction"][key] == original["interaction"][key], key
    assert imported["clarification"]["slots_revealed"] == original["clarification"]["slots_revealed"] == 2
    assert imported["budget"]["accuracy_if_cut_at"] == original["budget"]["accuracy_if_cut_at"]
    assert imported["variance"]["accuracy"] == original["variance"]["accuracy"]
    assert {k: v for k, v in imported["terminations"].items() if v} == {
        "recommended": 2, "invalid_recommendation": 1, "budget_exhausted": 1, "agent_error": 1}


def test_import_errors_name_the_file_line_and_field(exported, tmp_path):
    root, _, _, paths = exported
    broken = tmp_path / "predictions_x.jsonl"
    lines = paths[0].read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    del first["trajectory"]
    broken.write_text("\n".join([lines[1], json.dumps(first)]) + "\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"predictions_x.jsonl:2: field 'trajectory': required field is missing"):
        import_original(tmp_path / "r1", benchmark=root / "tasks.jsonl", predictions=broken)
    partial = tmp_path / "eval.jsonl"
    partial.write_text(paths[1].read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"4 prediction\(s\) have no evaluation line, e.g. id 'T2'"):
        import_original(tmp_path / "r2", benchmark=root / "tasks.jsonl", predictions=paths[0], evaluation=partial)
    with pytest.raises(FormatError, match="already has trajectories"):
        import_original(root / "runs" / "small", benchmark=root / "tasks.jsonl", predictions=paths[0])


def test_import_without_evaluation_and_unknown_ids_are_skipped(exported, tmp_path):
    root, _, _, paths = exported
    extra = json.loads(paths[0].read_text(encoding="utf-8").splitlines()[0])
    extra["id"] = "NOT-IN-BENCHMARK"
    predictions = tmp_path / "p.jsonl"
    predictions.write_text(paths[0].read_text(encoding="utf-8") + json.dumps(extra) + "\n", encoding="utf-8")
    manifest = import_original(tmp_path / "run", benchmark=root / "tasks.jsonl", predictions=predictions)
    assert manifest["skipped_predictions"] == ["NOT-IN-BENCHMARK"] and manifest["imported_episodes"] == 5
    assert not list((tmp_path / "run").glob("verdicts*")) and not (tmp_path / "run" / "summary.json").exists()


def test_cli_export_and_import(exported, tmp_path, capsys):
    root, run_dir, original, _ = exported
    assert cli_main(["export", str(run_dir), "--out", str(tmp_path / "e")]) == 0
    assert "predictions_gpt-x_mini_trial0.jsonl" in capsys.readouterr().out
    assert cli_main(["import", "--predictions", str(tmp_path / "e" / "predictions_gpt-x_mini_trial0.jsonl"),
                     "--evaluation", str(tmp_path / "e" / "predictions_gpt-x_mini_trial0_evaluation_results.jsonl"),
                     "--benchmark", str(root / "tasks.jsonl"), "--out", str(tmp_path / "imp")]) == 0
    out = capsys.readouterr().out
    assert "imported 5 episode(s)" in out and f"accuracy {original['overall_accuracy'] * 100:.1f}%" in out
    assert (tmp_path / "imp" / "plots" / "accuracy_by_intent.png").is_file()
    assert cli_main(["import", "--benchmark", str(root / "tasks.jsonl"), "--out", str(tmp_path / "x")]) == 2
    assert "give --predictions, --evaluation or both" in capsys.readouterr().err

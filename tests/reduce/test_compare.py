"""`python -m ecab.reduce compare` on two synthetic run folders: table rows, CSV content, files, CLI."""
from __future__ import annotations

import csv
import io
import json

import pytest
from test_reduce import make_run, write_run_folder

from ecab.reduce.__main__ import main as cli_main
from ecab.reduce.compare import compare_runs, row_labels
from ecab.runs import RunFolder


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("compare")
    full = write_run_folder(root / "a", make_run(budget=100))
    short = write_run_folder(root / "b", make_run(budget=50))
    # the second run: another model, and E2 (T2, non-exact correct) judged wrong
    manifest = json.loads((short / "manifest.json").read_text(encoding="utf-8"))
    (short / "manifest.json").write_text(json.dumps({**manifest, "model": "m2"}), encoding="utf-8")
    folder = RunFolder(short)
    edited = []
    for j in folder.read_verdicts():
        if j.id == "T2" and j.predicted_product_id == "P-other":
            j.all_satisfied = j.correct = False
            j.verdicts[1].satisfied = False
        edited.append(j)
    folder.write_verdicts("rules", edited)
    return root, full, short


def test_tables_rows_and_csv(two_runs):
    root, full, short = two_runs
    result = compare_runs([full, short], root / "out", plots=False)
    assert result["labels"] == ["m", "m2"]
    t3 = result["tables"]["table3"]
    assert t3.headers == ["model", "evaluated", "accuracy", "rubric satisfaction", "finish rate", "avg tool calls",
                          "used every call", "ended recommended", "ended invalid recommendation",
                          "ended budget exhausted", "ended agent error", "ended infra error"]
    assert t3.md_rows[0][:3] == ["m", 6, t3.md_rows[0][2]] and t3.md_rows[0][2].startswith("50.0% [")
    assert t3.md_rows[1][2].startswith("33.3% [")                        # E1 E3 correct of 6
    # finish rate, avg calls (30+80+10+100+5+7)/6, every call used by 1 of 6 evaluated, terminations of all 7 episodes
    assert t3.md_rows[0][4:] == ["66.7%", "38.7", "16.7%", "42.9%", "14.3%", "14.3%", "14.3%", "14.3%"]
    rows = list(csv.DictReader(io.StringIO((root / "out" / "table3.csv").read_text(encoding="utf-8"))))
    assert [r["model"] for r in rows] == ["m", "m2"]
    assert float(rows[0]["used_every_call_rate"]) == float(rows[0]["cap_reached_rate"]) == 0.1667 and float(rows[0]["ended_recommended"]) == 0.4286
    assert float(rows[0]["accuracy"]) == 0.5 and float(rows[1]["accuracy"]) == 0.3333
    assert float(rows[0]["accuracy_ci_low"]) <= 0.5 <= float(rows[0]["accuracy_ci_high"])
    assert float(rows[1]["rubric_satisfaction"]) == round(7 / 17, 4)      # one satisfied rubric fewer

    t4 = list(csv.DictReader(io.StringIO((root / "out" / "table4.csv").read_text(encoding="utf-8"))))
    assert list(t4[0])[:4] == ["model", "query", "query_ci_low", "query_ci_high"]
    assert float(t4[0]["query"]) == round(4 / 11, 4) and float(t4[1]["query"]) == round(3 / 11, 4)
    assert float(t4[0]["clarification"]) == 0.75
    md = (root / "out" / "table4.md").read_text(encoding="utf-8")
    assert md.startswith("## Table 4: rubric satisfaction by source") and "| m2 | 27.3% [" in md
    for name in ("table7", "table8", "table9", "compare"):
        assert (root / "out" / f"{name}.md").is_file()
    t8 = list(csv.DictReader(io.StringIO((root / "out" / "table8.csv").read_text(encoding="utf-8"))))
    assert float(t8[0]["ask_user"]) == 1.0 and float(t8[0]["profile_read_rate"]) == 0.5


def test_labels_of_one_model_at_two_budgets():
    summaries = [{"model": "m", "budget": {"budget": 100}}, {"model": "m", "budget": {"budget": 50}},
                 {"model": "x", "budget": {"budget": 50}}]
    assert row_labels(["runs/a", "runs/b", "runs/c"], summaries) == ["m @100", "m @50", "x"]
    same = [{"model": "m", "budget": {"budget": 100}}] * 2
    assert row_labels(["runs/a", "runs/b"], same) == ["m @100 (a)", "m @100 (b)"]


def test_cli_compare_writes_tables_and_plots(two_runs, capsys):
    root, full, short = two_runs
    out = root / "cli-out"
    assert cli_main(["compare", str(full), str(short), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "## Table 3: main results" in printed and "| m2 |" in printed
    assert sorted(p.name for p in (out / "plots").glob("*.png")) == sorted(
        ["accuracy.png", "satisfaction_by_source.png", "accuracy_by_intent.png", "accuracy_vs_budget.png",
         "first_ask_vs_accuracy.png"])
    assert cli_main(["compare", str(root / "missing")]) == 2
    assert "run folder not found" in capsys.readouterr().err


def test_compare_reduces_a_run_without_summary(two_runs):
    root, full, _ = two_runs
    (full / "summary.json").unlink(missing_ok=True)
    result = compare_runs([full], root / "out-single", plots=False)
    assert result["labels"] == ["m"] and (full / "summary.json").is_file()


def test_same_task_set_gives_paired_deltas_and_no_warning(two_runs):
    root, full, short = two_runs
    result = compare_runs([full, short], root / "out-deltas", plots=False)
    assert result["task_sets"]["same"] and result["task_sets"]["warning"] is None
    assert "warning" not in result["markdown"]
    # scored per task, first run: T1 1, T2 1/2, T3 1/2, T4 0; second run T2 0 -> mean 0.5 vs 0.375
    [delta] = result["paired_deltas"]
    assert delta["model"] == "m2" and delta["shared_tasks"] == 4 and delta["value"] == -0.125
    assert delta["low"] < -0.125 < delta["high"] and "Newcombe" in delta["method"]
    assert "| m2 | 4 | -12.5 pts [" in result["markdown"]
    saved = json.loads((root / "out-deltas" / "compare.json").read_text(encoding="utf-8"))
    assert saved["task_sets"]["same"] is True and saved["paired_deltas"][0]["value"] == -0.125


def test_different_task_sets_are_flagged_and_deltas_use_shared_tasks(two_runs, tmp_path, capsys):
    root, full, _ = two_runs
    tasks, trajectories, judgements = make_run()
    fewer = write_run_folder(tmp_path / "c", ({k: t for k, t in tasks.items() if k != "T1"},
                                              [t for t in trajectories if t.id != "T1"],
                                              [j for j in judgements if j.id != "T1"]))
    assert cli_main(["compare", str(full), str(fewer), "--out", str(tmp_path / "out"), "--no-plots"]) == 0
    printed = capsys.readouterr().out
    assert "warning: the runs' task sets differ" in printed and "3 task(s) are in every run (of 4, 3)" in printed
    saved = json.loads((tmp_path / "out" / "compare.json").read_text(encoding="utf-8"))
    assert saved["task_sets"]["same"] is False and saved["task_sets"]["shared_tasks"] == 3
    assert saved["task_sets"]["warning"].startswith("warning: the runs' task sets differ")
    # on T2, T3, T4 both runs score 1/2, 1/2, 0: no difference, where all four tasks would give 0.5 vs 0.3333
    assert saved["paired_deltas"][0]["shared_tasks"] == 3 and saved["paired_deltas"][0]["value"] == 0.0

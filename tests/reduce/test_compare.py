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
    assert t3.headers == ["model", "evaluated", "accuracy", "rubric satisfaction", "finish rate", "avg tool calls"]
    assert t3.md_rows[0][:3] == ["m", 6, t3.md_rows[0][2]] and t3.md_rows[0][2].startswith("50.0% [")
    assert t3.md_rows[1][2].startswith("33.3% [")                        # E1 E3 correct of 6
    assert t3.md_rows[0][4:] == ["66.7%", "38.7"]     # finish rate, avg calls (30+80+10+100+5+7)/6
    rows = list(csv.DictReader(io.StringIO((root / "out" / "table3.csv").read_text(encoding="utf-8"))))
    assert [r["model"] for r in rows] == ["m", "m2"]
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

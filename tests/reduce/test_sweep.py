"""The sweep table (ecab.reduce.sweep.write_sweep_table) on real small run folders: three finished runs of
`ecab.run` (two models, two budgets, two task sets) and a failed job's folder."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import SMALL_RUN
from ecab.reduce.sweep import FAILED, baseline_index, numeric_setting, sweep_markdown, write_sweep_table


@pytest.fixture(scope="module")
def sweep_runs(small_run_cache, tmp_path_factory) -> list[Path]:
    from ecab.config import load_config
    from ecab.run import main_job

    runs = tmp_path_factory.mktemp("sweep-runs")
    common = [*SMALL_RUN, f"cache_dir={small_run_cache}", f"run.dir={runs}"]
    folders = []
    for name, extra in [("a", ["model=oracle", "budget=50", "benchmark.limit=2"]),
                        ("b", ["model=random", "budget=50", "benchmark.limit=2"]),
                        ("c", ["model=oracle", "budget=2", "benchmark.limit=3"])]:
        main_job(load_config([*common, *extra, f"run.name={name}"]))
        folders.append(runs / name)
    failed = runs / "d"           # a job that died before its summary: only its config
    failed.mkdir()
    (failed / "config.yaml").write_text((runs / "b" / "config.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    return [*folders, failed]


@pytest.mark.slow
def test_sweep_table_of_real_runs(sweep_runs, tmp_path):
    out = tmp_path / "sweep"
    result = write_sweep_table(out, sweep_runs)
    saved = json.loads((out / "sweep.json").read_text(encoding="utf-8"))
    assert saved["runs"] == [str(p) for p in sweep_runs] == result["runs"]
    assert saved["varying_settings"] == ["model", "benchmark.limit", "budget"]   # groups, then config order
    rows = {r["name"]: r for r in saved["rows"]}
    assert rows["a"]["settings"] == {"model": "oracle", "benchmark.limit": 2, "budget": 50}
    assert rows["d"]["status"] == FAILED and "accuracy" not in rows["d"]
    a, b, c = rows["a"], rows["b"], rows["c"]
    assert a["accuracy"] == 1.0 and a["accuracy_ci"]["method"] == "wilson"
    assert a["accuracy_ci"]["high"] == 1.0 and a["accuracy_ci"]["low"] < 0.9      # never [1, 1]
    assert c["accuracy"] == 0.0 and c["accuracy_ci"]["high"] > 0.1 and c["cap_reached_rate"] == 1.0
    assert a["episodes"] == b["episodes"] == 2 and c["episodes"] == 3
    assert set(a) >= {"rubric_satisfaction", "avg_tool_calls", "cap_reached_rate", "termination_shares"}
    # deltas against the first finished run (a), on the tasks both ran; c ran 3 tasks, 2 of them a's
    assert saved["baseline"] == str(sweep_runs[0]) and saved["baselines"] == [str(sweep_runs[0])]
    assert a["accuracy_delta"]["is_baseline"] and a["accuracy_delta"]["shared_tasks"] == 2
    assert {r["accuracy_delta"]["baseline"] for r in (a, b, c)} == {str(sweep_runs[0])}
    assert not b["accuracy_delta"]["is_baseline"] and not c["accuracy_delta"]["is_baseline"]
    assert b["accuracy_delta"]["value"] == pytest.approx(b["accuracy"] - 1.0, abs=1e-4)
    assert c["accuracy_delta"] == {**c["accuracy_delta"], "shared_tasks": 2, "value": -1.0}
    assert c["accuracy_delta"]["low"] > -1.0 or c["accuracy_delta"]["high"] < 0    # an interval, not a point
    assert saved["task_sets"]["same"] is False and saved["task_sets"]["shared_tasks"] == 2
    md = (out / "sweep.md").read_text(encoding="utf-8")
    assert "| run | model | benchmark.limit | budget | status |" in md
    assert "| used every call | cut off at the cap |" in md
    assert "| 100.0% | 100.0% | 3 |" in md             # c: every call used, every episode cut off (budget 2)
    assert f"| d | random | 2 | 50 | {FAILED} |" in md
    assert "warning: the runs' task sets differ" in md and "Newcombe" in md
    assert saved["plot"] == "sweep.png" and saved["plot_setting"] == "budget"
    assert (out / "sweep.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow
def test_a_sweep_without_a_numeric_setting_plots_accuracy_per_run(sweep_runs, tmp_path):
    result = write_sweep_table(tmp_path / "models", sweep_runs[:2])      # a and b differ in the model only
    assert result["varying_settings"] == ["model"] and result["plot_setting"] is None
    assert result["plot"] == "sweep.png" and (tmp_path / "models" / "sweep.png").read_bytes()[:4] == b"\x89PNG"
    assert "![accuracy per run](sweep.png)" in (tmp_path / "models" / "sweep.md").read_text(encoding="utf-8")


def test_each_run_is_paired_with_the_first_run_of_its_own_task_set():
    a, b = {"t1", "t2"}, {"t3", "t4"}
    # a model x seed sweep with shuffled tasks: seed 1 runs task set a, seed 2 task set b
    keys = [a, b, a, b]
    assert [baseline_index(i, keys) for i in range(4)] == [0, 1, 0, 1]
    # no earlier run with the same tasks: the first earlier one sharing any; an unreadable run pairs with none
    assert [baseline_index(i, [a, a | b, None, b]) for i in range(4)] == [0, 0, 2, 1]


def test_a_seed_is_never_the_plots_axis():
    rows = [{"status": "ok", "settings": {"seed": s, "model.temperature": t}} for s, t in [(1, 0.0), (2, 0.5)]]
    assert numeric_setting(["seed", "model.temperature"], rows) == "model.temperature"
    assert numeric_setting(["seed"], rows[:2]) is None


def test_deltas_name_their_baseline_when_a_sweep_has_several():
    def row(name, delta):
        return {"name": name, "status": "ok", "settings": {"seed": name[-1]}, "accuracy": 0.5,
                "accuracy_ci": {"low": 0.2, "high": 0.8}, "rubric_satisfaction": 0.7, "avg_tool_calls": 9,
                "used_every_call_rate": 0.0, "cap_reached_rate": 0.0, "episodes": 10, "accuracy_delta": delta}
    first = {"shared_tasks": 10, "value": 0.0, "low": -0.2, "high": 0.2, "baseline": "/r/h-s1", "is_baseline": True}
    second = {**first, "baseline": "/r/h-s2"}
    other = {"shared_tasks": 10, "value": -0.3, "low": -0.5, "high": -0.1, "baseline": "/r/h-s2", "is_baseline": False}
    result = {"varying_settings": ["seed"], "task_sets": None, "plot": None, "plot_setting": None,
              "baseline": "/r/h-s1", "baselines": ["/r/h-s1", "/r/h-s2"],
              "rows": [row("h-s1", first), row("h-s2", second), row("r-s2", other)]}
    md = sweep_markdown(result)
    assert "| baseline |" in md and "-30.0 pts [-50.0, -10.0] (n=10, vs h-s2) |" in md
    assert "Baselines, one per task set (each delta names its own): /r/h-s1, /r/h-s2" in md


def test_sweep_of_failed_jobs_only_never_crashes(tmp_path):
    empty = tmp_path / "never-started"
    empty.mkdir()
    result = write_sweep_table(tmp_path / "sweep", [empty, tmp_path / "missing"])
    assert [r["status"] for r in result["rows"]] == [FAILED, FAILED]
    assert result["baseline"] is None and result["plot"] is None
    assert (tmp_path / "sweep" / "sweep.md").is_file()

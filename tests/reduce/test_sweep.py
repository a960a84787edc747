"""The sweep table (ecab.reduce.sweep.write_sweep_table) on real small run folders: three finished runs of
`ecab.run` (two models, two budgets, two task sets) and a failed job's folder."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import SMALL_RUN
from ecab.reduce.sweep import FAILED, write_sweep_table


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
    # deltas against the first finished run (a), on the tasks both ran
    assert saved["baseline"] == str(sweep_runs[0])
    assert a["accuracy_delta"]["value"] == 0.0 and a["accuracy_delta"]["shared_tasks"] == 2
    assert b["accuracy_delta"]["value"] == pytest.approx(b["accuracy"] - 1.0, abs=1e-4)
    assert c["accuracy_delta"] == {**c["accuracy_delta"], "shared_tasks": 2, "value": -1.0}
    assert c["accuracy_delta"]["low"] > -1.0 or c["accuracy_delta"]["high"] < 0    # an interval, not a point
    assert saved["task_sets"]["same"] is False and saved["task_sets"]["shared_tasks"] == 2
    md = (out / "sweep.md").read_text(encoding="utf-8")
    assert "| run | model | benchmark.limit | budget | status |" in md
    assert f"| d | random | 2 | 50 | {FAILED} |" in md
    assert "warning: the runs' task sets differ" in md and "Newcombe" in md
    assert saved["plot"] == "sweep.png" and saved["plot_setting"] == "budget"
    assert (out / "sweep.png").read_bytes()[:4] == b"\x89PNG"


def test_sweep_of_failed_jobs_only_never_crashes(tmp_path):
    empty = tmp_path / "never-started"
    empty.mkdir()
    result = write_sweep_table(tmp_path / "sweep", [empty, tmp_path / "missing"])
    assert [r["status"] for r in result["rows"]] == [FAILED, FAILED]
    assert result["baseline"] is None and result["plot"] is None
    assert (tmp_path / "sweep" / "sweep.md").is_file()

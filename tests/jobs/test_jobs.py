"""jobs/ as jobs/README.md runs them (`python jobs/sweep.py ...`, `python jobs/budget_study.py ...`), in a child
process from the repository root, on the small generated benchmark the `python -m ecab.run` tests share
(tests/conftest.py: SMALL_RUN, small_run_cache). Without RAY_ADDRESS the jobs run on this machine: the sweep
with runner=local, the budget study on the local Ray it starts."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SMALL_RUN

ROOT = Path(__file__).resolve().parents[2]
JOBS = ROOT / "jobs"


def job(script: str, *args: str, cache: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}   # never a cluster of the caller's
    env["ECAB_CACHE_DIR"] = str(cache)
    done = subprocess.run([sys.executable, str(JOBS / script), *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    return done


def summary(folder: Path) -> dict:
    return json.loads((folder / "summary.json").read_text(encoding="utf-8"))


def test_sweep_argv_is_a_ray_multirun_unless_told_otherwise():
    spec = importlib.util.spec_from_file_location("sweep", JOBS / "sweep.py")
    sweep = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sweep)
    assert sweep.sweep_argv(["model=a,b"]) == ["ecab.run", "-m", "runner=ray", "model=a,b"]
    assert sweep.sweep_argv(["-m", "runner=local"]) == ["ecab.run", "-m", "runner=local"]


def test_a_sweep_writes_one_run_folder_per_combination(small_run_cache, tmp_path):
    runs = tmp_path / "runs"
    done = job("sweep.py", "model=oracle,random", "benchmark.limit=2", "runner=local", *SMALL_RUN,
               f"run.dir={runs}", cache=small_run_cache)
    assert "Launching 2 jobs" in done.stdout + done.stderr
    oracle, rand = summary(runs / "oracle-b100-generated"), summary(runs / "random-b100-generated")
    assert oracle["total_samples"] == rand["total_samples"] == 2
    assert oracle["overall_accuracy"] == 1.0 and rand["overall_accuracy"] < 1.0
    for name in ("oracle-b100-generated", "random-b100-generated"):
        assert (runs / name / "report.html").is_file() and (runs / name / "manifest.json").is_file()
    assert (runs / "multirun" / "multirun.yaml").is_file()


@pytest.mark.slow
def test_a_budget_study_tabulates_every_budget_on_a_local_ray(small_run_cache, tmp_path):
    runs = tmp_path / "runs"
    job("budget_study.py", "--budgets", "2,50", "model=oracle", "benchmark.limit=2", "runner.workers=1",
        *SMALL_RUN, f"run.dir={runs}", cache=small_run_cache)
    rows = json.loads((runs / "oracle-budget-study" / "budget_study.json").read_text(encoding="utf-8"))
    assert [r["budget"] for r in rows] == [2, 50] and all(r["episodes"] == 2 for r in rows)
    assert rows[0]["cap_reached_rate"] == 1.0 and rows[1]["accuracy"] == 1.0
    assert "| 50 | 100.0% |" in (runs / "oracle-budget-study" / "budget_study.md").read_text(encoding="utf-8")
    assert summary(runs / "oracle-b2-generated")["total_samples"] == 2
    assert summary(runs / "oracle-b50-generated")["overall_accuracy"] == 1.0

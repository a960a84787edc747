"""A benchmark file whose targets the catalog does not hold is refused before any episode runs (issue 29 item 1;
ecab/construct/target_check.py), unless benchmark.allow_missing_targets. Real runs on the small generated
benchmark's catalog (tests/conftest.py SMALL_RUN)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SMALL_RUN
from ecab.config import ConfigError, load_config
from ecab.run import load_tasks, main_job, open_catalog
from ecab.schema import Task, write_tasks

ROOT = Path(__file__).resolve().parents[1]
ABSENT = "NOT-IN-THE-CATALOG"


@pytest.fixture(scope="module")
def task_files(small_run_cache, tmp_path_factory) -> dict[str, Path]:
    """Three tasks of the small generated benchmark (their targets are in its catalog), and the same three with
    one target replaced by a product the catalog does not have."""
    cfg = load_config([*SMALL_RUN, f"cache_dir={small_run_cache}", "benchmark.limit=3"])
    tasks = load_tasks(cfg, open_catalog(cfg))
    folder = tmp_path_factory.mktemp("task-files")
    broken = tasks[0].to_dict()
    broken["target_product"] = {**broken["target_product"], "product_id": ABSENT}
    write_tasks(folder / "good.jsonl", tasks)
    write_tasks(folder / "mixed.jsonl", [Task.from_dict(broken), *tasks[1:]])
    return {"good": folder / "good.jsonl", "mixed": folder / "mixed.jsonl"}


def file_run(cache: Path, run_dir: Path, path: Path, *overrides: str) -> dict:
    return main_job(load_config([*SMALL_RUN, f"cache_dir={cache}", f"run.dir={run_dir}", "benchmark=file",
                                 f"benchmark.path={path}", *overrides]))


def test_missing_targets_are_refused_before_the_run_folder(small_run_cache, task_files, tmp_path):
    runs = tmp_path / "runs"
    with pytest.raises(ConfigError) as refused:
        file_run(small_run_cache, runs, task_files["mixed"], "model=oracle")
    message = str(refused.value)
    assert "\n" not in message
    assert "1 of 3 tasks' targets are missing from catalog=synthetic" in message
    assert "catalog=targets" in message and "benchmark.allow_missing_targets=true" in message
    assert not runs.exists()


def test_allow_missing_targets_runs_anyway_and_says_so(small_run_cache, task_files, tmp_path, capsys):
    summary = file_run(small_run_cache, tmp_path, task_files["mixed"], "model=oracle",
                       "benchmark.allow_missing_targets=true")
    assert summary["total_samples"] == 3
    warned = [line for line in capsys.readouterr().out.splitlines() if line.startswith("warning:")]
    assert any("1 of 3 tasks' targets are missing" in line and "running anyway" in line for line in warned)


def test_the_budget_study_refuses_them_too(small_run_cache, task_files, tmp_path, capsys):
    from ecab.study import main as study_main
    runs = tmp_path / "runs"
    with pytest.raises(SystemExit) as exit_info:
        study_main(["--budgets", "2,5", *SMALL_RUN, f"cache_dir={small_run_cache}", f"run.dir={runs}",
                    "benchmark=file", f"benchmark.path={task_files['mixed']}"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "1 of 3 tasks' targets are missing from catalog=synthetic" in err[0]
    assert not runs.exists()


def test_a_file_whose_targets_are_all_there_runs(small_run_cache, task_files, tmp_path):
    summary = file_run(small_run_cache, tmp_path, task_files["good"], "model=oracle")
    assert summary["total_samples"] == 3 and summary["overall_accuracy"] == 1.0


def test_the_command_says_it_in_one_line(small_run_cache, task_files, tmp_path):
    runs = tmp_path / "runs"
    env = {**os.environ, "ECAB_CACHE_DIR": str(small_run_cache)}
    done = subprocess.run([sys.executable, "-m", "ecab.run", *SMALL_RUN, "benchmark=file",
                           f"benchmark.path={task_files['mixed']}", f"run.dir={runs}"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert lines[0].startswith("ecab: error:") and "targets are missing from catalog=synthetic" in lines[0]
    assert not runs.exists()

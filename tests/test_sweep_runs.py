"""`python -m ecab.run -m ...` (issue 29 item 2): every job of a sweep runs into its own run folder (named by
ecab/config/naming.py, resumable per job), no empty folder is left, and the sweep's table is written into
runs/<sweep name>/ by the Hydra callback (ecab/reduce/sweep_callback.py), also when a job fails. Real sweeps
in a child process on the small generated benchmark (tests/conftest.py SMALL_RUN)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SMALL_RUN
from ecab.config import load_config
from ecab.config.naming import sweep_name
from ecab.reduce.sweep_callback import RECORD
from ecab.run import run_name

ROOT = Path(__file__).resolve().parents[1]

# A stand-in table writer (the callback's `writer` key): records what the hook handed it.
DOUBLE = '''
import json
from pathlib import Path

def write(sweep_dir, run_dirs):
    (Path(sweep_dir) / "double.json").write_text(json.dumps([str(p) for p in run_dirs]))
    return {}
'''


def sweep(cache: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    environment = {**(env or os.environ), "ECAB_CACHE_DIR": str(cache)}
    return subprocess.run([sys.executable, "-m", "ecab.run", "-m", *args], cwd=ROOT, env=environment,
                          capture_output=True, text=True, timeout=900)


def empty_folders(root: Path) -> list[Path]:
    return [Path(d) for d, dirs, files in os.walk(root) if not dirs and not files]


@pytest.mark.slow
def test_a_sweep_writes_one_folder_per_job_and_the_table(small_run_cache, tmp_path):
    runs = tmp_path / "runs"
    swept = ["model=oracle,random", "benchmark.limit=2,3"]
    done = sweep(small_run_cache, *swept, *SMALL_RUN, f"run.dir={runs}")
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    jobs = [[*SMALL_RUN, m, f"benchmark.limit={n}"] for m in ("model=oracle", "model=random") for n in (2, 3)]
    names = {run_name(load_config(job)) for job in jobs}
    assert len(names) == 4 and "oracle-b100-generated-products600-n_per_intent2-limit2" in names
    table = runs / sweep_name([*swept, *SMALL_RUN, f"run.dir={runs}"])
    assert {p.name for p in runs.iterdir()} == names | {table.name}
    assert empty_folders(runs) == []
    assert {Path(line).name for line in (table / RECORD).read_text().splitlines()} == names
    assert (table / "multirun.yaml").is_file() and (table / "sweep.md").is_file()
    assert {Path(run).name for run in json.loads((table / "sweep.json").read_text())["runs"]} == names

    again = sweep(small_run_cache, *reversed(swept), *SMALL_RUN, f"run.dir={runs}")   # the same sweep
    assert again.returncode == 0, (again.stdout + again.stderr)[-4000:]
    assert again.stdout.count("resuming:") == 4
    assert {p.name for p in runs.iterdir()} == names | {table.name} and empty_folders(runs) == []


@pytest.mark.slow
def test_a_job_that_cannot_run_stops_the_sweep_before_any_job(small_run_cache, tmp_path):
    runs = tmp_path / "runs"
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}    # gpt-5's job cannot run: no key
    done = sweep(small_run_cache, "model=oracle,gpt-5", "benchmark.limit=2", *SMALL_RUN, f"run.dir={runs}", env=env)
    assert done.returncode == 2, (done.stdout + done.stderr)[-4000:]
    errors = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and "model=gpt-5" in errors[0] and "OPENAI_API_KEY" in errors[0]
    assert not runs.exists()            # oracle's job, listed first, never ran


def mixed_task_file(cache: Path, path: Path) -> Path:
    """Three tasks of the small benchmark, the first one's target replaced by a product the catalog lacks."""
    from ecab.run import load_tasks, open_catalog
    from ecab.schema import Task, write_tasks
    cfg = load_config([*SMALL_RUN, f"cache_dir={cache}", "benchmark.limit=3"])
    tasks = load_tasks(cfg, open_catalog(cfg))
    broken = tasks[0].to_dict()
    broken["target_product"] = {**broken["target_product"], "product_id": "NOT-IN-THE-CATALOG"}
    write_tasks(path, [Task.from_dict(broken), *tasks[1:]])
    return path


@pytest.mark.slow
def test_a_job_failing_at_run_time_leaves_the_others_and_a_row_in_the_table(small_run_cache, tmp_path):
    runs = tmp_path / "runs"
    tasks = mixed_task_file(small_run_cache, tmp_path / "mixed.jsonl")
    # one job refuses the file (a target missing from the catalog), the other runs it anyway
    swept = ["benchmark.allow_missing_targets=false,true", "model=oracle", "benchmark=file",
             f"benchmark.path={tasks}", *SMALL_RUN, f"run.dir={runs}"]
    done = sweep(small_run_cache, *swept)
    assert done.returncode == 2, (done.stdout + done.stderr)[-4000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("ecab: error:")]
    assert len(errors) == 1 and "job benchmark.allow_missing_targets=false" in errors[0].lower()   # Hydra: False
    assert "1 job(s) failed, listed there" in done.stdout
    table = runs / sweep_name(swept)
    saved = json.loads((table / "sweep.json").read_text())
    assert [r["status"] for r in saved["rows"]] == ["ok", "failed/unfinished"]
    assert saved["failed_jobs"][0].lower().startswith("benchmark.allow_missing_targets=false")
    assert "| failed/unfinished |" in (table / "sweep.md").read_text()


@pytest.mark.slow
def test_a_writer_of_the_older_signature_gets_the_finished_runs(small_run_cache, tmp_path):
    runs = tmp_path / "runs"
    (tmp_path / "double").mkdir()
    (tmp_path / "double" / "sweep_double.py").write_text(DOUBLE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "double"), os.environ.get("PYTHONPATH", "")])}
    tasks = mixed_task_file(small_run_cache, tmp_path / "mixed.jsonl")
    swept = ["benchmark.allow_missing_targets=false,true", "model=oracle", "benchmark=file",
             f"benchmark.path={tasks}", *SMALL_RUN, f"run.dir={runs}"]
    done = sweep(small_run_cache, *swept, "hydra.callbacks.sweep_table.writer=sweep_double:write", env=env)
    assert done.returncode == 2, (done.stdout + done.stderr)[-4000:]
    table = runs / sweep_name(swept)
    finished = [Path(p).name for p in json.loads((table / "double.json").read_text())]
    assert len(finished) == 1 and {p.name for p in runs.iterdir()} == {finished[0], table.name}
    assert empty_folders(runs) == []

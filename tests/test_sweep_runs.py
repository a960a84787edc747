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
def test_a_failing_job_leaves_the_others_table(small_run_cache, tmp_path):
    runs = tmp_path / "runs"
    (tmp_path / "double").mkdir()
    (tmp_path / "double" / "sweep_double.py").write_text(DOUBLE)
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}    # gpt-5's job fails: no key
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "double"), env.get("PYTHONPATH", "")])
    swept = ["model=gpt-5,oracle", "benchmark.limit=2", *SMALL_RUN, f"run.dir={runs}"]
    done = sweep(small_run_cache, *swept, "hydra.callbacks.sweep_table.writer=sweep_double:write", env=env)
    assert done.returncode == 2, (done.stdout + done.stderr)[-4000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("ecab: error:")]
    assert len(errors) == 1 and "job model=gpt-5" in errors[0] and "OPENAI_API_KEY" in errors[0]
    oracle = run_name(load_config([*SMALL_RUN, "model=oracle", "benchmark.limit=2"]))
    table = runs / sweep_name(swept)
    assert [Path(p).name for p in json.loads((table / "double.json").read_text())] == [oracle]
    assert {p.name for p in runs.iterdir()} == {oracle, table.name} and empty_folders(runs) == []

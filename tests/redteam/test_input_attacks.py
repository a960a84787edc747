"""Red-team attacks through ecab's inputs (issue 30 items 3, 4, 5): a refused config must leave no run folder, an
empty benchmark file must be named, and NaN/Infinity, which Python's json accepts and standard JSON does not,
must be refused where ecab reads JSONL (file:line) and never written where it writes records."""
import gzip
import json
import math
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from ecab.config import ConfigError, load_config
from ecab.run import load_tasks, main_job, open_catalog
from ecab.runs import RunFolder
from ecab.schema import FormatError, Task, Trajectory, iter_jsonl, read_tasks, write_jsonl
from conftest import SMALL_RUN

ROOT = Path(__file__).resolve().parents[2]
CONSTANTS = ["NaN", "Infinity", "-Infinity"]


def task_line(i: int, **extra) -> dict:
    return {"id": f"t{i}", "intent_category": "product_search", "user_query": "a red mug",
            "target_product": {"product_id": f"P{i}", "title": "Red mug"}, "rubrics": [], **extra}


def cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ecab.run", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


def one_error_line(proc: subprocess.CompletedProcess) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("ecab: error: "), proc.stderr[-3000:]
    return lines[0]


# ------------------------------------------------------------------ item 3: config checks before any folder

@pytest.mark.parametrize("override", ["runner.name=bogus", "runner.name=ray", "runner=ray runner.name=local"])
def test_a_refused_runner_config_leaves_no_run_folder(tmp_path, small_run_cache, override):
    """runner.name was checked only when the runner was made, after the run folder existed."""
    proc = cli(*SMALL_RUN, f"cache_dir={small_run_cache}", f"run.dir={tmp_path}/runs", *override.split())
    assert "runner.name" in one_error_line(proc)
    assert not (tmp_path / "runs").exists()


def test_processes_zero_leaves_no_run_folder(tmp_path, small_run_cache):
    with pytest.raises(ConfigError, match="runner.processes must be auto or a whole number >= 1, got 0"):
        main_job(load_config([*SMALL_RUN, f"cache_dir={small_run_cache}", f"run.dir={tmp_path}/runs",
                              "runner.processes=0"]))
    assert not (tmp_path / "runs").exists()


# ------------------------------------------------------------------------- item 4: an empty benchmark file

@pytest.mark.parametrize("content", ["", "\n\n  \n"])
def test_an_empty_benchmark_file_is_named(tmp_path, content):
    path = tmp_path / "empty.jsonl"
    path.write_text(content)
    proc = cli("benchmark=file", f"benchmark.path={path}", f"cache_dir={tmp_path}/cache",
               f"run.dir={tmp_path}/runs", "run.progress=false")
    assert one_error_line(proc) == f"ecab: error: {path}: the benchmark file holds no tasks (it is empty)"
    assert not (tmp_path / "runs").exists() and not (tmp_path / "cache").exists(), "refused before any build"


# ----------------------------------------------------------------------------- item 5: NaN and Infinity

@pytest.mark.parametrize("constant", CONSTANTS)
def test_a_benchmark_line_with_a_non_standard_number_is_refused_with_file_and_line(tmp_path, constant):
    path = tmp_path / "bench.jsonl"
    bad = json.dumps(task_line(2)).replace('"rubrics": []', f'"rubrics": [], "validation_passed": {constant}')
    path.write_text(json.dumps(task_line(1)) + "\n" + bad + "\n")
    with pytest.raises(FormatError) as info:
        read_tasks(path)
    assert str(info.value) == f"{path}:2: {constant} is not a JSON number (standard JSON has no NaN or Infinity)"
    proc = cli("benchmark=file", f"benchmark.path={path}", f"cache_dir={tmp_path}/cache", f"run.dir={tmp_path}/runs")
    assert one_error_line(proc) == f"ecab: error: {info.value}"
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz"])
def test_every_jsonl_reader_refuses_nan(tmp_path, suffix):
    """The one reader every JSONL input goes through (catalog product files, verdicts, benchmark files)."""
    path = tmp_path / f"products{suffix}"
    data = b'{"parent_asin": "A1", "price": 3.5}\n{"parent_asin": "A2", "average_rating": NaN}\n'
    path.write_bytes(gzip.compress(data) if suffix.endswith(".gz") else data)
    with pytest.raises(FormatError, match=rf"^{path}:2: NaN is not a JSON number"):
        list(iter_jsonl(path))


def test_a_task_holding_nan_is_not_written(tmp_path):
    """The writer refuses what the readers refuse; the file it would have replaced stays as it was."""
    path = tmp_path / "bench.jsonl"
    write_jsonl(path, [Task.from_dict(task_line(1))])
    before = path.read_bytes()
    poisoned = Task.from_dict(task_line(2, validation_passed=math.nan))
    with pytest.raises(FormatError, match=r"Task 't2' holds NaN or Infinity"):
        write_jsonl(path, [Task.from_dict(task_line(1)), poisoned])
    assert path.read_bytes() == before


def test_a_trajectory_with_a_models_nan_argument_is_written_as_standard_json(tmp_path):
    """A model may send `{"max_price": NaN}` (Python's json parses it): the finished episode is kept, written
    as standard JSON with the number's name as a string."""
    traj = Trajectory.from_dict({"id": "t1", "unit": {"task_id": "t1", "model": "m", "budget": 5, "seed": 0,
                                                      "trial": 0},
                                 "trajectory": [{"tool": "search", "arguments": {"max_price": math.nan,
                                                                                  "min_price": -math.inf}}]})
    folder = RunFolder(tmp_path / "run").create()
    folder.append_trajectory("local", traj)
    text = gzip.decompress(folder.part_path("local").read_bytes()).decode()
    strict = json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} written"))
    assert strict["trajectory"][0]["arguments"] == {"max_price": "NaN", "min_price": "-Infinity"}
    assert [t.id for t in folder.iter_trajectories()] == ["t1"]


# ------------------------------------------------------------------ item 6: Ray's warnings before ecab's error

@pytest.mark.xdist_group("ray")    # starts a local Ray of its own
def test_with_runner_ray_ecabs_error_is_the_first_stderr_line(tmp_path, small_run_cache):
    """A runner=ray run against an endpoint that refuses every connection: Ray's start-up warnings ("Token
    authentication is enabled for this Ray cluster...") came before ecab's one-line error."""
    cached = load_config([*SMALL_RUN, f"cache_dir={small_run_cache}", "benchmark.limit=2"])
    load_tasks(cached, open_catalog(cached))     # built here first: no build progress on the run's stderr
    with socket.socket() as reserved:            # bound, never listening: every connection to it is refused
        reserved.bind(("127.0.0.1", 0))
        port = reserved.getsockname()[1]
        proc = subprocess.run([sys.executable, "-m", "ecab.run", *SMALL_RUN, f"cache_dir={small_run_cache}",
                               f"run.dir={tmp_path}/runs", "runner=ray", "model=sim",
                               f"model.base_url=http://127.0.0.1:{port}/v1", "benchmark.limit=2",
                               "model.endpoint_check=false"],   # the runner meets the refusal, not the check
                              cwd=ROOT, capture_output=True, text=True, timeout=600)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode != 0 and lines, proc.stdout[-2000:]
    assert lines[0].startswith("ecab: error: ") and "127.0.0.1" in lines[0], proc.stderr[-3000:]


@pytest.mark.parametrize("constant", CONSTANTS)
def test_a_part_file_holding_nan_is_refused_by_file_and_line(tmp_path, constant):
    """A trajectory part file is read leniently where a kill may have torn its last record, but a complete
    record with NaN or Infinity is no torn write: ecab writes standard JSON only, so it is corruption, named."""
    from ecab.runs.records import read_part
    from ecab.schema import Trajectory, dumps

    good = dumps(Trajectory(id="t1", unit={"task_id": "t1"}))
    bad = dumps(Trajectory(id="t2", unit={"task_id": "t2"})).replace('"wall_s": 0.0', f'"wall_s": {constant}')
    assert bad != dumps(Trajectory(id="t2", unit={"task_id": "t2"}))
    path = tmp_path / "part-local.jsonl"
    path.write_text(f"{good}\n{bad}\n", encoding="utf-8")
    with pytest.raises(FormatError, match=rf"^{path}:2: {constant} is not a JSON number"):
        list(read_part(path))

"""Checkpoint and resume: `kill -9` in the middle of `python -m ecab.run`, then the same command again,
gives exactly one trajectory per unit and the summary of an uninterrupted run; torn and duplicate records in
the part files (gzip members, docs/architecture.md §8) are read as the last complete record per unit."""
import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import untimed

from ecab.config import load_config
from ecab.reduce import reduce_run
from ecab.run import main_job
from ecab.runs import RunFolder
from ecab.runs.records import part_record, read_part
from ecab.schema import Trajectory

ROOT = Path(__file__).resolve().parents[2]
N_TASKS = 6
BASE = ["model=heuristic", "catalog=targets", "benchmark=file", "catalog.products=150",
        f"benchmark.limit={N_TASKS}", "budget=30", "run.progress=false"]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("resume-cache")


@pytest.fixture(scope="module")
def base(cache_dir, released_samples):
    """The module's overrides: the released samples, their targets as the catalog, one cache for all runs."""
    return [*BASE, f"benchmark.path={released_samples}", f"cache_dir={cache_dir}"]


@pytest.fixture(scope="module")
def uninterrupted(base, tmp_path_factory):
    """The reference: the same run without interruption (it also builds the cached catalog)."""
    run_dir = tmp_path_factory.mktemp("runs")
    cfg = load_config([*base, f"run.dir={run_dir}", "run.name=whole"])
    return main_job(cfg)


def wait_for_records(path: Path, n: int, proc: subprocess.Popen, timeout: float = 120) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        records = sum(1 for _ in read_part(path)) if path.exists() else 0
        if records >= n:
            return records
        if proc.poll() is not None:
            raise AssertionError(f"the run ended before it was killed:\n{proc.stdout.read()}")
        time.sleep(0.05)
    raise AssertionError(f"{path}: fewer than {n} episodes after {timeout} s")


@pytest.mark.slow
def test_kill_9_then_rerun_equals_an_uninterrupted_run(base, uninterrupted, tmp_path):
    overrides = [*base, f"run.dir={tmp_path}", "run.name=killed"]
    # Slow episodes down (a config knob that never changes results) so the kill lands mid-run.
    slow = [*overrides, "runner.step_delay_s=0.15", "runner.concurrency=2"]
    proc = subprocess.Popen([sys.executable, "-m", "ecab.run", *slow], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    part = tmp_path / "killed" / "trajectories" / "part-local.jsonl.gz"
    try:
        written = wait_for_records(part, 2, proc)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    assert 2 <= written < N_TASKS, "the kill must land mid-run"
    assert not (tmp_path / "killed" / "summary.json").exists()
    # What a kill in the middle of a write leaves behind: a torn last member.
    with part.open("ab") as handle:
        handle.write(gzip.compress(b'{"id": "torn", "trajectory": [{"step": 1}]}\n' * 40)[:-12])

    summary = main_job(load_config(overrides))   # the same command again: resumes

    folder = RunFolder(tmp_path / "killed")
    assert [p.name for p in folder.part_files()] == ["part-local.jsonl.gz", "part-local.2.jsonl.gz"], \
        "the resumed run writes a file of its own, never after the torn bytes"
    latest = folder.latest_trajectories()
    assert len(latest) == N_TASKS and len({k[0] for k in latest}) == N_TASKS, "exactly one per unit"
    manifest = json.loads(folder.manifest_path.read_text())
    assert manifest["runner_stats"]["resumed_units"] >= 2
    assert untimed(summary) == untimed(uninterrupted)


def record(task_id: str, termination: str, predicted: str | None) -> Trajectory:
    return Trajectory(id=task_id, predicted_product_id=predicted, termination=termination,
                      unit={"task_id": task_id, "model": "m", "budget": 5, "seed": 1, "trial": 0})


def test_torn_and_duplicate_records_read_as_one_record_per_unit(tmp_path):
    folder = RunFolder(tmp_path / "run").create()
    folder.append_trajectory("w1", record("b", "infra_error", None))
    folder.append_trajectory("w1", record("b", "recommended", "P1"))
    folder.append_trajectory("w1", record("a", "recommended", "P2"))
    with folder.part_path("w1").open("ab") as handle:
        handle.write(part_record(record("a", "recommended", "TORN"))[:-9])   # killed mid-write
    folder = RunFolder(folder.path)                                        # the next session: a file of its own
    folder.append_trajectory("w1", record("a", "recommended", "P3"))
    folder.append_trajectory("w2", record("b", "infra_error", None))      # a later failed re-run elsewhere
    latest = folder.latest_trajectories()
    assert [k[0] for k in latest] == ["a", "b"], "one record per unit, in unit order"
    assert latest[("a", "m", 5, 1, 0)].predicted_product_id == "P3", "the last complete record wins"
    assert latest[("b", "m", 5, 1, 0)].predicted_product_id == "P1", "a finished record beats a later infra_error"


def to_previous_layout(folder: RunFolder) -> None:
    """Rewrite a finished run folder as the version before compact run folders wrote it: an uncompressed
    part-local.jsonl (the same lines that version wrote), verdicts.jsonl beside an identical
    verdicts.rules.jsonl, no active_judge in the manifest."""
    lines = b"".join(gzip.decompress(p.read_bytes()) for p in folder.part_files())
    for part in folder.part_files():
        part.unlink()
    (folder.trajectories_dir / "part-local.jsonl").write_bytes(lines)
    verdicts = gzip.decompress(folder.judge_file("rules").read_bytes())
    folder.judge_file("rules").unlink()
    for name in ("verdicts.jsonl", "verdicts.rules.jsonl"):
        (folder.path / name).write_bytes(verdicts)
    manifest = json.loads(folder.manifest_path.read_text())
    del manifest["active_judge"]
    folder.manifest_path.write_text(json.dumps(manifest, indent=2))


@pytest.mark.slow
def test_a_run_folder_of_the_previous_layout_reduces_and_resumes(base, uninterrupted, tmp_path):
    overrides = [*base, f"run.dir={tmp_path}", "run.name=old"]
    main_job(load_config(overrides))
    folder = RunFolder(tmp_path / "old")
    written = folder.summary_path.read_text()
    to_previous_layout(folder)
    reduce_run(folder.path, plots=False)           # read as it is: the same summary, byte for byte
    assert folder.summary_path.read_text() == written
    # That version killed after 3 episodes, the 4th torn mid-line: the part file it left.
    part = folder.trajectories_dir / "part-local.jsonl"
    lines = part.read_bytes().splitlines(keepends=True)
    part.write_bytes(b"".join(lines[:3]) + lines[3][:100])
    folder.summary_path.unlink()

    summary = main_job(load_config(overrides))   # resumed by this version

    assert untimed(summary) == untimed(uninterrupted)
    assert json.loads(folder.manifest_path.read_text())["runner_stats"]["resumed_units"] == 3
    assert [p.name for p in folder.part_files()] == ["part-local.jsonl", "part-local.jsonl.gz"]
    assert sorted(p.name for p in folder.path.glob("verdicts*")) == ["verdicts.rules.jsonl.gz"]
    assert folder.active_judge() == "rules"

"""SIGTERM (what `ray job stop`, `kill` and Kubernetes send) stops `python -m ecab.run` the way Ctrl-C does
(ecab/core/signals.py): one line, exit status 143, the finished episodes kept for a re-run to resume."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ecab.runs import RunFolder
from conftest import SMALL_RUN

ROOT = Path(__file__).resolve().parents[1]
# A run that lasts: the LLM code path against the simulator, 200 ms per reply, one episode at a time, three
# trials of every task; it is stopped long before it would end.
SLOW_RUN = ["model=sim", "model.sim.latency=fixed", "model.sim.latency_ms=200", "runner.concurrency=1",
            "trials=3", "run.name=stopped"]
POLL_S = 0.2
GIVE_UP_S = 600   # a guard against a hung child, never a timing assertion


def finished_episodes(folder: RunFolder) -> int:
    try:
        return sum(1 for _ in folder.iter_trajectories())
    except (OSError, EOFError, ValueError):   # a part file being created or appended this instant
        return 0


@pytest.mark.slow
def test_sigterm_stops_a_run_with_one_line_and_keeps_finished_episodes(small_run_cache, tmp_path):
    runs = tmp_path / "runs"
    folder = RunFolder(runs / "stopped")
    child = subprocess.Popen(
        [sys.executable, "-m", "ecab.run", *SMALL_RUN, *SLOW_RUN, f"cache_dir={small_run_cache}",
         f"run.dir={runs}"], cwd=tmp_path, env={**os.environ, "ECAB_CACHE_DIR": str(small_run_cache)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + GIVE_UP_S
        while finished_episodes(folder) == 0:
            assert child.poll() is None, "the run ended before its first episode: " + child.stderr.read()[-2000:]
            assert time.monotonic() < deadline, "no episode finished"
            time.sleep(POLL_S)
        child.send_signal(signal.SIGTERM)
        out, err = child.communicate(timeout=GIVE_UP_S)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 128 + signal.SIGTERM, (out + err)[-3000:]
    # the last line, and the only one about the stop (a first run's catalog build shows progress bars above it)
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines[-1] == ("ecab: error: stopped by SIGTERM; finished episodes are saved, re-run the same command "
                         "to resume"), err[-3000:]
    assert sum("SIGTERM" in line or "Traceback" in line for line in lines) == 1, err[-3000:]
    kept = folder.read_trajectories()     # every record whole: nothing torn by the stop
    assert len(kept) >= 1
    assert all(t.termination != "infra_error" for t in kept)
    assert not (runs / "stopped" / "summary.json").exists()   # stopped before judging, as Ctrl-C would be

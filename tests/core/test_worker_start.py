"""A script that calls ecab at its top level, without `if __name__ == "__main__":`, is re-run by every worker
process multiprocessing spawns; before core/worker_start.py such a worker waited for ever on the build lock its
parent held (ecab.evaluate never returned). Real spawned processes, each run bounded by a subprocess timeout:
a hang fails the test instead of the suite."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SMALL_RUN

ROOT = Path(__file__).resolve().parents[2]

UNGUARDED = '''
from concurrent.futures import ProcessPoolExecutor
import multiprocessing

from ecab.core.worker_start import refuse_in_starting_worker

refuse_in_starting_worker("the script's call")     # the top level: every spawned worker runs it again


def one():
    return 1


if __name__ == "__main__":
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        try:
            print("RESULT", pool.submit(one).result())
        except Exception as exc:
            print("BROKEN", type(exc).__name__)
'''


def run_script(path: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(path)], cwd=path.parent, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})


def test_a_starting_worker_stops_with_one_line_and_the_parent_is_not_left_waiting(tmp_path):
    script = tmp_path / "unguarded.py"
    script.write_text(UNGUARDED, encoding="utf-8")
    done = run_script(script)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "BROKEN BrokenProcessPool" in done.stdout        # the parent sees the worker gone, not a hang
    lines = [line for line in done.stderr.splitlines() if line.startswith("ecab:")]
    assert len(lines) == 1 and f"the script's call was called at the top level of {script}" in lines[0]
    assert 'if __name__ == "__main__":' in lines[0]


def test_outside_a_starting_worker_nothing_happens(tmp_path):
    from ecab.core.worker_start import refuse_in_starting_worker, starting_worker
    assert not starting_worker()
    refuse_in_starting_worker("a call in the main process")      # returns: nothing to refuse


@pytest.mark.slow
def test_evaluate_from_an_unguarded_script_finishes(small_run_cache, tmp_path):
    """The user's case: ecab.evaluate at a script's top level, with a benchmark to construct (construction's
    spawned workers re-run the script). The run finishes in the parent; each worker says why it stopped."""
    script = tmp_path / "user.py"
    overrides = [*SMALL_RUN, "model=oracle", "benchmark.limit=2", "construct.seed=29", f"run.dir={tmp_path / 'runs'}"]
    script.write_text(f"import ecab\nprint('ACCURACY', ecab.evaluate({overrides!r}).accuracy)\n", encoding="utf-8")
    done = run_script(script, env={"ECAB_CACHE_DIR": str(small_run_cache)})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ACCURACY 1.0" in done.stdout
    assert "ecab.evaluate was called at the top level of" in done.stderr

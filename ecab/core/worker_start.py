"""Refuse ecab's work inside a worker process that is still starting (multiprocessing's spawn bootstrap).

A spawned worker (construction's WorkerPool, runner.processes) re-imports the parent's main module to find
the functions it was sent. A user's script that calls `ecab.evaluate(...)` (or builds a catalog or benchmark)
at its top level, without `if __name__ == "__main__":`, therefore calls it again in every worker. There the
call waits on the build lock its own parent holds while the parent waits for the worker: a deadlock with no
output (measured: a 3-task evaluate never returned). Python's own check (`_check_not_importing_main`) fires
only when such a worker starts processes itself, which this one never reaches.

`refuse_in_starting_worker` ends that worker with one line saying what to change; the parent then carries
on without it (construction does the work in-process) or reports the broken pool.
"""
from __future__ import annotations

import multiprocessing
import sys


def starting_worker() -> bool:
    """Is this process a spawned worker still importing its parent's main module? (multiprocessing sets
    `_inheriting` on the current process for exactly that phase; Python's own check reads the same flag.)"""
    return bool(getattr(multiprocessing.current_process(), "_inheriting", False))


def refuse_in_starting_worker(what: str) -> None:
    """Exit this worker with one line (status 2) when `what` is called while it starts; else nothing."""
    if not starting_worker():
        return
    script = getattr(sys.modules.get("__mp_main__") or sys.modules.get("__main__"), "__file__", None) or "your script"
    print(f"ecab: a worker process stopped: {what} was called at the top level of {script}, which every worker "
          f"process re-runs when it starts (multiprocessing's spawn); put that code under "
          f"`if __name__ == \"__main__\":` (the work goes on without the worker where it can)",
          file=sys.stderr, flush=True)
    raise SystemExit(2)

"""The end of a `python -m ecab.run -m ...` sweep: one table over its jobs' run folders (issue 29).

A Hydra callback (conf/config.yaml `hydra.callbacks.sweep_table`). Each job runs into its own run folder
under run.dir, as a single run does (resumable per job), and returns that folder; `on_job_end` appends it to
`<sweep folder>/sweep_runs.txt` (a file, not memory: a launcher may run the jobs in other processes). At the end
`on_multirun_end` hands the finished jobs' folders (and the failed jobs' overrides, sweep_failed.txt, to a writer
taking `failed_jobs`) to the table writer (`writer`, an import path;
ecab.reduce.sweep:write_sweep_table by default), which writes into the sweep folder `runs/<sweep name>/`
(ecab/config/naming.py sweep_name: the same sweep, the same folder). A job that failed returns no folder and is
left out; the others' table is still written.
"""
from __future__ import annotations

import importlib
import inspect
import sys
from pathlib import Path
from typing import Any, Callable

from hydra.core.utils import JobReturn, JobStatus
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig

RECORD = "sweep_runs.txt"   # the sweep's finished run folders, one a line, in the order the jobs ended
FAILED_RECORD = "sweep_failed.txt"   # the overrides of each job that failed (no run folder), one a line
DEFAULT_WRITER = "ecab.reduce.sweep:write_sweep_table"


def sweep_dir(config: DictConfig) -> Path:
    return Path(str(config.hydra.sweep.dir))


def recorded_runs(folder: Path) -> list[Path]:
    """The run folders the sweep's jobs recorded, each once, those still there."""
    record = folder / RECORD
    lines = record.read_text(encoding="utf-8").splitlines() if record.is_file() else []
    return [Path(p) for p in dict.fromkeys(line.strip() for line in lines if line.strip()) if Path(p).is_dir()]


def recorded_failures(folder: Path) -> list[str]:
    """The overrides of the jobs that failed, each once, in order."""
    record = folder / FAILED_RECORD
    lines = record.read_text(encoding="utf-8").splitlines() if record.is_file() else []
    return list(dict.fromkeys(line.strip() for line in lines if line.strip()))


def job_overrides(config: DictConfig) -> str:
    """The job's own overrides as given (`model=oracle budget=25`): what names a job that left no folder."""
    try:
        return " ".join(str(o) for o in config.hydra.overrides.task)
    except Exception:  # noqa: BLE001 - a config without Hydra's section: no name better than none
        return "(unknown job)"


def load_writer(spec: str) -> Callable[[Path, list[Path]], dict] | None:
    """The table writer `module:function`; None when its module is not there (the writer ships separately)."""
    module_name, _, attribute = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise
        return None
    return getattr(module, attribute)


class SweepTable(Callback):
    """Collects the jobs' run folders and writes the sweep's table at the end of a multirun."""

    def __init__(self, writer: str = DEFAULT_WRITER) -> None:
        self.writer = writer

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        # a record left by an earlier run of the same sweep: its jobs run again (resuming) and record anew
        (sweep_dir(config) / RECORD).unlink(missing_ok=True)
        (sweep_dir(config) / FAILED_RECORD).unlink(missing_ok=True)

    def on_job_end(self, config: DictConfig, job_return: JobReturn, **kwargs: Any) -> None:
        if config.hydra.mode != RunMode.MULTIRUN or job_return.status != JobStatus.COMPLETED:
            return
        folder = job_return.return_value
        # a job that failed printed its one error line (ecab/run.py fail_job) and left no folder: its overrides
        # name its row in the table
        record = sweep_dir(config) / (RECORD if folder else FAILED_RECORD)
        record.parent.mkdir(parents=True, exist_ok=True)
        with record.open("a", encoding="utf-8") as out:
            out.write(f"{Path(str(folder)).resolve() if folder else job_overrides(config)}\n")

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        folder = sweep_dir(config)
        runs, failed = recorded_runs(folder), recorded_failures(folder)
        if not runs:
            print(f"sweep: no job finished; no table in {folder}")
            return
        write = load_writer(self.writer)
        if write is None:
            print(f"sweep: {len(runs)} run folder(s) listed in {folder / RECORD}; no table: {self.writer} is not "
                  "installed")
            return
        try:
            if failed and "failed_jobs" in inspect.signature(write).parameters:
                write(folder, runs, failed_jobs=failed)
            else:                  # a writer of the older signature: the finished runs only
                write(folder, runs)
        except Exception as exc:  # noqa: BLE001 - the runs are finished and kept; say why there is no table
            print(f"ecab: error: sweep table in {folder}: {type(exc).__name__}: {exc}", file=sys.stderr)
            raise SystemExit(2) from None
        print(f"sweep: table of {len(runs)} run(s) in {folder}/" + (f"; {len(failed)} job(s) failed, listed there"
                                                                      if failed else ""))

"""The run folder: its layout and every read and write of a run's files (folder.py), and the line-level
rules those share (records.py); one writer per folder (lock.py). Runners append trajectories, the judge's
callers write verdicts, reduce reads the run and writes the summary, all through `RunFolder`."""
from ecab.runs.folder import RunFolder

__all__ = ["RunFolder"]

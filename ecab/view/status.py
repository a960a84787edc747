"""Is a run finished or still in progress, and how far has it got: read from its files only, so the report,
the live server and the index of a folder of runs say the same thing.

A run writes its manifest (without `finished_at`), config.yaml and the task file first, appends one
trajectory per episode as it goes, then judges, stamps `finished_at` and reduces into summary.json
(ecab/run.py). So a run is finished when it has a summary and either its manifest says it finished or every
expected episode is recorded (an imported run has no `finished_at`); anything else is in progress. A
stopped run also reads "in progress" (with its count) until it is resumed: nothing on disk tells the two apart.
A run in progress also says how many episodes are in flight and when the last of them finished a turn, from
their checkpoints (trajectories/inflight/, ecab/runs/folder.py); a stopped run keeps those of the episodes it
was running, a finished run has none.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

import yaml

from ecab.runs import RunFolder

FINISHED, IN_PROGRESS = "finished", "in progress"


@dataclass(frozen=True)
class RunStatus:
    state: str            # FINISHED or IN_PROGRESS
    done: int             # episodes recorded (infra errors, which a resume re-runs, left out)
    total: int | None     # episodes the run will have: tasks x trials (None when the folder does not say)
    in_flight: int = 0    # episodes with a checkpoint and no final record yet (a run in progress only)
    last_turn_s_ago: float | None = None   # since the newest checkpoint was written (None: no episode in flight)
    in_flight_units: tuple[dict[str, Any], ...] = ()   # {task_id, trial, turns, tool_calls} per episode in flight

    @property
    def finished(self) -> bool:
        return self.state == FINISHED

    def text(self) -> str:
        if self.finished:
            return FINISHED
        text = f"{IN_PROGRESS}: {self.done} of {self.total if self.total is not None else '?'} episodes"
        if self.in_flight:
            text += f", {self.in_flight} in flight"
            if self.last_turn_s_ago is not None:
                text += f", last turn {_ago(self.last_turn_s_ago)} ago"
        return text

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "text": self.text()}


def config_of(folder: RunFolder) -> dict[str, Any]:
    """config.yaml as a dict ({} when missing or unreadable: the page then shows less, it does not fail)."""
    if not folder.config_path.is_file():
        return {}
    try:
        parsed = yaml.safe_load(folder.config_path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


def expected_episodes(manifest: dict[str, Any], config: dict[str, Any]) -> int | None:
    """tasks x trials, from the manifest's n_tasks and the config's trials (1 when the config has none)."""
    n_tasks, trials = manifest.get("n_tasks"), config.get("trials", 1)
    if not isinstance(n_tasks, int) or not isinstance(trials, int):
        return None
    return n_tasks * trials


def recorded_episodes(folder: RunFolder) -> int:
    return sum(1 for t in folder.latest_trajectories().values() if t.termination != "infra_error")


def run_status(folder: RunFolder, done: int | None = None, *, now: float | None = None) -> RunStatus:
    """The run's state; `done` when the caller already counted the recorded episodes; `now` (time.time()):
    the time the last turn's age is told from."""
    manifest = folder.read_manifest() if folder.manifest_path.is_file() else {}
    total = expected_episodes(manifest, config_of(folder))
    done = recorded_episodes(folder) if done is None else done
    complete = bool(manifest.get("finished_at")) or (total is not None and done >= total)
    state = FINISHED if folder.summary_path.is_file() and complete else IN_PROGRESS
    if state == FINISHED:
        return RunStatus(state, done, total)
    return RunStatus(state, done, total, *in_flight(folder, time.time() if now is None else now))


def in_flight(folder: RunFolder, now: float) -> tuple[int, float | None, tuple[dict[str, Any], ...]]:
    """(episodes in flight, seconds since the newest checkpoint, one entry per episode) from the folder's
    checkpoints. A checkpoint removed while being read (its episode just finished) is left out."""
    newest = None
    for path in folder.inflight_paths():
        try:
            mtime = path.stat().st_mtime
        except OSError:
            continue
        newest = mtime if newest is None else max(newest, mtime)
    units = tuple({"task_id": key[0], "trial": key[-1], "turns": len(traj.steps), "tool_calls": traj.total_tool_calls}
                  for key, traj in folder.inflight_trajectories().items())
    return len(units), (None if newest is None or not units else max(0.0, now - newest)), units


def _ago(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.0f} h"

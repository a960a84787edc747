"""Runs compared task by task: which tasks two runs share, and the accuracy difference on exactly those.

A task is shared when both runs ran the same task (same id and same content: a regenerated benchmark may reuse
an id for another task). The delta of a run against a baseline is mean accuracy on the shared tasks minus the
baseline's on the same tasks, each task one pair (its share of correct scored trials), with Newcombe's paired
interval (intervals.py). Tasks without a scored episode in either run are left out of the pairs.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Sequence

from ecab.reduce.episodes import join_episodes, scored_episodes
from ecab.reduce.intervals import LEVEL, newcombe_paired_difference
from ecab.runs import RunFolder
from ecab.schema import Task

DELTA_METHOD = "Newcombe paired Wilson interval (method 10) over shared tasks"


def task_key(task: Task) -> str:
    """The task's id and a hash of its content."""
    content = json.dumps(task.to_dict(), sort_keys=True, default=str)
    return f"{task.id}#{hashlib.sha256(content.encode()).hexdigest()[:12]}"


def task_keys(run_dir: str | Path) -> set[str]:
    folder = RunFolder(run_dir)
    return {task_key(t) for t in folder.read_tasks(folder.load_manifest()).values()}


def task_accuracies(run_dir: str | Path) -> dict[str, float]:
    """{task key: share of its scored episodes that are correct}, for tasks with a scored episode."""
    _, tasks, trajectories, judgements = RunFolder(run_dir).load()
    by_task: dict[str, list] = {}
    for e in scored_episodes(join_episodes(tasks, trajectories, judgements)):
        by_task.setdefault(task_key(e.task), []).append(e.correct)
    return {key: sum(outcomes) / len(outcomes) for key, outcomes in sorted(by_task.items())}


def task_sets(run_dirs: Sequence[Path]) -> dict[str, Any]:
    """Whether the runs ran one task set: {"same", "hashes" (the manifests' task_set_hash), "tasks" (per run),
    "shared_tasks" (in every run), "warning" (one line, None when the sets are the same)}."""
    hashes = [RunFolder(d).read_manifest().get("task_set_hash") for d in run_dirs]
    keys = [task_keys(d) for d in run_dirs]
    shared = set.intersection(*keys) if keys else set()
    same = all(k == keys[0] for k in keys) and len(set(hashes)) <= 1
    warning = None if same else (
        f"warning: the runs' task sets differ ({', '.join(str(h) for h in hashes)}): {len(shared)} task(s) are in "
        f"every run (of {', '.join(str(len(k)) for k in keys)}); paired deltas use shared tasks only")
    return {"same": same, "hashes": hashes, "tasks": [len(k) for k in keys], "shared_tasks": len(shared),
            "warning": warning}


def paired_delta(run: dict[str, float], baseline: dict[str, float], level: float = LEVEL) -> dict[str, Any]:
    """Accuracy of `run` minus `baseline` on their shared scored tasks (task_accuracies of each):
    {"shared_tasks", "value", "low", "high", "method"}; numbers None when no task is shared."""
    shared = sorted(set(run) & set(baseline))
    if not shared:
        return {"shared_tasks": 0, "value": None, "low": None, "high": None, "method": DELTA_METHOD}
    delta = newcombe_paired_difference([run[k] for k in shared], [baseline[k] for k in shared], level)
    return {"shared_tasks": len(shared), "value": delta["value"], "low": delta["low"], "high": delta["high"],
            "method": DELTA_METHOD}

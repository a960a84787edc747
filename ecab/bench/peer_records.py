"""What each side of the peer benchmark (ecab/bench/peer.py) records per episode, and how the two sides'
records are compared. Shared by ecab's side (peer_case.py) and inspect_ai's (peer_inspect.py), so it
imports only the standard library: it runs under both interpreters.

An episode record: the task and trial, when it finished (wall time), its LLM turns, whether it failed, and
its tool calls in order, each as [tool, arguments as canonical JSON, sha256 prefix of the result text the
model was sent].
"""
from __future__ import annotations

import hashlib
import json
import time
from typing import Any

MAX_DIFFERING = 5       # task ids listed when calls differ


def call_entry(name: str, arguments: Any, result_text: str) -> list[str]:
    """One tool call as the comparison sees it: the tool, its arguments as canonical JSON, and a digest of
    the result text the model was sent."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments, sort_keys=True, ensure_ascii=False)
    return [name, args, hashlib.sha256(result_text.encode()).hexdigest()[:16]]


def episode_record(task_id: str, trial: int, turns: int, failed: bool, calls: list[list[str]]) -> dict:
    return {"task_id": task_id, "trial": trial, "finished_at": time.time(), "turns": turns, "failed": failed,
            "calls": calls}


def identical_calls(records_by_side: dict[str, list[dict]]) -> dict:
    """Per task, whether every episode of it on every side made the same tool calls with the same results,
    and none failed (a task missing from a side is not identical): {"tasks", "identical", "differing": [a
    few task ids]}."""
    sequences: dict[str, set] = {}
    failed: set[str] = set()
    for records in records_by_side.values():
        for record in records:
            sequences.setdefault(record["task_id"], set()).add(json.dumps(record["calls"]))
            if record["failed"]:
                failed.add(record["task_id"])
    on_every_side = set.intersection(*({r["task_id"] for r in records} for records in records_by_side.values()))
    same = {t for t, seen in sequences.items() if len(seen) == 1 and t not in failed and t in on_every_side}
    return {"tasks": len(sequences), "identical": len(same), "differing": sorted(set(sequences) - same)[:MAX_DIFFERING]}

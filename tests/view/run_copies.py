"""Copies of the session's real run folders (conftest's view_runs) that the view tests may change: a whole run,
and a run caught in progress (the state ecab.run leaves a folder in before its judge stage: manifest without
finished_at, config, tasks, the first episodes appended to the part file; no verdicts, no summary)."""
from __future__ import annotations

import json
import shutil
import urllib.error
import urllib.request
from pathlib import Path

from ecab.runs import RunFolder

WRITER = "local"          # the part file the local runner appends to (trajectories/part-local.jsonl.gz)


def copy_run(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def in_progress(src: Path, dst: Path, episodes: int) -> tuple[Path, list]:
    """`dst`: `src` as it was after its first `episodes` episodes. Returns (dst, every trajectory of `src` in
    unit order), so a test can append the next ones as the runner would."""
    trajectories = list(RunFolder(src).latest_trajectories().values())
    dst.mkdir(parents=True)
    for name in ("config.yaml", "tasks.jsonl"):
        shutil.copy2(src / name, dst / name)
    manifest = json.loads((src / "manifest.json").read_text(encoding="utf-8"))
    for key in ("finished_at", "active_judge", "judge", "judge_model", "review_checker", "task_audit", "runner_stats"):
        manifest.pop(key, None)
    folder = RunFolder(dst).create()
    folder.write_manifest(manifest)
    for traj in trajectories[:episodes]:
        folder.append_trajectory(WRITER, traj)
    return dst, trajectories


def get(url: str) -> tuple[int, bytes]:
    """(HTTP status, body) of a GET to a report server, errors included (the tests assert 404s)."""
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, b""

"""The reduce stage: rebuild summary.json / summary.md of a run folder from the files on disk.

Inputs (docs/architecture.md §8): `trajectories/part-*.jsonl` (one Trajectory per line),
`verdicts.jsonl` (one Judgement per line) and the task file named by `manifest.json`'s `tasks_path`.
Re-running it never needs the agents or the judge.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

from ecab.reduce.audit import judge_agreement, judge_files
from ecab.reduce.budget import truncated_accuracy
from ecab.reduce.metrics import summarize
from ecab.reduce.report import render_markdown, write_summary
from ecab.schema import TERMINATIONS, FormatError, Judgement, Record, Task, Trajectory, iter_jsonl, read_tasks

__all__ = ["summarize", "write_summary", "reduce_run", "load_run", "render_markdown", "truncated_accuracy"]

MANIFEST = "manifest.json"
VERDICTS = "verdicts.jsonl"
TRAJECTORY_DIR = "trajectories"
TRAJECTORY_GLOB = "part-*.jsonl"


def _records(path: Path, cls: type[Record]) -> Iterator[tuple[int, Any]]:
    """(line number, record) of a JSONL file; a bad line raises FormatError naming file, line and field."""
    for lineno, obj in iter_jsonl(path):
        try:
            yield lineno, cls.from_dict(obj)
        except FormatError as exc:
            raise exc.located(path, lineno) from None


def read_trajectories(path: Path) -> list[Trajectory]:
    """The trajectories of one part file, under the runner's own rule for torn lines (`read_part`)."""
    from ecab.runner.store import read_part

    trajectories = []
    for lineno, traj in read_part(path):
        if traj.termination not in TERMINATIONS:
            raise FormatError(f"unknown termination {traj.termination!r}; expected one of "
                              f"{list(TERMINATIONS)}", path=path, line=lineno, field="termination")
        trajectories.append(traj)
    return trajectories


def read_judgements(path: Path) -> list[Judgement]:
    return [j for _, j in _records(path, Judgement)]


def read_manifest(run_dir: Path) -> dict[str, Any]:
    path = run_dir / MANIFEST
    if not path.is_file():
        raise FormatError("file not found", path=path)
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise FormatError(f"malformed JSON: {exc.msg} (line {exc.lineno})", path=path) from None
    if not isinstance(manifest, dict):
        raise FormatError("expected a JSON object", path=path)
    if not isinstance(manifest.get("tasks_path"), str) or not manifest["tasks_path"]:
        raise FormatError("missing or not a path string", path=path, field="tasks_path")
    return manifest


def resolve_tasks_path(run_dir: Path, tasks_path: str) -> Path:
    """An absolute path as is; a relative one from the working directory, else from the run folder."""
    candidates = [Path(tasks_path)] if Path(tasks_path).is_absolute() else [Path(tasks_path), run_dir / tasks_path]
    found = next((p for p in candidates if p.is_file()), None)
    if found is None:
        raise FormatError(f"tasks file {tasks_path!r} not found (looked at {', '.join(map(str, candidates))})",
                          path=run_dir / MANIFEST, field="tasks_path")
    return found


def load_run(run_dir: str | Path) -> tuple[dict[str, Any], dict[str, Task], list[Trajectory], list[Judgement]]:
    """(manifest, tasks by id, trajectories, judgements) of a run folder; one clear error when anything is off."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise FormatError("run folder not found", path=run_dir)
    manifest = read_manifest(run_dir)
    tasks = {t.id: t for t in read_tasks(resolve_tasks_path(run_dir, manifest["tasks_path"]))}
    parts = sorted((run_dir / TRAJECTORY_DIR).glob(TRAJECTORY_GLOB))
    if not parts:
        raise FormatError(f"no {TRAJECTORY_DIR}/{TRAJECTORY_GLOB} files", path=run_dir)
    trajectories = [t for part in parts for t in read_trajectories(part)]
    judgements = read_judgements(run_dir / VERDICTS)
    return manifest, tasks, trajectories, judgements


def _name(manifest: dict[str, Any], key: str, fallback: str) -> str:
    value = manifest.get(key)
    return value if isinstance(value, str) and value else fallback


def read_other_judges(run_dir: Path) -> dict[str, list[Judgement]]:
    """{judge: judgements} of every `verdicts.<judge>.jsonl` in the run folder (empty when only one judge ran)."""
    return {name: read_judgements(path) for name, path in judge_files(run_dir).items()}


def reduce_run(run_dir: str | Path, *, plots: bool = True) -> dict[str, Any]:
    """Rebuild every artifact of a run folder from the files on disk: summary.json, summary.md and (unless
    plots=False) plots/*.png. With two or more `verdicts.<judge>.jsonl` files the judges' agreement is
    added as `judge_agreement`. Returns the summary."""
    run_dir = Path(run_dir)
    manifest, tasks, trajectories, judgements = load_run(run_dir)
    model = _name(manifest, "model", next((t.model for t in trajectories if t.model), ""))
    judge_model = _name(manifest, "judge_model", next((j.judge for j in judgements if j.judge), ""))
    others = read_other_judges(run_dir)
    try:
        extra = {"judge_agreement": judge_agreement(others, tasks)} if len(others) >= 2 else {}
        if manifest.get("runner_stats"):
            extra["runner"] = manifest["runner_stats"]   # what the runner retried, re-queued or restarted
        if manifest.get("task_audit"):
            extra["task_audit"] = manifest["task_audit"]   # how hard the task set is (ecab.run writes it)
        extra = extra or None
        summary = summarize(tasks, trajectories, judgements, model=model, judge_model=judge_model, extra=extra)
    except ValueError as exc:
        if isinstance(exc, FormatError):
            raise
        raise FormatError(str(exc), path=run_dir) from None
    write_summary(run_dir, summary, plots=plots)
    return summary

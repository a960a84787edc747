"""The run folder (docs/architecture.md §8): checkpointed trajectories, verdicts, manifest.

A finished episode is appended to its writer's part file at once (flushed and fsynced), so a crash
loses at most the episodes in flight. Reading tolerates a torn last line left by a kill.
"""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Iterable, Iterator

from ecab.runner.units import unit_key
from ecab.schema import FormatError, Judgement, Trajectory, dumps


def read_part(path: Path) -> Iterator[tuple[int, Trajectory]]:
    """(line number, trajectory) of one part file: the one rule every reader of run folders uses.

    A line that is not valid JSON is a torn write from a killed writer: it is skipped, and its unit simply
    runs again on resume. A line that is JSON but not a valid trajectory is real corruption and raises a
    FormatError naming the file and line.
    """
    with path.open(encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                continue
            try:
                yield lineno, Trajectory.from_dict(obj)
            except FormatError as exc:
                raise exc.located(path, lineno) from None


class RunFolder:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.trajectories_dir = self.path / "trajectories"
        self.config_path = self.path / "config.yaml"
        self.manifest_path = self.path / "manifest.json"
        self.verdicts_path = self.path / "verdicts.jsonl"
        self.summary_path = self.path / "summary.json"
        self.plots_dir = self.path / "plots"
        self._append_lock = threading.Lock()
        self.lock = None   # the folder's RunLock while a run holds it (ecab.run.prepare_folder)

    def release(self) -> None:
        """Let the folder go (its RunLock); a no-op when this object holds no lock."""
        if self.lock is not None:
            self.lock.release()
            self.lock = None

    def create(self) -> "RunFolder":
        self.trajectories_dir.mkdir(parents=True, exist_ok=True)
        return self

    def part_path(self, writer: str) -> Path:
        return self.trajectories_dir / f"part-{writer}.jsonl"

    def append_trajectory(self, writer: str, traj: Trajectory) -> None:
        """Safe from several threads: runners call it off their event loop, and appends take turns."""
        line = (dumps(traj) + "\n").encode("utf-8")
        with self._append_lock, self.part_path(writer).open("ab") as handle:
            # A writer killed mid-line leaves a torn last line; start on a fresh line so the torn bytes
            # stay one skipped line instead of swallowing this record too.
            if handle.tell() > 0 and not _ends_with_newline(handle.name):
                line = b"\n" + line
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())

    def iter_trajectories(self) -> Iterator[Trajectory]:
        """Every recorded episode, part file by part file (see `read_part` for torn lines)."""
        for part in sorted(self.trajectories_dir.glob("part-*.jsonl")):
            for _, traj in read_part(part):
                yield traj

    def latest_trajectories(self) -> dict[tuple, Trajectory]:
        """Exactly one record per unit, in unit-key order (so the order never depends on which writer
        or which attempt wrote what). The last complete line per unit wins, except that an infra_error
        record never replaces a finished one (a unit re-run after a crash may leave both)."""
        latest: dict[tuple, Trajectory] = {}
        for traj in self.iter_trajectories():
            key = unit_key(traj.unit)
            old = latest.get(key)
            if old is not None and traj.termination == "infra_error" and old.termination != "infra_error":
                continue
            latest[key] = traj
        return {key: latest[key] for key in sorted(latest, key=_sortable)}

    def write_manifest(self, manifest: dict) -> None:
        _write_text(self.manifest_path, json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")

    def read_manifest(self) -> dict:
        return json.loads(self.manifest_path.read_text(encoding="utf-8")) if self.manifest_path.exists() else {}

    def write_config(self, yaml_text: str) -> None:
        _write_text(self.config_path, yaml_text)

    def write_verdicts(self, judgements: Iterable[Judgement]) -> None:
        _write_text(self.verdicts_path, "".join(dumps(j) + "\n" for j in judgements))

    def read_verdicts(self) -> list[Judgement]:
        if not self.verdicts_path.exists():
            return []
        return [Judgement.from_dict(json.loads(line)) for line in
                self.verdicts_path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _ends_with_newline(path: str) -> bool:
    with open(path, "rb") as handle:
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"


def _sortable(key: tuple) -> tuple:
    return tuple((0, v) if isinstance(v, (int, float)) else (1, str(v)) for v in key)


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)

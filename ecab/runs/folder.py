"""The run folder (docs/architecture.md §8): the one place that knows its layout. Every reader and writer of a
run's trajectories, verdicts, manifest, tasks, config and summary goes through `RunFolder`.

    config.yaml                         the resolved config (ecab.run)
    manifest.json                       hashes, versions, tasks_path, runner and judge records
    tasks.jsonl                         the run's tasks
    trajectories/part-<writer>.jsonl    one Trajectory per line, appended and fsynced per episode
    verdicts.jsonl                      the judge chosen last (what reduce reads)
    verdicts.<judge>.jsonl              one per judge that ever judged the run, kept side by side
    summary.json, summary.md, plots/    the summary (ecab.reduce)
    report.html                         the self-contained report (ecab.view)

A finished episode is appended to its writer's part file at once, so a crash loses at most the episodes in
flight; reading tolerates a torn last line (records.read_part). When a unit appears twice the last complete
record wins (`latest_trajectories`). A run folder from before verdicts.<judge>.jsonl existed has only
verdicts.jsonl; its verdicts are kept as verdicts.<their judge>.jsonl before a different judge replaces them.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import threading
from pathlib import Path
from typing import Any, Iterable, Iterator

from ecab.core.unit import UnitKey, unit_key
from ecab.runs.records import ends_with_newline, first_judge, read_judgements, read_part, write_text_atomic
from ecab.schema import TERMINATIONS, FormatError, Judgement, Task, Trajectory, dumps, read_tasks, write_jsonl

CONFIG = "config.yaml"
MANIFEST = "manifest.json"
TASKS = "tasks.jsonl"
TRAJECTORY_DIR = "trajectories"
PART_GLOB = "part-*.jsonl"
VERDICTS = "verdicts.jsonl"
SUMMARY_JSON, SUMMARY_MD, PLOTS = "summary.json", "summary.md", "plots"
REPORT = "report.html"
JUDGE_FILE = re.compile(r"^verdicts\.([A-Za-z0-9_\-]+)\.jsonl$")


class RunFolder:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.trajectories_dir = self.path / TRAJECTORY_DIR
        self.config_path = self.path / CONFIG
        self.manifest_path = self.path / MANIFEST
        self.tasks_file = self.path / TASKS
        self.verdicts_path = self.path / VERDICTS
        self.summary_path = self.path / SUMMARY_JSON
        self.summary_md_path = self.path / SUMMARY_MD
        self.plots_dir = self.path / PLOTS
        self.report_path = self.path / REPORT
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

    # -- trajectories ----------------------------------------------------------------------------------

    def part_path(self, writer: str) -> Path:
        return self.trajectories_dir / f"part-{writer}.jsonl"

    def part_files(self) -> list[Path]:
        return sorted(self.trajectories_dir.glob(PART_GLOB))

    def has_trajectories(self) -> bool:
        return self.trajectories_dir.is_dir() and any(self.trajectories_dir.iterdir())

    def append_trajectory(self, writer: str, traj: Trajectory) -> None:
        """Safe from several threads: runners call it off their event loop, and appends take turns."""
        line = (dumps(traj) + "\n").encode("utf-8")
        with self._append_lock, self.part_path(writer).open("ab") as handle:
            # A writer killed mid-line leaves a torn last line; start on a fresh line so the torn bytes
            # stay one skipped line instead of swallowing this record too.
            if handle.tell() > 0 and not ends_with_newline(handle.name):
                line = b"\n" + line
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())

    def write_part(self, writer: str, trajectories: Iterable[Trajectory]) -> None:
        """A whole part file at once (an import), atomically."""
        write_jsonl(self.part_path(writer), trajectories)

    def iter_trajectories(self) -> Iterator[Trajectory]:
        """Every recorded episode, part file by part file (see `read_part` for torn lines)."""
        for part in self.part_files():
            for _, traj in read_part(part):
                yield traj

    def latest_trajectories(self) -> dict[UnitKey, Trajectory]:
        """Exactly one record per unit, in unit-key order (so the order never depends on which writer
        or which attempt wrote what). The last complete line per unit wins, except that an infra_error
        record never replaces a finished one (a unit re-run after a crash may leave both)."""
        latest: dict[UnitKey, Trajectory] = {}
        for traj in self.iter_trajectories():
            key = unit_key(traj.unit, traj.id)
            old = latest.get(key)
            if old is not None and traj.termination == "infra_error" and old.termination != "infra_error":
                continue
            latest[key] = traj
        return {key: latest[key] for key in sorted(latest, key=_sortable)}

    def read_trajectories(self) -> list[Trajectory]:
        """Every line of every part file, as reduce reads them: at least one part file, and a termination
        it knows on every record (else a FormatError naming file, line and field)."""
        parts = self.part_files()
        if not parts:
            raise FormatError(f"no {TRAJECTORY_DIR}/{PART_GLOB} files", path=self.path)
        trajectories = []
        for part in parts:
            for lineno, traj in read_part(part):
                if traj.termination not in TERMINATIONS:
                    raise FormatError(f"unknown termination {traj.termination!r}; expected one of "
                                      f"{list(TERMINATIONS)}", path=part, line=lineno, field="termination")
                trajectories.append(traj)
        return trajectories

    # -- manifest, config, tasks -----------------------------------------------------------------------

    def write_manifest(self, manifest: dict) -> None:
        write_text_atomic(self.manifest_path, json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")

    def read_manifest(self) -> dict:
        """The manifest to update ({} before the first write)."""
        return json.loads(self.manifest_path.read_text(encoding="utf-8")) if self.manifest_path.exists() else {}

    def load_manifest(self) -> dict[str, Any]:
        """The manifest of a finished or imported run, as its readers need it (naming the task file); any
        flaw is a FormatError."""
        path = self.manifest_path
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

    def write_config(self, yaml_text: str) -> None:
        write_text_atomic(self.config_path, yaml_text)

    def write_tasks(self, tasks: Iterable[Task]) -> None:
        write_jsonl(self.tasks_file, tasks)

    def tasks_path(self, manifest: dict[str, Any]) -> Path:
        """The manifest's `tasks_path`: an absolute path as is; a relative one from the working directory,
        else from the run folder."""
        named = manifest["tasks_path"]
        candidates = [Path(named)] if Path(named).is_absolute() else [Path(named), self.path / named]
        found = next((p for p in candidates if p.is_file()), None)
        if found is None:
            raise FormatError(f"tasks file {named!r} not found (looked at {', '.join(map(str, candidates))})",
                              path=self.manifest_path, field="tasks_path")
        return found

    def read_tasks(self, manifest: dict[str, Any]) -> dict[str, Task]:
        """The run's tasks by id, from the file its manifest names."""
        return {t.id: t for t in read_tasks(self.tasks_path(manifest))}

    # -- verdicts --------------------------------------------------------------------------------------

    def judge_file(self, judge_name: str) -> Path:
        return self.path / f"verdicts.{_safe(judge_name)}.jsonl"

    def judge_files(self) -> dict[str, Path]:
        """{judge name: path} of the run's `verdicts.<judge>.jsonl` files."""
        found = {}
        for path in sorted(self.path.glob("verdicts.*.jsonl")):
            match = JUDGE_FILE.match(path.name)
            if match:
                found[match.group(1)] = path
        return found

    def write_verdicts(self, judge_name: str, judgements: Iterable[Judgement]) -> Path:
        """Write verdicts.jsonl and verdicts.<judge_name>.jsonl, keeping an older judge's verdicts; atomic."""
        active = self.verdicts_path
        if active.is_file():
            previous = first_judge(active)
            if previous and previous != judge_name and not self.judge_file(previous).exists():
                shutil.copyfile(active, self.judge_file(previous))
        text = "".join(dumps(j) + "\n" for j in judgements)
        for path in (self.judge_file(judge_name), active):
            write_text_atomic(path, text)
        return active

    def read_verdicts(self) -> list[Judgement]:
        """The judgements of the judge chosen last (verdicts.jsonl, which must exist)."""
        return read_judgements(self.verdicts_path)

    def read_judge_verdicts(self) -> dict[str, list[Judgement]]:
        """{judge: judgements} of every `verdicts.<judge>.jsonl` (empty when only one judge ran)."""
        return {name: read_judgements(path) for name, path in self.judge_files().items()}

    # -- the whole run, and its summary ----------------------------------------------------------------

    def load(self) -> tuple[dict[str, Any], dict[str, Task], list[Trajectory], list[Judgement]]:
        """(manifest, tasks by id, trajectories, judgements); one clear error when anything is off."""
        if not self.path.is_dir():
            raise FormatError("run folder not found", path=self.path)
        manifest = self.load_manifest()
        tasks = self.read_tasks(manifest)
        return manifest, tasks, self.read_trajectories(), self.read_verdicts()

    def write_summary(self, summary: dict[str, Any], markdown: str) -> None:
        """summary.json (the dict, indented) and summary.md (rendered from it by the caller)."""
        self.path.mkdir(parents=True, exist_ok=True)
        write_text_atomic(self.summary_path, json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
        write_text_atomic(self.summary_md_path, markdown)

    def read_summary(self) -> dict[str, Any] | None:
        """summary.json, or None when the run was never reduced."""
        if not self.summary_path.is_file():
            return None
        try:
            return json.loads(self.summary_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise FormatError(f"malformed JSON: {exc.msg} (line {exc.lineno})", path=self.summary_path) from None


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name) or "judge"


def _sortable(key: UnitKey) -> tuple:
    return tuple((0, v) if isinstance(v, (int, float)) else (1, str(v)) for v in key)

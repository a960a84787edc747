"""The run folder (docs/architecture.md §8): the one place that knows its layout. Every reader and writer of a
run's trajectories, verdicts, manifest, tasks, config and summary goes through `RunFolder`.

    config.yaml                              the resolved config (ecab.run)
    manifest.json                            hashes, versions, tasks_path, runner and judge records, and
                                             `active_judge`: whose verdicts the run's readers read
    tasks.jsonl                              the run's tasks
    trajectories/part-<writer>.jsonl.gz      one Trajectory per gzip member, appended and fsynced per episode;
    trajectories/part-<writer>.<n>.jsonl.gz  the n-th session of that writer (a resumed run, a restarted worker)
    trajectories/inflight/<unit>.json        checkpoint of an episode still in flight: its record so far (one
                                             JSON object, termination ""), replaced every few turns, removed
                                             once the episode's final record is appended
    verdicts.<judge>.jsonl.gz                one per judge that ever judged the run, gzip JSONL written whole
    summary.json, summary.md, plots/         the summary (ecab.reduce)
    report.html                              the self-contained report (ecab.view)

A finished episode is appended to its writer's part file at once, as one gzip member of its own
(gzip_members.py), so a crash loses at most the episodes in flight: reading skips an incomplete last member.
Each writer session starts a part file of its own instead of appending after what a killed one may have torn,
so damage can only ever be at a file's end. When a unit appears twice the last complete record wins
(`latest_trajectories`), part files read in session order.

In-flight checkpoints (issue 31) keep what a stopped run's unfinished episodes did, for the report of a run in
progress only: they live in a folder of their own that no reader of finished episodes looks at (`part_files`,
`iter_trajectories`, `latest_trajectories`, `read_trajectories`), their termination "" is none a reducer knows,
and a resumed run re-runs their units from the start, as it re-runs every unit without a final record. Why gzip members, with the figures:
docs/decisions.md#compact-run-folders.

Folders written before this layout (uncompressed `part-<writer>.jsonl`, `verdicts.jsonl` for the judge chosen
last beside identical `verdicts.<judge>.jsonl` copies, no `active_judge`) are read as they are; the first new
write goes to a compressed session file, and the first verdicts written retire the old verdict files (the
verdicts of a judge that has no other file are kept, compressed).
"""
from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import threading
from pathlib import Path
from typing import Any, Iterable, Iterator

from ecab.core.unit import UnitKey, unit_key
from ecab.runs.gzip_members import compress_record
from ecab.runs.records import first_judge, part_record, read_judgements, read_part, write_bytes_atomic, \
    write_text_atomic
from ecab.schema import TERMINATIONS, FormatError, Judgement, Task, Trajectory, dumps, read_tasks, write_jsonl

CONFIG = "config.yaml"
MANIFEST = "manifest.json"
TASKS = "tasks.jsonl"
TRAJECTORY_DIR = "trajectories"
INFLIGHT_DIR = "inflight"                   # trajectories/inflight/<unit>.json: episodes not finished yet
INFLIGHT_TERMINATION = ""                   # a checkpoint's termination: no reducer's (TERMINATIONS)
JSONL_GZ = ".jsonl.gz"                      # part files and verdict files (uncompressed: the previous layout)
PART_FILE = re.compile(r"^part-(?P<writer>.+?)(?:\.(?P<session>\d+))?\.jsonl(?P<gz>\.gz)?$")
LEGACY_VERDICTS = "verdicts.jsonl"          # the judge chosen last, in folders written before active_judge
JUDGE_FILE = re.compile(r"^verdicts\.(?P<judge>[A-Za-z0-9_\-]+)\.jsonl(?P<gz>\.gz)?$")
ACTIVE_JUDGE = "active_judge"               # the manifest key naming whose verdicts are read
FOLDER_KEYS = (ACTIVE_JUDGE,)               # manifest keys RunFolder owns: kept when a caller rewrites it
SUMMARY_JSON, SUMMARY_MD, PLOTS = "summary.json", "summary.md", "plots"
REPORT = "report.html"


class RunFolder:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.trajectories_dir = self.path / TRAJECTORY_DIR
        self.inflight_dir = self.trajectories_dir / INFLIGHT_DIR
        self.config_path = self.path / CONFIG
        self.manifest_path = self.path / MANIFEST
        self.tasks_file = self.path / TASKS
        self.legacy_verdicts_path = self.path / LEGACY_VERDICTS
        self.summary_path = self.path / SUMMARY_JSON
        self.summary_md_path = self.path / SUMMARY_MD
        self.plots_dir = self.path / PLOTS
        self.report_path = self.path / REPORT
        self._append_lock = threading.Lock()
        self._session_parts: dict[str, Path] = {}   # writer -> the part file this object appends to
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
        """The part file this folder object appends `writer`'s episodes to: the first of
        part-<writer>.jsonl.gz, part-<writer>.2.jsonl.gz, ... that did not exist when it was first asked for.
        A new session never appends to an older one's file, whose last member a kill may have torn."""
        with self._append_lock:
            path = self._session_parts.get(writer)
            if path is None:
                session = 1
                while (candidate := self.trajectories_dir / _part_name(writer, session)).exists():
                    session += 1
                path = self._session_parts[writer] = candidate
            return path

    def part_files(self) -> list[Path]:
        """Every part file, compressed or from before compression, by writer and then in session order (the
        order their records were written in)."""
        if not self.trajectories_dir.is_dir():
            return []
        found = [(key, path) for path in self.trajectories_dir.iterdir() if (key := _part_order(path.name))]
        return [path for _, path in sorted(found)]

    def has_trajectories(self) -> bool:
        return self.trajectories_dir.is_dir() and any(self.trajectories_dir.iterdir())

    def holds_episodes(self) -> bool:
        """Whether the folder holds a run's results (trajectories or verdicts), whose identity only its manifest
        records: ecab.run refuses to resume such a folder without one."""
        return self.has_trajectories() or bool(self.judge_files()) or self.legacy_verdicts_path.exists()

    def append_trajectory(self, writer: str, traj: Trajectory) -> None:
        """Safe from several threads: runners call it off their event loop, and appends take turns. The record
        is compressed before taking the turn (zlib lets other threads run meanwhile)."""
        member = part_record(traj)
        path = self.part_path(writer)
        with self._append_lock, path.open("ab") as handle:
            handle.write(member)
            handle.flush()
            os.fsync(handle.fileno())
        # Only once the final record is durable: a crash before this line leaves the checkpoint of an episode
        # that has its record (the report of a run in progress may count it in flight), never the reverse.
        self.inflight_path(unit_key(traj.unit, traj.id)).unlink(missing_ok=True)

    def write_part(self, writer: str, trajectories: Iterable[Trajectory]) -> None:
        """A whole part file at once (an import), atomically, in the format appends write."""
        self.create()
        write_bytes_atomic(self.part_path(writer), b"".join(part_record(t) for t in trajectories))

    def iter_trajectories(self) -> Iterator[Trajectory]:
        """Every recorded episode, part file by part file (see `read_part` for torn records)."""
        for part in self.part_files():
            for _, traj in read_part(part):
                yield traj

    def latest_trajectories(self) -> dict[UnitKey, Trajectory]:
        """Exactly one record per unit, in unit-key order (so the order never depends on which writer
        or which attempt wrote what). The last complete record per unit wins, except that an infra_error
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
        """Every record of every part file, as reduce reads them: at least one part file, and a termination
        it knows on every record (else a FormatError naming file, line and field)."""
        parts = self.part_files()
        if not parts:
            raise FormatError(f"no {TRAJECTORY_DIR}/part-*{JSONL_GZ} files", path=self.path)
        trajectories = []
        for part in parts:
            for lineno, traj in read_part(part):
                if traj.termination not in TERMINATIONS:
                    raise FormatError(f"unknown termination {traj.termination!r}; expected one of "
                                      f"{list(TERMINATIONS)}", path=part, line=lineno, field="termination")
                trajectories.append(traj)
        return trajectories

    # -- episodes in flight ----------------------------------------------------------------------------

    def inflight_path(self, key: UnitKey) -> Path:
        """Where the checkpoint of unit `key`'s episode in flight goes."""
        return self.inflight_dir / _inflight_name(key)

    def write_inflight(self, traj: Trajectory) -> Path:
        """Checkpoint an episode in flight: its record so far, termination "" whatever `traj` says (the
        default "budget_exhausted" of a record being built would read as an ending). Replaces the unit's last
        checkpoint atomically (temp file + rename), so a reader sees one whole checkpoint or the previous one.
        Not fsynced, unlike a final record: a checkpoint is only a view of work the resumed run redoes anyway,
        so a power cut may lose it (never a finished episode), and a per-turn fsync would cost every episode
        a disk flush per checkpoint. Call it off the event loop (ecab/runner/episode.py `TurnCheckpoints`)."""
        record = copy.copy(traj)
        record.termination = INFLIGHT_TERMINATION
        path = self.inflight_path(unit_key(traj.unit, traj.id))
        path.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(path, (dumps(record) + "\n").encode("utf-8"))
        return path

    def inflight_paths(self) -> list[Path]:
        """The checkpoint files of the episodes in flight (none once a run has finished), by name."""
        return sorted(self.inflight_dir.glob("*.json")) if self.inflight_dir.is_dir() else []

    def inflight_trajectories(self) -> dict[UnitKey, Trajectory]:
        """The records so far of the episodes in flight, in unit-key order; a checkpoint that cannot be read
        (removed meanwhile, not a trajectory) is skipped. Never finished episodes: for the view only."""
        found: dict[UnitKey, Trajectory] = {}
        for path in self.inflight_paths():
            try:
                traj = Trajectory.from_dict(json.loads(path.read_bytes()))
            except (OSError, ValueError):   # FormatError and JSONDecodeError are ValueErrors
                continue
            found[unit_key(traj.unit, traj.id)] = traj
        return {key: found[key] for key in sorted(found, key=_sortable)}

    def clear_inflight(self, keys: Iterable[UnitKey] | None = None) -> int:
        """Remove the checkpoints of the units `keys` (all when None), with the temp file of a write a kill
        cut short; returns how many checkpoints were removed."""
        paths = sorted(self.inflight_dir.iterdir()) if self.inflight_dir.is_dir() else []
        if keys is not None:
            wanted = {_inflight_name(key) for key in keys}
            paths = [path for path in paths if path.name.removesuffix(".tmp") in wanted]
        removed = 0
        for path in paths:
            try:
                path.unlink()
                removed += path.suffix == ".json"
            except FileNotFoundError:
                pass
        return removed

    def drop_empty_inflight(self) -> None:
        """Remove the checkpoints' folder once no episode is in flight (a finished run leaves no empty folder
        behind); kept while any checkpoint is in it."""
        try:
            self.inflight_dir.rmdir()
        except OSError:   # absent, or not empty: a stopped episode's checkpoint stays for the view and resume
            pass

    # -- manifest, config, tasks -----------------------------------------------------------------------

    def write_manifest(self, manifest: dict) -> None:
        """Replace the manifest with `manifest`, keeping the keys RunFolder owns (`active_judge`) from the
        manifest it replaces when `manifest` does not set them."""
        kept = {}
        if self.manifest_path.is_file():
            try:
                old = self.read_manifest()
            except ValueError:
                old = {}
            kept = {k: old[k] for k in FOLDER_KEYS if k in old and k not in manifest}
        write_text_atomic(self.manifest_path, json.dumps({**manifest, **kept}, indent=2, ensure_ascii=False) + "\n")

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
        """Where `write_verdicts` puts a judge's verdicts."""
        return self.path / f"verdicts.{_safe(judge_name)}{JSONL_GZ}"

    def judge_files(self) -> dict[str, Path]:
        """{judge name: path} of the run's verdict files, one per judge (the compressed file when a folder of
        the previous layout also has the judge's `verdicts.<judge>.jsonl`)."""
        found: dict[str, Path] = {}
        for path in sorted(self.path.glob("verdicts.*.jsonl*")):
            match = JUDGE_FILE.match(path.name)
            if match and (match["gz"] or match["judge"] not in found):
                found[match["judge"]] = path
        return found

    def active_judge(self) -> str | None:
        """The judge whose verdicts the run's readers read, as the manifest names it (None: not named, as in
        folders of the previous layout, or no verdicts yet)."""
        name = self.read_manifest().get(ACTIVE_JUDGE) if self.manifest_path.is_file() else None
        return name if isinstance(name, str) and name else None

    @property
    def verdicts_path(self) -> Path:
        """The verdict file `read_verdicts` reads: the active judge's; in a folder of the previous layout
        verdicts.jsonl; else the one judge's file if there is exactly one (verdicts.jsonl, missing, if none;
        several judges' files and no active judge is a FormatError)."""
        files, active = self.judge_files(), self.active_judge()
        if active is not None:
            if active not in files:
                raise FormatError(f"the manifest's {ACTIVE_JUDGE} {active!r} has no verdict file "
                                  f"{self.judge_file(active).name}", path=self.manifest_path, field=ACTIVE_JUDGE)
            return files[active]
        if self.legacy_verdicts_path.is_file() or not files:
            return self.legacy_verdicts_path
        if len(files) > 1:
            raise FormatError(f"verdicts of the judges {', '.join(sorted(files))} and no {ACTIVE_JUDGE} naming "
                              "the one to read", path=self.manifest_path, field=ACTIVE_JUDGE)
        return next(iter(files.values()))

    def write_verdicts(self, judge_name: str, judgements: Iterable[Judgement]) -> Path:
        """Write verdicts.<judge_name>.jsonl.gz (atomic), then name it active in the manifest; other judges'
        files stay. Returns the path written."""
        path = self.judge_file(judge_name)
        write_jsonl(path, judgements)
        manifest = self.read_manifest()
        manifest[ACTIVE_JUDGE] = _safe(judge_name)
        self.write_manifest(manifest)
        self._retire_legacy_verdicts(judge_name)
        return path

    def _retire_legacy_verdicts(self, judge_name: str) -> None:
        """A folder of the previous layout: its verdicts.jsonl goes (the manifest names the active judge now),
        kept as its judge's file only when it is not a copy of one; the other uncompressed verdicts.<judge>.jsonl
        are compressed, and `judge_name`'s is dropped (just rewritten). Runs after the manifest names the new
        file and writes every new file before removing an old one, so a crash leaves a readable folder."""
        written = _safe(judge_name)
        plain = {m["judge"]: path for path in sorted(self.path.glob("verdicts.*.jsonl"))
                 if (m := JUDGE_FILE.match(path.name))}
        legacy = self.legacy_verdicts_path
        if legacy.is_file():
            data = legacy.read_bytes()
            previous = first_judge(legacy)
            copied = any(path.read_bytes() == data for path in plain.values())
            if previous and not copied and _safe(previous) != written and _safe(previous) not in self.judge_files():
                write_bytes_atomic(self.judge_file(previous), compress_record(data))
            legacy.unlink()
        for name, path in plain.items():
            if name != written and not self.judge_file(name).exists():
                write_bytes_atomic(self.judge_file(name), compress_record(path.read_bytes()))
            path.unlink()

    def read_verdicts(self) -> list[Judgement]:
        """The judgements of the active judge (`verdicts_path`, which must exist)."""
        return read_judgements(self.verdicts_path)

    def read_judge_verdicts(self) -> dict[str, list[Judgement]]:
        """{judge: judgements} of every judge's verdict file (one entry when only one judge ran)."""
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
    return re.sub(r"[^A-Za-z0-9_-]+", "_", name) or "judge"


def _inflight_name(key: UnitKey) -> str:
    """<task id, made safe>.<trial>.<hash of the whole key>.json: readable, and distinct per unit whatever its
    task id or model name holds."""
    digest = hashlib.sha1(repr(tuple(key)).encode("utf-8")).hexdigest()[:16]
    return f"{_safe(str(key[0]))[:80]}.{_safe(str(key[-1]))}.{digest}.json"


def _part_name(writer: str, session: int) -> str:
    return f"part-{writer}{JSONL_GZ}" if session == 1 else f"part-{writer}.{session}{JSONL_GZ}"


def _part_order(name: str) -> tuple[str, int] | None:
    """(writer, session) of a part file's name, the plain file of the previous layout first; None: not one."""
    match = PART_FILE.match(name)
    if match is None:
        return None
    return match["writer"], (int(match["session"] or 1) if match["gz"] else 0)


def _sortable(key: UnitKey) -> tuple:
    return tuple((0, v) if isinstance(v, (int, float)) else (1, str(v)) for v in key)

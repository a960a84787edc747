"""Reading and writing the run folder's JSONL files line by line: the rules every reader and writer shares.

- A trajectory part file is appended to while episodes finish, so a writer killed mid-line leaves a torn
  last line: `read_part` skips a line that is not JSON (its unit runs again on resume) and refuses one
  that is JSON but not a trajectory (real corruption), naming file and line.
- Whole files (verdicts, manifest, config, summary) are replaced atomically (`write_text_atomic`), so a
  reader never sees half of one.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterator

from ecab.schema import FormatError, Judgement, Trajectory, iter_jsonl


def read_part(path: Path) -> Iterator[tuple[int, Trajectory]]:
    """(line number, trajectory) of one part file (see the module docstring for torn lines)."""
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


def read_judgements(path: Path) -> list[Judgement]:
    """The judgements of a verdicts file; a missing file or a bad line raises FormatError naming file, line
    and field."""
    judgements = []
    for lineno, obj in iter_jsonl(path):
        try:
            judgements.append(Judgement.from_dict(obj))
        except FormatError as exc:
            raise exc.located(path, lineno) from None
    return judgements


def first_judge(path: Path) -> str | None:
    """The judge named by the first line of a verdicts file."""
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                try:
                    return str(json.loads(line).get("judge") or "") or None
                except (json.JSONDecodeError, AttributeError):
                    return None
    return None


def ends_with_newline(path: str | Path) -> bool:
    with open(path, "rb") as handle:
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"


def write_text_atomic(path: Path, text: str) -> None:
    """Replace `path` with `text` (temp file + rename)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)

"""Reading and writing the run folder's JSONL files line by line: the rules every reader and writer shares.

- A trajectory part file is appended to while episodes finish, so a writer killed mid-write leaves a torn
  last record: in a `.jsonl.gz` part file an incomplete last gzip member (gzip_members.py), in a `.jsonl` one
  (written before part files were compressed) a torn last line. `read_part` reads both; it skips what is torn
  or not JSON (its unit runs again on resume) and refuses a line that is JSON but not a trajectory, or holds
  NaN or Infinity (real corruption: ecab writes standard JSON only), naming file and line.
- Whole files (verdicts, manifest, config, summary) are replaced atomically (`write_text_atomic`,
  `write_bytes_atomic`, schema's `write_jsonl`), so a reader never sees half of one.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

from ecab.runs.gzip_members import compress_record, iter_lines
from ecab.schema import FormatError, Judgement, Trajectory, dumps, iter_jsonl
from ecab.schema.jsonl import NonStandardNumber, _refuse_constant, is_gzip


def read_part(path: Path) -> Iterator[tuple[int, Trajectory]]:
    """(line number, trajectory) of one part file, compressed or not (see the module docstring for torn
    records)."""
    for lineno, line in _part_lines(path):
        if not line.strip():
            continue
        try:
            obj = json.loads(line, parse_constant=_refuse_constant)
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        except NonStandardNumber as exc:   # complete JSON no writer of ecab makes: corruption, not a torn write
            raise FormatError(f"{exc} is not a JSON number (standard JSON has no NaN or Infinity)",
                              path=path, line=lineno) from None
        try:
            yield lineno, Trajectory.from_dict(obj)
        except FormatError as exc:
            raise exc.located(path, lineno) from None


def _part_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    if is_gzip(path):
        yield from iter_lines(path)
        return
    with path.open("rb") as handle:
        yield from enumerate(handle, start=1)


def part_record(traj: Trajectory) -> bytes:
    """What appending `traj` to a compressed part file writes: its JSONL line as one gzip member."""
    return compress_record((dumps(traj) + "\n").encode("utf-8"))


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


def write_text_atomic(path: Path, text: str) -> None:
    """Replace `path` with `text` (temp file + rename)."""
    write_bytes_atomic(path, text.encode("utf-8"))


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Replace `path` with `data` (temp file + rename)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)

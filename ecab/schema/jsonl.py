"""JSONL files: reading records line by line with errors that name file and line, and atomic writing. A path
ending in `.gz` is gzip-compressed JSONL, read and written the same way (what `zcat` shows is the JSONL)."""
from __future__ import annotations

import gzip
import io
import itertools
import json
import math
import zlib
from pathlib import Path
from typing import IO, Any, Iterable, Iterator

from ecab.schema.record import FormatError, Record
from ecab.schema.task import Task
from ecab.schema.trajectory import Trajectory

DEFAULT_MAX_LINE_BYTES = 4 * 2**20   # a task line longer than this is refused (benchmark.max_line_bytes)
GZIP_SUFFIX = ".gz"
GZIP_LEVEL = 6   # zlib's default: see docs/decisions.md#compact-run-folders


def is_gzip(path: str | Path) -> bool:
    return str(path).endswith(GZIP_SUFFIX)


def iter_jsonl(path: str | Path, *, max_line_bytes: int | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line. A line that is not valid UTF-8, not valid JSON, not an
    object, or (with `max_line_bytes`) longer than that many bytes raises FormatError with its number; an
    over-long line is refused without being read into memory."""
    path = Path(path)
    if not path.exists():
        raise FormatError("file not found", path=path)
    with (gzip.open(path, "rb") if is_gzip(path) else path.open("rb")) as handle:
        for lineno in itertools.count(1):
            try:
                raw = handle.readline(max_line_bytes + 2) if max_line_bytes else handle.readline()   # + "\r\n"
            except (EOFError, OSError, zlib.error) as exc:   # gzip: cut short or corrupt
                raise FormatError(f"unreadable gzip data ({exc})", path=path, line=lineno) from None
            if not raw:
                return
            if max_line_bytes and len(raw.rstrip(b"\r\n")) > max_line_bytes:
                raise FormatError(f"line longer than the cap of {max_line_bytes} bytes (benchmark.max_line_bytes)",
                                  path=path, line=lineno)
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise FormatError(f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at byte {exc.start + 1} of "
                                  "the line)", path=path, line=lineno) from None
            if not line.strip():
                continue
            try:
                # without its line ending: a line cut short would otherwise be reported at "column 1" of the next
                obj = json.loads(line.rstrip("\r\n"), parse_constant=_refuse_constant)
            except json.JSONDecodeError as exc:
                raise FormatError(f"malformed JSON: {exc.msg} (column {exc.colno})", path=path, line=lineno) from None
            except NonStandardNumber as exc:
                raise FormatError(f"{exc} is not a JSON number (standard JSON has no NaN or Infinity)",
                                  path=path, line=lineno) from None
            if not isinstance(obj, dict):
                raise FormatError(f"expected a JSON object, got {type(obj).__name__}", path=path, line=lineno)
            yield lineno, obj


def iter_tasks(path: str | Path, *, max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES) -> Iterator[Task]:
    """Stream tasks from a `benchmark.jsonl`; errors name file, line and field. Task ids must be unique: a
    repeated id is an error naming both lines (keyed by id, the later task would silently replace the
    earlier one and run twice)."""
    seen: dict[str, int] = {}
    for lineno, obj in iter_jsonl(path, max_line_bytes=max_line_bytes):
        try:
            task = Task.from_dict(obj)
        except FormatError as exc:
            raise exc.located(path, lineno) from None
        if task.id in seen:
            raise FormatError(f"duplicate task id {task.id!r} (first at {path}:{seen[task.id]})",
                              path=path, line=lineno)
        seen[task.id] = lineno
        yield task


def read_tasks(path: str | Path, *, max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES) -> list[Task]:
    return list(iter_tasks(path, max_line_bytes=max_line_bytes))


class NonStandardNumber(ValueError):
    """NaN, Infinity or -Infinity in a JSON text: Python's json accepts them, standard JSON (jq, JavaScript, the
    report) does not, and a NaN score would pass every comparison unnoticed."""


def _refuse_constant(name: str) -> Any:
    raise NonStandardNumber(name)


def dumps(record: Record | dict) -> str:
    """One JSONL line (no newline), UTF-8 kept as is like the original writer. Only standard JSON: a NaN or
    infinite number in a record is a FormatError naming the record (the readers refuse it too), except in a
    trajectory, whose numbers can come from a model's tool arguments: they are kept as strings ("NaN") so the
    finished episode is written, not lost."""
    data = record.to_dict() if isinstance(record, Record) else record
    if isinstance(record, Trajectory):
        data = _finite(data)
    try:
        return json.dumps(data, ensure_ascii=False, allow_nan=False)
    except ValueError:
        name = type(record).__name__
        rid = getattr(record, "id", None) or (record.get("id") if isinstance(record, dict) else None)
        raise FormatError(f"{name}{f' {rid!r}' if rid else ''} holds NaN or Infinity, which standard JSON has "
                          "no number for") from None


def _finite(value: Any) -> Any:
    """`value` with every NaN or infinite float replaced by its name as a string."""
    if isinstance(value, float) and not math.isfinite(value):
        return json.dumps(value)   # "NaN", "Infinity", "-Infinity"
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def write_jsonl(path: str | Path, records: Iterable[Record | dict]) -> int:
    """Write records one per line, atomically (temp file + rename); returns the count. A `.gz` path is one
    gzip stream with no file name or time in its header, so the same records always give the same bytes."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    n = 0
    with tmp.open("wb") as raw, _text_writer(raw, gzipped=is_gzip(path)) as handle:
        for record in records:
            handle.write(dumps(record) + "\n")
            n += 1
    tmp.replace(path)
    return n


def _text_writer(raw: IO[bytes], *, gzipped: bool) -> IO[str]:
    binary = gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=GZIP_LEVEL, mtime=0) if gzipped else raw
    return io.TextIOWrapper(binary, encoding="utf-8", newline="\n")


write_tasks = write_jsonl

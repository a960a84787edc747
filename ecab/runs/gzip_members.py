"""Append-only gzip files of one member per record: how trajectory part files are compressed
(docs/architecture.md §8, why and the figures: docs/decisions.md#compact-run-folders).

A gzip file may hold several members one after another, and every gzip reader (`zcat`, Python's gzip) reads
them as one stream. Each record is compressed on its own (`compress_record`) and appended as one member, so a
member never depends on another: a writer killed in the middle of a write leaves at most its last member
incomplete, and every member before it reads back whole. `iter_lines` decodes member by member with zlib, which
tells exactly where each member ends:

- an incomplete last member (the write a kill cut short) ends the file quietly, as a torn last JSONL line does;
  its episode has no record and runs again on resume;
- a member that does not decode (damage, or zero bytes left by a crash of the machine) is skipped up to the next
  gzip header, as a torn line in the middle of a JSONL file is skipped.

Members are decoded in slices of `_SLICE` bytes so that what is left over after a member's end is never more than
one slice (decoding the whole rest of a large file each time would copy it once per record).
"""
from __future__ import annotations

import gzip
import mmap
import zlib
from pathlib import Path
from typing import Iterator

from ecab.schema.jsonl import GZIP_LEVEL

GZIP_MAGIC = b"\x1f\x8b\x08"   # ID1, ID2 and CM=deflate: how every member starts (RFC 1952 §2.3)
_SLICE = 1 << 16
_GZIP_WBITS = 16 + zlib.MAX_WBITS   # zlib: expect a gzip header and trailer


def compress_record(data: bytes) -> bytes:
    """One member holding `data`; no time in its header, so the same record always gives the same bytes."""
    return gzip.compress(data, compresslevel=GZIP_LEVEL, mtime=0)


def iter_members(path: Path) -> Iterator[bytes]:
    """The decompressed content of each complete member of `path`, in file order (see the module docstring for
    incomplete and damaged members)."""
    with path.open("rb") as handle:
        size = path.stat().st_size
        if size == 0:
            return
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            position = 0
            while position < size:
                decoded = _decode_member(data, position, size)
                if decoded is None:            # damaged: go on from the next member's header, if any
                    position = data.find(GZIP_MAGIC, position + 1)
                    if position < 0:
                        return
                    continue
                content, end = decoded
                if end is None:                # the last member, cut short
                    return
                yield content
                position = end


def _decode_member(data: mmap.mmap, start: int, size: int) -> tuple[bytes, int | None] | None:
    """(content, the offset just past the member) of the member at `start`; (partial content, None) when the
    file ends inside it; None when it does not decode."""
    decoder = zlib.decompressobj(_GZIP_WBITS)
    parts: list[bytes] = []
    position = start
    try:
        while not decoder.eof:
            if position >= size:
                return b"".join(parts), None
            chunk = data[position:position + _SLICE]
            parts.append(decoder.decompress(chunk))
            position += len(chunk) - len(decoder.unused_data)
    except zlib.error:
        return None
    return b"".join(parts), position


def iter_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """(line number, line) of the JSONL text the complete members hold, numbered as `zcat` would show them when
    no member was damaged (a writer puts one record, one line, in each member; a member of several lines, e.g. a
    whole file compressed by hand, reads the same way)."""
    lineno = 0
    for content in iter_members(path):
        for line in content.splitlines():
            lineno += 1
            yield lineno, line

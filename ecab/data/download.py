"""What every fetch shares: a file appears under its final name only once it is complete and verified.

A download is written to a hidden temporary name in the target's own folder (`.<name>.part`, locked while
written), checked, and then renamed onto the final name (`os.replace`, atomic on one filesystem). A failure at
any point removes the temporary file, so nothing that looks complete is ever left behind, and a re-run starts
that file over. Every failure is a `FetchError` whose message is the one line the CLI prints.
"""
from __future__ import annotations

import errno
import fcntl
import hashlib
import http.client
import os
import shutil
import socket
import urllib.error
import urllib.parse
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Callable, Iterator

CHUNK = 1 << 20
USER_AGENT = "ecab-data-fetch"


class FetchError(Exception):
    """A download or a check that failed; str() is one line naming the file and what went wrong."""


def first_line(exc: BaseException) -> str:
    """An exception as one line: its first non-blank line, prefixed by its type when the text says little."""
    text = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def os_error_line(exc: OSError, where: Path) -> str:
    """A write failure as one line; a full disk says so plainly."""
    if exc.errno == errno.ENOSPC:
        return f"disk full while writing under {where}: free some space and re-run (the partial file was removed)"
    return f"cannot write under {where}: {first_line(exc)}"


def format_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"


def check_free_space(folder: Path, needed: int, what: str) -> None:
    """Refuse before downloading when the folder's filesystem cannot hold `needed` more bytes."""
    probe = Path(folder)
    while not probe.exists():
        probe = probe.parent
    free = shutil.disk_usage(probe).free
    if needed > free:
        raise FetchError(f"not enough disk space for {what} under {folder}: {format_bytes(needed)} needed, "
                         f"{format_bytes(free)} free")


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def git_blob_sha1_of(path: Path) -> str:
    """The git object id of the file's bytes (what the Hugging Face Hub gives as ETag for a non-LFS file)."""
    digest = hashlib.sha1(f"blob {Path(path).stat().st_size}\0".encode())
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def promote(staged: Path, final: Path) -> None:
    """Rename a verified file onto its final name, durably (the data first, then the folder entry)."""
    final.parent.mkdir(parents=True, exist_ok=True)
    with open(staged, "rb") as handle:
        os.fsync(handle.fileno())
    os.replace(staged, final)
    _fsync_dir(final.parent)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def _locked_part(final: Path) -> Iterator[tuple[Path, BinaryIO]]:
    """The temporary file of `final`, emptied and locked; removed again unless it was renamed away."""
    final.parent.mkdir(parents=True, exist_ok=True)
    part = final.with_name(f".{final.name}.part")
    handle = open(part, "a+b")
    try:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise FetchError(f"another fetch is writing {final} (its temporary file {part.name} is locked)") from None
        handle.seek(0)
        handle.truncate()   # a stale part of an earlier, killed run: start over
        try:
            yield part, handle
        except BaseException:
            part.unlink(missing_ok=True)
            raise
    finally:
        handle.close()


def download(url: str, final: Path, *, check: Callable[[Path], None], progress: bool = True,
             timeout: float = 60.0) -> None:
    """GET `url` into `final`: written to `.<name>.part` beside it, `check(part)` (raises FetchError), then
    renamed. On any failure the part is removed and `final` is untouched."""
    with _locked_part(final) as (part, handle):
        try:
            _get_into(url, handle, progress=progress, timeout=timeout)
            handle.flush()
        except OSError as exc:   # the network's OSErrors are turned into FetchError inside _get_into
            raise FetchError(os_error_line(exc, final.parent)) from None
        check(part)
        promote(part, final)


def _get_into(url: str, handle: BinaryIO, *, progress: bool, timeout: float) -> None:
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT, "Accept-Encoding": "identity"})
    host = urllib.parse.urlsplit(url).netloc or url
    received = 0
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            length = response.headers.get("Content-Length")
            expected = int(length) if length and length.isdigit() else None
            with _progress_bar(progress, expected, url.rsplit("/", 1)[-1]) as bar:
                while True:
                    chunk = _read(response, url, received)
                    if not chunk:
                        break
                    handle.write(chunk)
                    received += len(chunk)
                    bar.update(len(chunk))
    except urllib.error.HTTPError as exc:
        raise FetchError(f"HTTP {exc.code} {exc.reason}: {url}") from None
    except urllib.error.URLError as exc:
        reason = first_line(exc.reason) if isinstance(exc.reason, BaseException) else str(exc.reason)
        raise FetchError(f"cannot reach {host}: {reason}") from None
    except (http.client.HTTPException, ConnectionError, socket.timeout) as exc:
        raise FetchError(f"the download of {url} broke off after {received} bytes: {first_line(exc)}") from None
    if expected is not None and received != expected:
        raise FetchError(f"the download of {url} broke off: {received} of {expected} bytes received")


def _read(response, url: str, received: int) -> bytes:
    try:
        return response.read(CHUNK)
    except http.client.IncompleteRead as exc:
        raise FetchError(f"the download of {url} broke off after {received + len(exc.partial)} bytes "
                         f"({exc.expected} more expected)") from None


@contextmanager
def _progress_bar(enabled: bool, total: int | None, name: str):
    from tqdm import tqdm

    with tqdm(total=total, desc=name, unit="B", unit_scale=True, disable=not enabled, leave=False) as bar:
        yield bar

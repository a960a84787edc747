"""Temporary folders of builds (a catalog, a benchmark, the ONNX query encoder's export) that name their owner,
and the sweep that removes those whose owner died.

A build writes into a temporary folder and renames it into place when complete, so a kill never leaves a half
result that looks whole; but a killed build (`kill -9`, an OOM kill, a lost node) leaves the temporary folder
behind, 6.4 GB for a 1M-product catalog. The next build beside it sweeps such folders. Only those whose owner
is certainly dead go: the owner (pid, the process's start time, hashes of the host and of its boot) is written
into the folder's name at mkdir, so no window exists in which a live build's folder is nameless. A folder of
another host, or of a name this module did not make, is kept: we cannot tell whether its owner lives.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import socket
import uuid
from pathlib import Path

from ecab.core.liveness import boot_id, can_tell, proc_start

TAG = ".tmp-"
OWNED = re.compile(r"^(?P<base>.+)\.tmp-(?P<pid>\d+)-(?P<start>\d+)-(?P<host>[0-9a-f]{8})-(?P<boot>[0-9a-f]{8})"
                   r"-[0-9a-f]+$")


def _short(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def temp_name(base: str) -> str:
    """`<base>.tmp-<pid>-<start>-<host>-<boot>-<random>`: a name no other build uses, naming this process."""
    return (f"{base}{TAG}{os.getpid()}-{proc_start(os.getpid()) or 0}-{_short(socket.gethostname())}-"
            f"{_short(boot_id())}-{uuid.uuid4().hex[:8]}")


def make_temp_dir(parent: str | os.PathLike, base: str, *, mode: int = 0o755) -> Path:
    """A new temporary folder for a build of `base`, in `parent` (the cache folder the result is renamed into,
    so the rename stays on one file system)."""
    path = Path(parent) / temp_name(base)
    path.mkdir(mode=mode)
    return path


def owner_dead(name: str) -> bool:
    """Whether the build that made temporary folder `name` is certainly dead: made on this host, and either in an
    earlier boot or by a process that no longer exists (a pid since reused has another start time)."""
    match = OWNED.match(name)
    if match is None or not can_tell() or match["host"] != _short(socket.gethostname()):
        return False
    if match["boot"] != _short(boot_id()):
        return True   # a reboot ended every process of the earlier boot
    return proc_start(int(match["pid"])) != match["start"]


# Temporary folders of builds made before they named their owner: a catalog's staging folder
# (`.<fingerprint>-<mkdtemp's 8 characters>`) and the encoder export's (`.<name>.tmp-<pid>-<8 hex>`).
LEGACY = re.compile(r"^\.(?:[0-9a-f]{64}-[a-z0-9_]{8}|.+\.tmp-\d+-[0-9a-f]{8})$")
LEGACY_IDLE_S = 24 * 3600   # untouched this long: no build of the old kind is still writing into it


def legacy_abandoned(entry: Path, now: float | None = None) -> bool:
    """Whether a temporary folder of the old kind (no owner in its name) is certainly abandoned: nothing in it
    changed for LEGACY_IDLE_S (a build writes all the time), and for the kind that names a pid, that pid is not
    running here. Such folders stop existing after one sweep; new builds make owned ones."""
    if LEGACY.match(entry.name) is None:
        return False
    import time

    now = time.time() if now is None else now
    try:
        newest = max([entry.lstat().st_mtime] + [p.lstat().st_mtime for p in entry.rglob("*")])
    except OSError:
        return False
    if now - newest < LEGACY_IDLE_S:
        return False
    pid = re.search(r"\.tmp-(\d+)-[0-9a-f]{8}$", entry.name)
    return pid is None or not Path(f"/proc/{pid[1]}").exists()


def sweep(parent: str | os.PathLike, *, now: float | None = None) -> list[Path]:
    """Remove the temporary folders in `parent` whose owner is dead (and abandoned ones of the old kind);
    returns those removed. `now`: the wall clock (a test passes one)."""
    parent = Path(parent)
    if not parent.is_dir():
        return []
    removed = []
    for entry in sorted(parent.iterdir()):
        if not entry.is_dir() or entry.is_symlink():
            continue
        if (TAG in entry.name and owner_dead(entry.name)) or legacy_abandoned(entry, now):
            shutil.rmtree(entry, ignore_errors=True)
            if not entry.exists():
                removed.append(entry)
    return removed

"""One writer per run folder: an exclusive lock held by the process that runs it (ecab.run's driver, also
with runner=ray, whose workers write under the driver's lock).

The lock is `fcntl.flock` on `<run folder>/.lock`, a file that also records who holds it (pid, host, start
time). The kernel drops a flock when its holder dies, `kill -9` included, so a lock left behind is stale by
construction: the next run takes it over (and says whose it was) instead of asking anyone to delete a file.
A second run into the same folder while the first is alive is refused with one line naming the holder.

Shared storage across hosts (a cluster's run.dir): on NFSv4 (and Linux NFS clients since 2.6.12) flock is
carried out as a whole-file POSIX lock by the server, so runs on two hosts exclude each other too, and a
holder that dies loses its lock when its host's lease expires (the server's lease time, ~90 s by default).
On a file system that does not lock across hosts (NFS mounted with `nolock`, some FUSE and object-store
mounts), flock is only host-local: two hosts could then both run. As a second line of defence the recorded
holder is checked: a lock file naming a live process of this host that we could nevertheless lock means the
file system does not honour flock, and the run is refused.
"""
from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import time
from pathlib import Path

from ecab.core.liveness import boot_id as _boot_id, proc_start as _proc_start

LOCK_NAME = ".lock"


class RunLocked(RuntimeError):
    """Another live run holds the run folder."""


def describe(holder: dict) -> str:
    return (f"pid {holder.get('pid', '?')} on host {holder.get('host', '?')}"
            + (f" (since {holder['started']})" if holder.get("started") else ""))


class RunLock:
    """`acquire()` takes the folder's lock or raises RunLocked; `release()` (or process exit) lets it go.
    `stale` is the holder record of a dead run whose lock was taken over, if any."""

    def __init__(self, folder: str | Path):
        self.path = Path(folder) / LOCK_NAME
        self._fd: int | None = None
        self.stale: dict | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def read_holder(self) -> dict:
        try:
            return json.loads(self.path.read_text(encoding="utf-8") or "{}")
        except (OSError, ValueError):
            return {}

    def acquire(self) -> "RunLock":
        if self._fd is not None:
            return self
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise RunLocked(f"run folder {self.path.parent} is in use by {describe(self.read_holder())}; "
                                "wait for that run to end or use another run.name") from None
            raise RunLocked(f"cannot lock run folder {self.path.parent}: {exc.strerror or exc}") from None
        previous = self.read_holder()
        here = socket.gethostname()
        if previous.get("pid") and previous.get("host") == here and previous.get("boot") == _boot_id() \
                and previous.get("pid") != os.getpid() and previous.get("pid_start") is not None \
                and _proc_start(int(previous["pid"])) == previous["pid_start"]:
            # We got the flock, yet the recorded holder lives: this file system does not honour flock.
            os.close(fd)
            raise RunLocked(f"run folder {self.path.parent} is in use by {describe(previous)} (its file "
                            "system does not support locks); wait for that run to end or use another run.name")
        if previous.get("pid"):
            self.stale = previous
        record = {"pid": os.getpid(), "host": here, "boot": _boot_id(), "pid_start": _proc_start(os.getpid()),
                  "started": time.strftime("%Y-%m-%dT%H:%M:%S")}
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(record) + "\n").encode(), 0)
        os.fsync(fd)
        self._fd = fd
        return self

    def release(self) -> None:
        """Clear the holder record and drop the lock (a crash skips this; the kernel drops the lock)."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            os.ftruncate(fd, 0)
        except OSError:
            pass
        os.close(fd)

    def __enter__(self) -> "RunLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()

    def __del__(self) -> None:   # a caller that never released: do not keep the folder locked
        try:
            self.release()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


"""Is the process that recorded itself somewhere still alive? A pid alone cannot say (pids are reused), so an
owner is recorded as pid + the process's start time + this boot of this host: the run folder's lock
(ecab/runs/lock.py) and the temporary folders of builds (ecab/core/build_temp.py) both check it this way."""
from __future__ import annotations

import os
from pathlib import Path


def proc_start(pid: int) -> str | None:
    """When process `pid` started (clock ticks since boot, /proc/<pid>/stat field 22), or None if there is no
    such process (or no /proc): with the boot id it tells a live holder from a later process that reuses its
    pid."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def boot_id() -> str:
    """This boot of this host (a pid recorded before a reboot says nothing about the pids of this one)."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def can_tell() -> bool:
    """Whether this system lets us tell a dead owner from a live one (Linux's /proc); where it does not, every
    owner must be taken for alive."""
    return proc_start(os.getpid()) is not None and bool(boot_id())

"""What this machine lets a process use, and what it uses: `usable_cores()`, the cores runner=local spreads its
episode processes over and the throughput benchmark divides by; `resident_mb()`, this process's memory now."""
from __future__ import annotations

import math
import os
from pathlib import Path

CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")   # cgroup v2: "<quota> <period>" or "max <period>"


def cgroup_cpu_limit(path: Path = CGROUP_CPU_MAX) -> float | None:
    """The container's CPU quota in cores (a `docker --cpus 2` container sees every host core in its
    affinity mask but may only use 2), or None when there is no quota."""
    try:
        quota, period = path.read_text().split()[:2]
    except (OSError, ValueError):
        return None
    if quota == "max":
        return None
    try:
        return int(quota) / int(period)
    except (ValueError, ZeroDivisionError):
        return None


def usable_cores() -> int:
    """Cores this process may run on: its affinity mask, capped by a cgroup quota (rounded up: a quota of 1.5
    cores still keeps two processes busy)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:          # not Linux
        cores = os.cpu_count() or 1
    quota = cgroup_cpu_limit()
    if quota is not None:
        cores = min(cores, max(1, math.ceil(quota)))
    return max(1, cores)


def resident_mb() -> float:
    """This process's resident memory now, in MB (Linux /proc; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return 0.0

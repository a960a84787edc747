"""CPU seconds and resident memory of a process tree, read from /proc: what a benchmark counts as the harness's
when the harness runs in several processes (runner=local's episode processes, a local Ray's daemons and workers) and the
simulated endpoint, another process of the same tree, must be left out.

A process's CPU is its own (utime + stime) plus that of its children it has waited for (cutime + cstime), so a
tree's total over its live processes also holds every descendant that exited and was reaped inside the tree.
Linux only.
"""
from __future__ import annotations

import os
from pathlib import Path

TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold spaces: split after its closing one.
    return raw[raw.rindex(")") + 2:].split()


PAGE_MB = os.sysconf("SC_PAGE_SIZE") / 2**20


def process_table() -> dict[int, tuple[int, float, float]]:
    """pid -> (parent pid, CPU seconds with its waited-for children, resident MB) for every process now."""
    table: dict[int, tuple[int, float, float]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        fields = _stat_fields(int(entry))
        if fields is None:
            continue
        # After the name: state, ppid, ..., utime (index 11), stime, cutime, cstime, ..., rss in pages (21).
        ticks = sum(int(v) for v in fields[11:15])
        table[int(entry)] = (int(fields[1]), ticks / TICKS_PER_S, int(fields[21]) * PAGE_MB)
    return table


def _tree(root: int, exclude: set[int] | frozenset[int]) -> list[tuple[int, float, float]]:
    table = process_table()
    children: dict[int, list[int]] = {}
    for pid, row in table.items():
        children.setdefault(row[0], []).append(pid)
    rows, stack = [], [root]
    while stack:
        pid = stack.pop()
        if pid in exclude or pid not in table:
            continue
        rows.append(table[pid])
        stack.extend(children.get(pid, []))
    return rows


def tree_cpu_seconds(root: int, exclude: set[int] | frozenset[int] = frozenset()) -> float:
    """CPU seconds of `root` and its live descendants (with what they reaped), leaving out the subtrees of the
    pids in `exclude`. Call it while an excluded process is still alive: once reaped, its CPU moves into its
    parent's cutime."""
    return sum(row[1] for row in _tree(root, exclude))


def tree_rss_mb(root: int, exclude: set[int] | frozenset[int] = frozenset()) -> float:
    """Resident memory of `root` and its live descendants, without the subtrees of `exclude` (pages shared
    between processes count once per process, as `ps` shows them)."""
    return sum(row[2] for row in _tree(root, exclude))


def machine_busy_seconds() -> float:
    """CPU seconds every core of the machine has spent busy since boot (/proc/stat: all but idle and iowait),
    so that a benchmark can tell how much of the machine other processes took while it ran."""
    with open("/proc/stat") as handle:
        fields = handle.readline().split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(v) for v in fields[:8])
    return (user + nice + system + irq + softirq + steal) / TICKS_PER_S

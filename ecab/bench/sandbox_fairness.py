"""`python -m ecab.bench.sandbox --case fairness`: a benign call's latency while other episodes loop.

Issue 30 item 2: with 16 episodes sending CPU-bound code, first come first served made a benign `print(1)` wait
4.7 s at the median (23 ms alone). This case runs one benign episode (`print(1)`, then `--think-ms` of thinking,
`--benign-calls` times) alone, then beside `--hostile` episodes that each loop CPU-bound calls (every one runs
into the wall limit), once per scheduler (`fifo`: the pool before issue 30; `fair`: ecab/env/sandbox_queue.py),
with the default limits (so `max_parallel` slots: 4 on 2 cores). It prints, per scheduler and case, the benign
call's p50/p95 as the caller sees it and the p50 of its queueing and of its run, then p50 under load / p50
alone. Target: within 3x.
"""
from __future__ import annotations

import statistics
import threading
import time
from dataclasses import dataclass

from ecab.env.sandbox import Sandbox, SandboxLimits

TARGET_RATIO = 3.0
BENIGN = "print(1)"
HOSTILE = "x = 0\nwhile True:\n    x += 1"


@dataclass
class FairnessRow:
    scheduler: str
    hostile: int
    p50_ms: float
    p95_ms: float
    queued_p50_ms: float
    run_p50_ms: float
    calls: int


def benign_episode(box: Sandbox, calls: int, think_s: float) -> list:
    """One episode's python_execute calls, one at a time as an episode makes them: [(total, queued, run)] s."""
    timings = []
    for _ in range(calls):
        started = time.perf_counter()
        result = box.execute(BENIGN, owner="benign")
        if result.output != "1\n":
            raise RuntimeError(f"benign call failed: {result.error}")
        timings.append((time.perf_counter() - started, result.queued_s, result.run_s))
        time.sleep(think_s)
    return timings


def hostile_episodes(box: Sandbox, count: int, stop: threading.Event) -> tuple[list[threading.Thread], list[int]]:
    """`count` episodes, each looping CPU-bound calls until `stop`; returns the threads and a shared count of
    finished hostile calls."""
    finished = [0]

    def episode(n: int) -> None:
        while not stop.is_set():
            box.execute(HOSTILE, owner=f"hostile-{n}")
            finished[0] += 1
    threads = [threading.Thread(target=episode, args=(n,), daemon=True) for n in range(count)]
    for thread in threads:
        thread.start()
    return threads, finished


def measure_scheduler(scheduler: str, hostile: int, calls: int, think_s: float) -> list[FairnessRow]:
    """The benign episode alone, then beside `hostile` looping episodes, on one pool with this scheduler."""
    box = Sandbox(SandboxLimits(), scheduler=scheduler)
    try:
        benign_episode(box, 5, think_s)                    # warm-up: the pool's sandboxes started
        rows = [row(scheduler, 0, benign_episode(box, calls, think_s))]
        stop = threading.Event()
        threads, finished = hostile_episodes(box, hostile, stop)
        while finished[0] < hostile:                       # every hostile episode has run one loop by now
            time.sleep(0.05)
        rows.append(row(scheduler, hostile, benign_episode(box, calls, think_s)))
        stop.set()
        for thread in threads:
            thread.join()
        return rows
    finally:
        box.close()


def row(scheduler: str, hostile: int, timings: list) -> FairnessRow:
    totals = sorted(t for t, _, _ in timings)
    return FairnessRow(scheduler, hostile, statistics.median(totals) * 1000,
                       totals[int(0.95 * (len(totals) - 1))] * 1000,
                       statistics.median(q for _, q, _ in timings) * 1000,
                       statistics.median(r for _, _, r in timings) * 1000, len(timings))


def report(rows: list[FairnessRow]) -> None:
    print(f"\n{'scheduler':<10}{'hostile':>8}{'p50 ms':>10}{'p95 ms':>10}{'queued p50':>12}{'run p50':>9}"
          f"{'calls':>7}")
    for r in rows:
        print(f"{r.scheduler:<10}{r.hostile:>8}{r.p50_ms:>10.1f}{r.p95_ms:>10.1f}{r.queued_p50_ms:>12.1f}"
              f"{r.run_p50_ms:>9.1f}{r.calls:>7}")
    print()
    for scheduler in dict.fromkeys(r.scheduler for r in rows):
        alone, loaded = (r for r in rows if r.scheduler == scheduler)
        ratio = loaded.p50_ms / alone.p50_ms
        verdict = "met" if ratio <= TARGET_RATIO else "NOT met"
        print(f"{scheduler}: benign p50 beside {loaded.hostile} hostile episodes {loaded.p50_ms:.1f} ms, alone "
              f"{alone.p50_ms:.1f} ms: {ratio:.1f}x (target <= {TARGET_RATIO:.0f}x: {verdict})")


def run(schedulers: list[str], hostile: int, calls: int, think_ms: float) -> None:
    rows = [r for scheduler in schedulers for r in measure_scheduler(scheduler, hostile, calls, think_ms / 1000)]
    report(rows)

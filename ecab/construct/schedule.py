"""Scheduling construction: the first n valid candidates per intent, independent of completion order
(docs/decisions.md#construction-workers).

The accepted tasks of an intent are the first `n` valid candidates in pool order, and only candidates before
the n-th accepted one are recorded (as rejected or skipped): results are keyed by candidate index, so the
output is the same whatever the scheduling and whatever the worker count. The parent builds candidates
itself from the start; the workers join in as soon as they are ready, so they only add throughput.
review_driven candidates go to the parent first (they read reviews from LanceDB).
"""
from __future__ import annotations

from collections import Counter
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field
from typing import Callable

from ecab.construct.workers import WorkerPool


@dataclass
class IntentProgress:
    intent: str
    candidates: list[str]
    n: int
    results: dict[int, dict] = field(default_factory=dict)
    next_index: int = 0
    in_flight: int = 0

    def decided(self) -> list[dict]:
        """Outcomes of the contiguous prefix of finished candidates, cut right after the n-th accepted."""
        out, accepted, i = [], 0, 0
        while accepted < self.n and i in self.results:
            out.append(self.results[i])
            accepted += self.results[i]["status"] == "ok"
            i += 1
        return out

    @property
    def accepted(self) -> int:
        return sum(r["status"] == "ok" for r in self.decided())

    @property
    def done(self) -> bool:
        exhausted = self.next_index >= len(self.candidates) and self.in_flight == 0
        return self.accepted >= self.n or exhausted

    def wants_more(self, window: int) -> bool:
        """Submit another candidate while fewer are in flight than are still needed (plus a little slack)."""
        if self.accepted >= self.n or self.next_index >= len(self.candidates):
            return False
        return self.in_flight < min(window, max(1, self.n - self.accepted) + 1)


# Parent-first intents; see docs/decisions.md#construction-workers.
PARENT_FIRST = frozenset({"review_driven"})   # a worker takes these only when nothing else is left


def _take(progress: dict[str, IntentProgress], window: int, allowed: Callable[[str], bool]
          ) -> tuple[IntentProgress, int] | None:
    """The next candidate of the first intent (in order) that may go there and still wants one."""
    for p in progress.values():
        if allowed(p.intent) and p.wants_more(window):
            index = p.next_index
            p.next_index += 1
            p.in_flight += 1
            return p, index
    return None


def _record(p: IntentProgress, result: dict) -> None:
    p.in_flight -= 1
    p.results[result["index"]] = result


def schedule(progress: dict[str, IntentProgress], run_local: Callable[[str, int, str], dict],
              pool: WorkerPool | None, *, window: int, bar, parent_builds: bool = True) -> Counter:
    """Build candidates until every intent has its n accepted ones (or runs out).

    The parent builds candidates itself from the start; spawned workers join as soon as they are ready,
    so they only ever add throughput (their start-up overlaps the parent's work instead of delaying it).
    `parent_builds=False` leaves everything to the workers (tests use it to exercise the worker path).
    Results are keyed by candidate index, so who builds what, and when, never changes the output.
    Returns how many candidates the parent and the workers built.
    """
    built: Counter = Counter()
    pending: dict[Future, tuple[IntentProgress, int]] = {}
    pinned = PARENT_FIRST if (parent_builds and pool is not None) else frozenset()
    shown = 0
    while True:
        for fut in [f for f in pending if f.done()]:
            p, k = pending.pop(fut)
            pool.busy[k] -= 1
            _record(p, fut.result())
            built["workers"] += 1
        while pool is not None and (k := pool.free_worker()) is not None:
            picked = (_take(progress, window, lambda intent: intent not in pinned)
                      or _take(progress, window, lambda intent: True))
            if picked is None:
                break
            p, index = picked
            pending[pool.submit(k, p.intent, index, p.candidates[index])] = (p, k)
        picked = None
        if parent_builds or pool is None:
            picked = (_take(progress, window, lambda intent: intent in pinned)
                      or _take(progress, window, lambda intent: True))
        if picked is not None:
            p, index = picked
            _record(p, run_local(p.intent, index, p.candidates[index]))
            built["parent"] += 1
        elif pending or (pool is not None and pool.starting() and _wants_work(progress, window)):
            wait(list(pending) + pool.starting(), return_when=FIRST_COMPLETED)
        else:
            break
        if bar is not None:
            now = sum(p.accepted for p in progress.values())
            bar.update(now - shown)
            shown = now
    return built


def _wants_work(progress: dict[str, IntentProgress], window: int) -> bool:
    return any(p.wants_more(window) for p in progress.values())

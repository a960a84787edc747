"""Which episodes a runner loop lets start: as many in flight as the harness keeps up with, at most
runner.concurrency (docs/decisions.md#admission).

Why not simply C at once. Episodes started together move in lockstep (an endpoint with a steady latency answers
them together), so their first searches, a few turns in, arrive as one burst. And above the machine's CPU limit,
more episodes in flight do not finish more episodes per second, they only queue: measured at C = 1024 on two
cores, every tool call waited ~1.5 s and every LLM call ~1.6 s beyond the endpoint's latency, for the episodes/s
that a few hundred in flight reach. Queueing also inflates the latencies the trajectories record.

How. A probe measures the harness's own queueing delay every `probe_interval_s`: the round trip of a no-op
through the tool threads (their queue, then the event loop's, so both a busy loop and busy tool threads show).
The window of episodes allowed in flight starts at `initial` and is reconsidered every `decide_every_s` on the
median of that second's probes: under `target_delay_s` it grows by `growth_per_s`, which staggers the first
wave's starts; over it, it shrinks to `decrease` x the episodes in flight. The median, not the worst probe: episodes
that move in step make short bursts of queueing a machine rides out; only a queue that lasts means more episodes
than the machine serves. Once a second: the load of an episode started a moment ago (its searches) arrives only
a few turns later, and reacting faster than that would overshoot. Episodes in flight are never paused; only new
ones wait, in unit order.
"""
from __future__ import annotations

import asyncio
import collections
import statistics
import time
from typing import Any, Callable

from ecab.config import AdmissionConfig


# runner.admission: the typed section is the settings (ecab/config/schema.py holds the fields, their defaults and
# checks: enabled, target_delay_s, initial, growth_per_s, decrease, decide_every_s, probe_interval_s, floor).
AdmissionSettings = AdmissionConfig


PROBES_KEPT = 36_000   # the probes describe()'s p95 is over: the last hour at 10 a second


def _noop() -> None:
    return None


class Admission:
    """`async with admission:` around an episode: waits until the window has room. `run_probe()` is the
    controller; the caller runs it as a task for the duration of the run and cancels it at the end."""

    def __init__(self, concurrency: int, settings: AdmissionSettings | None = None, *,
                 clock: Callable[[], float] = time.monotonic):
        self.settings = settings or AdmissionSettings()
        self._clock = clock   # monotonic seconds; a test passes a fake one
        self.limit = max(1, concurrency)
        self.window = float(min(self.limit, self.settings.initial) if self.settings.enabled else self.limit)
        self.in_flight = 0
        self._waiting: collections.deque[asyncio.Future] = collections.deque()
        self._last_decision: float | None = None
        self._recent: list[float] = []   # the probes since the last decision
        self._last_change = clock()
        self._started_at = self._last_change
        self._area = 0.0        # integral of episodes in flight over time, for the mean
        self.peak_in_flight = 0
        self.decreases = 0
        self.delays: collections.deque[float] = collections.deque(maxlen=PROBES_KEPT)   # for the p95

    # -- the gate ---------------------------------------------------------------------------------------------

    async def __aenter__(self) -> "Admission":
        if self._waiting or self.in_flight >= self._allowed():
            future = asyncio.get_running_loop().create_future()
            self._waiting.append(future)
            try:
                await future
            except asyncio.CancelledError:
                if future in self._waiting:
                    self._waiting.remove(future)
                elif future.done() and not future.cancelled():
                    self._leave()   # admitted just as it was cancelled: give the place back
                raise
        else:
            self._enter()
        return self

    async def __aexit__(self, *exc) -> None:
        self._leave()

    def _allowed(self) -> int:
        return max(1, min(self.limit, int(self.window)))

    def _enter(self) -> None:
        self._account()
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)

    def _leave(self) -> None:
        self._account()
        self.in_flight -= 1
        self._admit()

    def _admit(self) -> None:
        """Start waiting episodes, first come first, while the window has room."""
        while self._waiting and self.in_flight < self._allowed():
            future = self._waiting.popleft()
            if not future.done():
                self._enter()
                future.set_result(None)

    def _account(self) -> None:
        now = self._clock()
        self._area += self.in_flight * (now - self._last_change)
        self._last_change = now

    # -- the controller ---------------------------------------------------------------------------------------

    async def run_probe(self) -> None:
        if not self.settings.enabled:
            return
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self.settings.probe_interval_s)
            sent = self._clock()
            await loop.run_in_executor(None, _noop)
            now = self._clock()
            self.observe(now - sent, now)

    def observe(self, delay_s: float, now: float) -> None:
        """One probe's delay; every `decide_every_s`, the window grows (median under the target: by the time
        since the last decision) or shrinks (over it)."""
        self.delays.append(delay_s)
        self._recent.append(delay_s)
        s = self.settings
        if self._last_decision is None:
            self._last_decision = now
        elapsed = now - self._last_decision
        if elapsed < s.decide_every_s:
            return
        median = statistics.median(self._recent)
        self._recent.clear()
        self._last_decision = now
        if median > s.target_delay_s:
            self.window = max(float(min(s.floor, self.limit)), min(self.window, self.in_flight * s.decrease))
            self.decreases += 1
        else:
            self.window = min(float(self.limit), self.window + s.growth_per_s * elapsed)
            self._admit()

    def describe(self) -> dict[str, Any]:
        """What the manifest's runner_stats records under `admission` (the probe p95 is of the last hour)."""
        self._account()
        span = max(1e-9, self._last_change - self._started_at)
        delays = sorted(self.delays)
        p95 = delays[min(len(delays) - 1, int(0.95 * len(delays)))] if delays else None
        return {"enabled": self.settings.enabled, "limit": self.limit,
                "mean_in_flight": round(self._area / span, 1), "peak_in_flight": self.peak_in_flight,
                "window": round(self.window, 1), "decreases": self.decreases,
                "delay_p95_ms": None if p95 is None else round(1000 * p95, 1)}

"""Adaptive per-endpoint concurrency limits (docs/architecture.md §7.3).

One limiter per model endpoint. It keeps a concurrency window that shrinks multiplicatively on a 429 and
grows additively on success (AIMD, as TCP does), honours Retry-After by pausing new calls until that
moment, and - because a caller releases its slot before it sleeps through a back-off - a call that is
waiting to retry never holds capacity that another call could use.

Whoever builds a chat client injects the endpoint's limiter (there is no process-wide registry); the client
(ecab/llm/client.py) holds a slot around each HTTP attempt:

    limiter = AdaptiveLimiter(cfg.runner.limits)       # LimiterSettings: the typed runner.limits section
    chat = ChatClient(settings, limiter=limiter)      # every episode's agent shares `chat`
    # inside the client, per attempt:
    async with limiter.slot() as slot:
        response = await post(...)                    # on a 429: slot.throttled(retry_after)
    # ...sleep the back-off here, outside the slot, then try again

`runner=local` builds an in-process `AdaptiveLimiter` per run; `runner=ray` starts one limiter actor per
endpoint (a Ray actor running `LimiterService`) and every episode worker builds a `SyncedLimiter` on it (same
interface): it enforces a local share of the window and syncs its outcomes with the actor ten times a second
(at once after a 429).
"""
from __future__ import annotations

import asyncio
import collections
import contextlib
import heapq
import itertools
import time
from dataclasses import asdict, dataclass
from typing import AsyncIterator, Callable, Protocol

from ecab.config import LimitsConfig

OK, THROTTLED, FAILED = "ok", "throttled", "failed"
NEW_CALL_GRACE = 0.25   # new calls resume this fraction of Retry-After after the retries (see AimdWindow)
SYNC_INTERVAL_S = 0.1   # how often a Ray worker's SyncedLimiter reports to the endpoint's limiter actor
ACTIVE_WORKER_S = 2.0   # workers that reported this recently share the window
SERVED_RATE_HORIZON_S = 2.0   # the served rate is measured over this long (at least two round trips)
STALL_ROUND_TRIPS = 4         # with no call served since the last decrease, decrease again after this long
PACE_ROUND_TRIPS = 3          # after a 429, call starts are spread over the round trip for this many of them


# runner.limits: the typed section is the settings (ecab/config/schema.py holds the fields, their defaults and
# checks: max_concurrency, min_concurrency, initial, decrease, increase, max_retry_after_s).
LimiterSettings = LimitsConfig


@dataclass
class LimiterStats:
    ok: int = 0
    throttled: int = 0
    failed: int = 0
    peak_in_flight: int = 0
    window: float = 0.0
    min_window: float = 0.0
    first_at: float | None = None    # wall-clock time of the first release
    last_at: float | None = None
    paused_s: float = 0.0            # total Retry-After pause imposed

    def rate_per_s(self) -> float:
        """Successful requests per second between the first and the last finished call."""
        if not self.first_at or not self.last_at or self.last_at <= self.first_at:
            return 0.0
        return self.ok / (self.last_at - self.first_at)

    def as_dict(self) -> dict:
        return {**asdict(self), "ok_per_s": round(self.rate_per_s(), 3)}


class Limiter(Protocol):
    async def acquire(self, retry: bool = False, since: float | None = None) -> None: ...

    def release(self, outcome: str = OK, retry_after: float | None = None,
                latency_s: float | None = None) -> None: ...


class Slot:
    """One acquired unit of concurrency; records how the call went (default: ok)."""

    def __init__(self) -> None:
        self.outcome = OK
        self.retry_after: float | None = None

    def throttled(self, retry_after: float | None = None) -> None:
        """The endpoint answered 429 (with this Retry-After, seconds, if it sent one)."""
        self.outcome, self.retry_after = THROTTLED, retry_after

    def failed(self) -> None:
        """Some other error (timeout, 5xx): the slot is released without moving the window."""
        self.outcome = FAILED


@contextlib.asynccontextmanager
async def slot(limiter: Limiter, retry: bool = False, since: float | None = None) -> AsyncIterator[Slot]:
    """`retry`: the call failed before; `since`: when its first attempt started (oldest retries go first)."""
    await limiter.acquire(retry, since)
    handle = Slot()
    started = time.monotonic()
    try:
        yield handle
    except BaseException:
        if handle.outcome == OK:
            handle.failed()
        raise
    finally:
        limiter.release(handle.outcome, handle.retry_after, time.monotonic() - started)


class AimdWindow:
    """The window arithmetic, shared by the in-process limiter and the Ray limiter actor: additive increase,
    one multiplicative decrease per congestion episode but never below the served window, the Retry-After
    pause. `now` is the owner's clock (monotonic in a process, wall time across Ray nodes).
    See docs/decisions.md#limiter-window."""

    def __init__(self, settings: LimiterSettings):
        self.settings = s = settings
        self.window = float(min(s.max_concurrency, max(s.min_concurrency, s.initial or s.max_concurrency)))
        self.paused_until = 0.0           # no call starts before this (Retry-After)
        self.new_calls_until = 0.0        # no new (not retried) call starts before this
        self._last_decrease = float("-inf")
        self._latest_served_start = float("-inf")   # when the most recently started served call started
        self.throttled_at = float("-inf")            # the last 429
        self._latency_ewma = 1.0
        self._served: collections.deque[tuple[float, int]] = collections.deque()   # (started, OK count)
        self._served_in_horizon = 0
        self._first_served_at: float | None = None
        self.stats = LimiterStats(window=self.window, min_window=self.window)

    def pace_interval(self, now: float) -> float:
        """Seconds between call starts: for PACE_ROUND_TRIPS round trips after a 429, the window's calls
        start evenly over a round trip (else 0); paced by the window, not a measured rate.
        See docs/decisions.md#limiter-window."""
        if now - self.throttled_at > PACE_ROUND_TRIPS * self._latency_ewma:
            return 0.0
        return self._latency_ewma / max(self.window, 1.0)

    def served_window(self, now: float) -> float:
        """Calls in flight the endpoint has just been serving: the rate of calls it admitted (and served)
        over the last horizon, times the round trip, at most max_concurrency; 0 before any call came back."""
        horizon = max(SERVED_RATE_HORIZON_S, 2 * self._latency_ewma)
        while self._served and self._served[0][0] <= now - horizon:
            self._served_in_horizon -= self._served.popleft()[1]
        if self._first_served_at is None:
            return 0.0
        # Calls that started in the last round trip have mostly not come back: the starts counted cover the
        # horizon minus one round trip (and at least one round trip, right after the first calls return).
        rtt = self._latency_ewma
        span = max(rtt, min(horizon, now - self._first_served_at) - rtt)
        return min(float(self.settings.max_concurrency), self._served_in_horizon / span * rtt)

    def _may_decrease(self, now: float, retry_after: float | None) -> bool:
        """One decrease per congestion episode (TCP's rule: one reduction per window of data): 429s are news
        only once a call started after the last decrease has been served, so the window it set has been
        tried. A burst of 429s from one overload is one signal, not fifty; and at start-up a second cut
        does not land before the first calls' successes are known (on Ray they arrive up to a sync
        later). If nothing is served at all, the window shrinks again every few round trips."""
        if self._latest_served_start > self._last_decrease:
            return True
        return now - self._last_decrease >= STALL_ROUND_TRIPS * max(self._latency_ewma, retry_after or 0.0)

    def record(self, outcome: str, retry_after: float | None, latency_s: float | None, now: float,
               count: int = 1, in_flight: int | None = None) -> None:
        """Account `count` outcomes. `in_flight`: calls in flight when they came back (this one included);
        a decrease starts from it when it is below the window (a window far above what is in use, like
        the 1024 a limiter starts at, would otherwise take many round trips of 429s to come down)."""
        if latency_s and outcome == OK:
            # The round trip of a served call: a 429 comes back at once, and counting it would shrink
            # "once per round trip" to once per few milliseconds.
            self._latency_ewma = 0.9 * self._latency_ewma + 0.1 * latency_s
        s = self.settings
        if outcome == OK:
            self.stats.ok += count
            started = now - (latency_s if latency_s is not None else self._latency_ewma)
            self._latest_served_start = max(self._latest_served_start, started)
            if self._first_served_at is None or started < self._first_served_at:
                self._first_served_at = started
            self._served.append((started, count))
            self._served_in_horizon += count
            for _ in range(count):
                self.window = min(float(s.max_concurrency), self.window + s.increase / max(self.window, 1.0))
            # Never below what the endpoint has just served: undoes a cut made before anything had come
            # back (at start-up, and on Ray, where the first cut sees only one worker's calls).
            self.window = max(self.window, self.served_window(now))
        elif outcome == THROTTLED:
            self.stats.throttled += count
            self.throttled_at = now
            if self._may_decrease(now, retry_after):
                used = self.window if in_flight is None else min(self.window, float(max(in_flight, 1)))
                self.window = max(float(s.min_concurrency), used * s.decrease, self.served_window(now))
                self._last_decrease = now
            if retry_after:
                wait = min(float(retry_after), s.max_retry_after_s)
                if now + wait > self.paused_until:
                    self.stats.paused_s += now + wait - max(now, self.paused_until)
                    self.paused_until = now + wait
                # New calls wait a little longer than Retry-After, so that the throttled calls, which retry
                # after exactly Retry-After, go first: otherwise a queued new call takes the freed capacity
                # each time and a retried call can starve until it runs out of attempts.
                self.new_calls_until = max(self.new_calls_until, now + wait * (1 + NEW_CALL_GRACE))
        else:
            self.stats.failed += count
        wall = time.time()
        self.stats.first_at = self.stats.first_at or wall
        self.stats.last_at = wall
        self.stats.window = round(self.window, 3)
        self.stats.min_window = round(min(self.stats.min_window, self.window), 3)


class AdaptiveLimiter:
    """AIMD concurrency window for one endpoint, on one asyncio loop."""

    def __init__(self, settings: LimiterSettings | None = None, *, clock: Callable[[], float] = time.monotonic):
        self.settings = settings or LimiterSettings()
        self.clock = clock   # monotonic seconds, the same clock as the running loop's (a test passes loop.time)
        self.aimd = AimdWindow(self.settings)
        self.in_flight = 0
        # Callers waiting for a slot, first come first served. A release hands the freed slot straight
        # to the next waiter (no wake-everyone condition: at C=1024 that costs O(C) per release).
        # Retried calls have their own queue, served first.
        self._waiters: collections.deque[asyncio.Future] = collections.deque()
        # (first attempt's start, arrival number, future): the call that has waited longest goes first.
        self._retries: list[tuple[float, int, asyncio.Future]] = []
        self._arrivals = itertools.count()
        self._pause_timer: asyncio.TimerHandle | None = None
        self._next_start_at = 0.0   # paced after a 429 (AimdWindow.pace_interval)

    # The window and the pause (monotonic time) live in the AIMD state (a SyncedLimiter sets them there).
    @property
    def window(self) -> float:
        return self.aimd.window

    @property
    def stats(self) -> LimiterStats:
        return self.aimd.stats

    def slot(self, retry: bool = False, since: float | None = None):
        return slot(self, retry, since)

    def _pause_end(self, retry: bool) -> float:
        # Everyone honours Retry-After; new calls wait a little longer (AimdWindow.new_calls_until) so
        # that the throttled calls, retrying after exactly Retry-After, go first.
        return self.aimd.paused_until if retry else self.aimd.new_calls_until

    def _resume_at(self, retry: bool) -> float:
        return max(self._pause_end(retry), self._next_start_at)

    def _can_start(self, retry: bool = False) -> bool:
        return self.in_flight < int(self.window) and self.clock() >= self._resume_at(retry)

    def _take(self) -> None:
        now = self.clock()
        interval = self.aimd.pace_interval(now)
        if interval:
            self._next_start_at = max(now, self._next_start_at) + interval
        self.in_flight += 1
        self.stats.peak_in_flight = max(self.stats.peak_in_flight, self.in_flight)

    def _next_is_retry(self) -> bool | None:
        """Whether the next waiter is a retry (retries before new calls); None when nobody waits."""
        if self._retries:
            return True
        return False if self._waiters else None

    def _pop_next(self) -> asyncio.Future:
        return heapq.heappop(self._retries)[2] if self._retries else self._waiters.popleft()

    async def acquire(self, retry: bool = False, since: float | None = None) -> None:
        """Wait for a slot. `retry`: this call was throttled or failed before; it goes ahead of new calls,
        the one whose first attempt started earliest (`since`, monotonic) first."""
        if self._next_is_retry() is None and self._can_start(retry):
            self._take()
            return
        waiter = asyncio.get_running_loop().create_future()
        if retry:
            entry = (self.clock() if since is None else since, next(self._arrivals), waiter)
            heapq.heappush(self._retries, entry)
        else:
            self._waiters.append(waiter)
        self._dispatch()            # a pause may need its timer
        try:
            await waiter            # the slot was taken for us by _dispatch
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release(FAILED)   # granted, then cancelled: give the slot back unused
            elif retry:
                self._retries = [e for e in self._retries if e[2] is not waiter]
                heapq.heapify(self._retries)
            else:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(waiter)
            raise

    def _dispatch(self) -> None:
        """Hand free slots to waiters in order; during a Retry-After pause, come back when it ends."""
        while (retry := self._next_is_retry()) is not None and self._can_start(retry):
            waiter = self._pop_next()
            if not waiter.done():
                self._take()
                waiter.set_result(None)
        retry = self._next_is_retry()
        if retry is None:
            return
        resume_at = self._resume_at(retry)
        if resume_at <= self.clock():
            return
        timer = self._pause_timer
        if timer is not None and timer.when() <= resume_at + 1e-3:
            return                  # an earlier (or the same) wake-up is already set
        if timer is not None:
            timer.cancel()          # a retry arrived: it may start before the new calls' pause ends

        def resume() -> None:
            self._pause_timer = None
            self._dispatch()

        loop = asyncio.get_running_loop()
        self._pause_timer = loop.call_at(loop.time() + resume_at - self.clock(), resume)

    def release(self, outcome: str = OK, retry_after: float | None = None, latency_s: float | None = None) -> None:
        in_flight = self.in_flight
        self.in_flight = max(0, self.in_flight - 1)
        self.aimd.record(outcome, retry_after, latency_s, self.clock(), in_flight=in_flight)
        self.wake()

    def wake(self) -> None:
        """Hand out slots the window or the pause may have freed."""
        if self._next_is_retry() is not None:
            self._dispatch()

    def describe(self) -> dict:
        return self.stats.as_dict()


# ------------------------------------------------------------------------------------------ the endpoint

def endpoint_key(settings) -> str:
    """The limiter's endpoint: the base URL plus the model config's name (a gateway limits per model)."""
    return f"{settings.base_url or 'offline'}|{settings.name}"


# ----------------------------------------------------------------------------------------- the Ray side

class SyncedLimiter:
    """A Ray episode worker's handle on its endpoint's limiter actor: a local share of the window, synced
    every SYNC_INTERVAL_S (at once after a 429); see docs/decisions.md#limiter-sync."""

    def __init__(self, actor, worker_id: str, settings: LimiterSettings | None = None):
        self.actor, self.worker_id = actor, worker_id
        self.local = AdaptiveLimiter(settings or LimiterSettings())
        self._counts: collections.Counter = collections.Counter()
        self._retry_after = 0.0
        self._latency_s: float | None = None
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task | None = None

    def slot(self, retry: bool = False, since: float | None = None):
        return slot(self, retry, since)

    async def acquire(self, retry: bool = False, since: float | None = None) -> None:
        if self._task is None:      # started on the worker's own loop, on first use
            self._wake = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._sync_loop())
        await self.local.acquire(retry, since)

    def release(self, outcome: str = OK, retry_after: float | None = None, latency_s: float | None = None) -> None:
        self.local.release(outcome, retry_after, latency_s)
        self._counts[outcome] += 1
        if outcome == OK and latency_s:
            self._latency_s = latency_s   # a served call's round trip (see AimdWindow.record)
        if outcome == THROTTLED:
            self._retry_after = max(self._retry_after, float(retry_after or 0.0))
            if self._wake is not None:
                self._wake.set()    # the other workers should hear of a 429 now, not in 100 ms

    async def _sync_loop(self) -> None:
        while True:
            wake = self._wake
            assert wake is not None   # set before the loop starts
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(wake.wait(), SYNC_INTERVAL_S)
            wake.clear()
            if self._counts or self.local._next_is_retry() is not None:   # idle workers do not poll the actor
                with contextlib.suppress(Exception):   # a lost sync is retried at the next interval
                    await self.flush()

    async def flush(self) -> None:
        """Report the outcomes since the last sync; take this worker's window share and the pause."""
        counts, self._counts = dict(self._counts), collections.Counter()
        retry_after, self._retry_after = self._retry_after, 0.0
        reply = await self.actor.report.remote(self.worker_id, counts, retry_after or None, self._latency_s,
                                               self.local.in_flight)
        aimd = self.local.aimd
        aimd.window = max(1.0, float(reply["window"]))
        now_wall, now = time.time(), time.monotonic()
        aimd.paused_until = max(aimd.paused_until, now + float(reply["paused_until"]) - now_wall)
        aimd.new_calls_until = max(aimd.new_calls_until, now + float(reply["new_calls_until"]) - now_wall)
        self.local.wake()

    def describe(self) -> dict:
        return self.local.describe()


class LimiterService:
    """The body of the Ray limiter actor: the endpoint's AIMD window over every worker's outcomes, in wall
    time (workers may run on other nodes). Workers that reported within ACTIVE_WORKER_S share the window."""

    def __init__(self, settings: dict | None = None):
        self.aimd = AimdWindow(LimiterSettings(**(settings or {})))
        self._workers: dict[str, tuple[float, int]] = {}    # worker -> (last report, its calls in flight)

    # async: the actor then runs every call on one event loop, so reports never interleave
    async def report(self, worker_id: str, counts: dict[str, int], retry_after: float | None,
                     latency_s: float | None, in_flight: int) -> dict:
        now = time.time()
        self._workers[worker_id] = (now, int(in_flight))
        active = {w: v for w, v in self._workers.items() if now - v[0] <= ACTIVE_WORKER_S}
        # What was in use across workers when the 429s came back: the latest in-flight counts plus them.
        used = sum(n for _, n in active.values()) + int(counts.get(THROTTLED, 0))
        for outcome in (OK, FAILED, THROTTLED):   # successes first: a 429 in the batch has the last word
            if counts.get(outcome):
                self.aimd.record(outcome, retry_after if outcome == THROTTLED else None, latency_s, now,
                                 count=int(counts[outcome]), in_flight=used)
        stats = self.aimd.stats
        stats.peak_in_flight = max(stats.peak_in_flight, sum(n for _, n in active.values()))
        share = max(float(self.aimd.settings.min_concurrency), self.aimd.window / max(1, len(active)))
        return {"window": share, "paused_until": self.aimd.paused_until,
                "new_calls_until": self.aimd.new_calls_until}

    async def stats(self) -> dict:
        return self.aimd.stats.as_dict()


__all__ = ["AdaptiveLimiter", "LimiterSettings", "LimiterStats", "Limiter", "Slot", "SyncedLimiter", "AimdWindow",
           "LimiterService", "endpoint_key", "OK", "THROTTLED", "FAILED"]

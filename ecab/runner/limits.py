"""Adaptive per-endpoint concurrency limits (ARCHITECTURE.md "Limits").

One limiter per model endpoint. It keeps a concurrency window that shrinks multiplicatively on a 429 and
grows additively on success (AIMD, as TCP does), honours Retry-After by pausing new calls until that
moment, and - because a caller releases its slot before it sleeps through a back-off - a call that is
waiting to retry never holds capacity that another call could use.

How a caller (the OpenAI-compatible agent) uses it, around each HTTP attempt:

    limiter = limiter_for(model_cfg)
    async with limiter.slot() as slot:
        response = await client.chat.completions.create(...)   # on a 429: slot.throttled(retry_after)
    # ...sleep the back-off here, outside the slot, then try again

`runner=local` uses an in-process `AdaptiveLimiter`; `runner=ray` runs one `LimiterActor` per endpoint and
every episode worker installs a `RemoteLimiter` (same interface) that talks to it.
"""
from __future__ import annotations

import asyncio
import collections
import contextlib
import time
from dataclasses import asdict, dataclass, fields
from typing import Any, AsyncIterator, Protocol

OK, THROTTLED, FAILED = "ok", "throttled", "failed"
NEW_CALL_GRACE = 0.25   # new calls resume this fraction of Retry-After after the retries (see release)


@dataclass
class LimiterSettings:
    max_concurrency: int = 1024      # the window never grows past this
    min_concurrency: int = 1
    initial: int | None = None       # starting window (default: max_concurrency; a 429 shrinks it fast)
    decrease: float = 0.7            # window *= decrease on a 429 (at most once per cooldown)
    increase: float = 1.0            # window += increase per window's worth of successes
    max_retry_after_s: float = 30.0  # cap on an honoured Retry-After

    @classmethod
    def from_config(cls, cfg: Any) -> "LimiterSettings":
        """From a mapping (runner.limits); unknown keys are an error that names the key."""
        if cfg is None:
            return cls()
        data = dict(cfg.items()) if hasattr(cfg, "items") else dict(cfg)
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"runner.limits: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})")
        settings = cls(**{k: v for k, v in data.items() if v is not None or k == "initial"})
        if settings.min_concurrency < 1 or settings.max_concurrency < settings.min_concurrency:
            raise ValueError("runner.limits: need 1 <= min_concurrency <= max_concurrency")
        if not 0 < settings.decrease < 1:
            raise ValueError(f"runner.limits.decrease must be in (0, 1), got {settings.decrease}")
        return settings


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
    async def acquire(self, retry: bool = False) -> None: ...

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
async def slot(limiter: Limiter, retry: bool = False) -> AsyncIterator[Slot]:
    await limiter.acquire(retry)
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


class AdaptiveLimiter:
    """AIMD concurrency window for one endpoint, on one asyncio loop."""

    def __init__(self, settings: LimiterSettings | None = None):
        self.settings = settings or LimiterSettings()
        s = self.settings
        self.window = float(min(s.max_concurrency, max(s.min_concurrency, s.initial or s.max_concurrency)))
        self.in_flight = 0
        self.paused_until = 0.0           # monotonic time before which no new call starts (Retry-After)
        self._last_decrease = 0.0
        self._latency_ewma = 1.0
        # Callers waiting for a slot, first come first served. A release hands the freed slot straight
        # to the next waiter (no wake-everyone condition: at C=1024 that costs O(C) per release).
        # Each entry is (future, is_retry); retries queue at the front.
        self._waiters: collections.deque[tuple[asyncio.Future, bool]] = collections.deque()
        self._pause_timer: asyncio.TimerHandle | None = None
        self.stats = LimiterStats(window=self.window, min_window=self.window)

    def slot(self, retry: bool = False):
        return slot(self, retry)

    def _can_start(self, retry: bool = False) -> bool:
        # A retry already slept its own Retry-After (the caller's back-off), so the pause is for new calls.
        return self.in_flight < int(self.window) and (retry or time.monotonic() >= self.paused_until)

    def _take(self) -> None:
        self.in_flight += 1
        self.stats.peak_in_flight = max(self.stats.peak_in_flight, self.in_flight)

    async def acquire(self, retry: bool = False) -> None:
        """Wait for a slot. `retry`: this call was throttled or failed before; it goes ahead of new calls."""
        if not self._waiters and self._can_start(retry):
            self._take()
            return
        waiter = asyncio.get_running_loop().create_future()
        if retry:
            self._waiters.appendleft((waiter, True))
        else:
            self._waiters.append((waiter, False))
        self._dispatch()            # a pause may need its timer
        try:
            await waiter            # the slot was taken for us by _dispatch
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release(FAILED)   # granted, then cancelled: give the slot back unused
            else:
                with contextlib.suppress(ValueError):
                    self._waiters.remove((waiter, retry))
            raise

    def _dispatch(self) -> None:
        """Hand free slots to waiters in order; during a Retry-After pause, come back when it ends."""
        while self._waiters and self._can_start(self._waiters[0][1]):
            waiter, _ = self._waiters.popleft()
            if not waiter.done():
                self._take()
                waiter.set_result(None)
        pause = self.paused_until - time.monotonic()
        if self._waiters and pause > 0 and self._pause_timer is None:
            def resume() -> None:
                self._pause_timer = None
                self._dispatch()

            self._pause_timer = asyncio.get_running_loop().call_later(pause, resume)

    def release(self, outcome: str = OK, retry_after: float | None = None, latency_s: float | None = None) -> None:
        now = time.monotonic()
        self.in_flight = max(0, self.in_flight - 1)
        if latency_s:
            self._latency_ewma = 0.9 * self._latency_ewma + 0.1 * latency_s
        s = self.settings
        if outcome == OK:
            self.stats.ok += 1
            self.window = min(float(s.max_concurrency), self.window + s.increase / max(self.window, 1.0))
        elif outcome == THROTTLED:
            self.stats.throttled += 1
            # One decrease per round trip: a burst of 429s from one overload is one signal, not fifty.
            if now - self._last_decrease >= max(self._latency_ewma, retry_after or 0.0):
                self.window = max(float(s.min_concurrency), self.window * s.decrease)
                self._last_decrease = now
            if retry_after:
                # New calls wait a little longer than Retry-After, so that the throttled calls, which retry
                # after exactly Retry-After, go first: otherwise a queued new call takes the freed capacity
                # each time and a retried call can starve until it runs out of attempts.
                until = now + min(float(retry_after), s.max_retry_after_s) * (1 + NEW_CALL_GRACE)
                if until > self.paused_until:
                    self.stats.paused_s += until - max(now, self.paused_until)
                    self.paused_until = until
        else:
            self.stats.failed += 1
        wall = time.time()
        self.stats.first_at = self.stats.first_at or wall
        self.stats.last_at = wall
        self.stats.window = round(self.window, 3)
        self.stats.min_window = round(min(self.stats.min_window, self.window), 3)
        if self._waiters:
            self._dispatch()

    def describe(self) -> dict:
        return self.stats.as_dict()


# ------------------------------------------------------------------------------------------- the registry

_LIMITERS: dict[str, Limiter] = {}
_DEFAULT_SETTINGS = LimiterSettings()


def endpoint_key(model_cfg: Any) -> str:
    """One limiter per endpoint: the base URL (plus model id, since gateways limit per model)."""
    get = model_cfg.get if hasattr(model_cfg, "get") else (lambda k, d=None: getattr(model_cfg, k, d))
    base = get("base_url", None) or "offline"
    return f"{base}|{get('model', None) or get('name', None)}"


def install_limiter(key: str, limiter: Limiter) -> None:
    """Make `limiter` the one `limiter_for` returns for this endpoint in this process."""
    _LIMITERS[key] = limiter


def set_default_settings(settings: LimiterSettings) -> None:
    global _DEFAULT_SETTINGS
    _DEFAULT_SETTINGS = settings


def limiter_for(model_cfg: Any) -> Limiter:
    """The process's limiter for the model's endpoint (created on first use with the runner's settings)."""
    key = endpoint_key(model_cfg)
    if key not in _LIMITERS:
        _LIMITERS[key] = AdaptiveLimiter(_DEFAULT_SETTINGS)
    return _LIMITERS[key]


def installed_limiters() -> dict[str, Limiter]:
    return dict(_LIMITERS)


def reset_limiters() -> None:
    _LIMITERS.clear()


# ----------------------------------------------------------------------------------------- the Ray side

class RemoteLimiter:
    """The `Limiter` interface over a `LimiterActor` handle (one round trip to acquire; release is
    fire-and-forget so a finished call never waits on the actor)."""

    def __init__(self, actor):
        self.actor = actor

    def slot(self, retry: bool = False):
        return slot(self, retry)

    async def acquire(self, retry: bool = False) -> None:
        await self.actor.acquire.remote(retry)

    def release(self, outcome: str = OK, retry_after: float | None = None, latency_s: float | None = None) -> None:
        self.actor.release.remote(outcome, retry_after, latency_s)


class LimiterService:
    """The body of the Ray limiter actor (an async actor: acquire waits on the actor's own loop)."""

    def __init__(self, settings: dict | None = None):
        self.limiter = AdaptiveLimiter(LimiterSettings(**(settings or {})))

    async def acquire(self, retry: bool = False) -> None:
        await self.limiter.acquire(retry)

    async def release(self, outcome: str = OK, retry_after: float | None = None,
                      latency_s: float | None = None) -> None:
        self.limiter.release(outcome, retry_after, latency_s)

    async def stats(self) -> dict:
        return self.limiter.describe()


def limiter_settings_dict(settings: LimiterSettings) -> dict:
    return asdict(settings)


__all__ = ["AdaptiveLimiter", "LimiterSettings", "LimiterStats", "Limiter", "Slot", "RemoteLimiter",
           "LimiterService", "limiter_for", "install_limiter", "endpoint_key", "installed_limiters",
           "reset_limiters", "set_default_settings", "OK", "THROTTLED", "FAILED"]

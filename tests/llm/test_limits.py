"""The adaptive limiter (ecab/llm/limits.py) on its own: FIFO hand-off, retries first, Retry-After."""
from __future__ import annotations

import asyncio

import pytest

from conftest import run_in_virtual_time
from ecab.llm.limits import NEW_CALL_GRACE, OK, THROTTLED, AdaptiveLimiter, AimdWindow, LimiterSettings


def test_a_freed_slot_goes_to_a_retry_before_earlier_new_calls():
    async def scenario() -> list[str]:
        limiter = AdaptiveLimiter(LimiterSettings(max_concurrency=1))
        order: list[str] = []
        await limiter.acquire()                      # the one slot is busy

        async def call(name: str, retry: bool) -> None:
            await limiter.acquire(retry)
            order.append(name)
            limiter.release()

        new = [asyncio.create_task(call(f"new{i}", False)) for i in range(3)]
        await asyncio.sleep(0)
        retried = asyncio.create_task(call("retry", True))
        await asyncio.sleep(0)
        limiter.release()
        await asyncio.gather(*new, retried)
        assert limiter.in_flight == 0 and not limiter._waiters
        return order

    assert asyncio.run(scenario()) == ["retry", "new0", "new1", "new2"]


def test_retry_after_pauses_every_call_and_new_calls_a_little_longer():
    # In virtual time (conftest.VirtualTimeLoop): the waits are exactly what the limiter scheduled.
    async def scenario() -> tuple[float, float, list[str]]:
        loop = asyncio.get_running_loop()
        limiter = AdaptiveLimiter(LimiterSettings(max_concurrency=8), clock=loop.time)
        await limiter.acquire()
        limiter.release(THROTTLED, retry_after=0.2)
        started, order = loop.time(), []

        async def timed(retry: bool) -> float:
            await limiter.acquire(retry)
            order.append("retry" if retry else "new")
            limiter.release()
            return loop.time() - started

        new_wait, retry_wait = await asyncio.gather(timed(False), timed(True))
        return new_wait, retry_wait, order

    new_wait, retry_wait, order = run_in_virtual_time(scenario())
    assert order == ["retry", "new"]                                    # retries go first
    assert retry_wait == pytest.approx(0.2)                             # retries honour Retry-After
    assert new_wait >= 0.2 * (1 + NEW_CALL_GRACE)                       # new calls wait a little longer


def test_a_cancelled_waiter_gives_back_nothing_and_leaves_the_queue():
    async def scenario() -> None:
        limiter = AdaptiveLimiter(LimiterSettings(max_concurrency=1))
        await limiter.acquire()
        waiting = asyncio.create_task(limiter.acquire())
        await asyncio.sleep(0)
        waiting.cancel()
        await asyncio.gather(waiting, return_exceptions=True)
        assert not limiter._waiters and limiter.in_flight == 1
        limiter.release()
        assert limiter.in_flight == 0
        await asyncio.wait_for(limiter.acquire(), timeout=1)   # the slot is free again

    asyncio.run(scenario())


def test_among_retries_the_call_that_started_first_goes_first():
    async def scenario() -> list[str]:
        limiter = AdaptiveLimiter(LimiterSettings(max_concurrency=1))
        order: list[str] = []
        await limiter.acquire()

        async def call(name: str, since: float) -> None:
            await limiter.acquire(retry=True, since=since)
            order.append(name)
            limiter.release()

        young = asyncio.create_task(call("young", since=20.0))
        await asyncio.sleep(0)
        old = asyncio.create_task(call("old", since=10.0))   # arrives later, has waited longer
        await asyncio.sleep(0)
        limiter.release()
        await asyncio.gather(young, old)
        return order

    assert asyncio.run(scenario()) == ["old", "young"]


def test_a_paced_429_waits_in_the_limiter_not_in_tenacity_and_is_logged_with_its_retry_after():
    """With a limiter pacing Retry-After, tenacity does not sleep on a 429 (the limiter holds the call),
    yet the retry log still shows the wait the call honoured."""
    import httpx2 as httpx   # the HTTP library openai 3.x is built on
    import openai

    from ecab.llm.retry import RetryLog, retrying

    request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
    response = httpx.Response(429, headers={"retry-after": "0.3"}, request=request)
    error = openai.RateLimitError("slow down", response=response, body=None)

    async def scenario() -> tuple[float, RetryLog]:
        log, attempts = RetryLog(), 0
        started = asyncio.get_running_loop().time()
        async for attempt in retrying(on_retry=log.record, max_attempts=3, paced=True):
            with attempt:
                attempts += 1
                if attempts == 1:
                    raise error
        return asyncio.get_running_loop().time() - started, log

    elapsed, log = run_in_virtual_time(scenario())   # any sleep would show as virtual seconds, none as load
    assert elapsed == 0
    assert [(e["status"], e["wait_s"]) for e in log.entries] == [(429, 0.3)]


def _serve(window: AimdWindow, rate: float, latency: float, start: float, seconds: float) -> float:
    """Feed `window` the successes of an endpoint admitting `rate` calls per second, each taking `latency`."""
    step = 1.0 / rate
    t = start
    while t < start + seconds:
        window.record(OK, None, latency, t + latency)
        t += step
    return start + seconds + latency


def test_a_429_never_cuts_the_window_below_what_the_endpoint_was_serving():
    # An RPM limit admitting 128 calls/s at a 1 s round trip keeps 128 calls in flight (Little's law).
    # Plain AIMD would cut to 0.7 x in use (here 100 -> 70); the served window keeps it at ~128.
    limited = AimdWindow(LimiterSettings(max_concurrency=1024, decrease=0.7, initial=140))
    now = _serve(limited, rate=128, latency=1.0, start=0.0, seconds=3.0)
    limited.record(THROTTLED, 0.01, None, now, in_flight=100)
    assert 120 <= limited.window <= 136
    # An endpoint that serves 10 calls per round trip (a concurrency cap) settles at 10, not at 0.7 x 40.
    capped = AimdWindow(LimiterSettings(max_concurrency=1024, decrease=0.7, initial=40))
    now = _serve(capped, rate=10, latency=1.0, start=0.0, seconds=3.0)
    capped.record(THROTTLED, None, None, now, in_flight=40)
    assert 28 <= capped.window <= 29            # 0.7 x 40 is above what it served: the plain decrease
    now = _serve(capped, rate=10, latency=1.0, start=3.0, seconds=2.0)
    capped.record(THROTTLED, None, None, now, in_flight=12)
    assert 9 <= capped.window <= 11             # 0.7 x 12 = 8.4 is below it: the served 10
    # Before any call has come back there is nothing to go by: the plain decrease.
    fresh = AimdWindow(LimiterSettings(max_concurrency=1024, decrease=0.5))
    fresh.record(THROTTLED, None, None, 0.0, in_flight=256)
    assert fresh.window == 128
    # ...but that blind cut is undone once the calls of the first round trip come back: 200 were served.
    _serve(fresh, rate=200, latency=1.0, start=0.0, seconds=1.0)
    assert 190 <= fresh.window <= 210


def test_after_a_429_call_starts_are_spread_over_the_round_trip():
    """Retries woken together would meet one refilled token each time (AimdWindow.pace_interval)."""
    async def starts(limiter: AdaptiveLimiter, n: int) -> list[float]:
        times = []
        for _ in range(n):
            await limiter.acquire()
            times.append(limiter.clock())
        return times

    async def scenario():
        clock = asyncio.get_running_loop().time
        unthrottled = AdaptiveLimiter(LimiterSettings(max_concurrency=20), clock=clock)
        free = await starts(unthrottled, 4)
        throttled = AdaptiveLimiter(LimiterSettings(max_concurrency=20, decrease=0.5), clock=clock)
        for _ in range(20):
            await throttled.acquire()
        throttled.release(THROTTLED)            # window 0.5 x 20 = 10: starts 1 s / 10 apart
        for _ in range(19):
            throttled.release("failed")
        return free, await starts(throttled, 4)

    free, paced = run_in_virtual_time(scenario())   # virtual time: the gaps are the scheduled ones
    assert free[-1] == free[0]
    gaps = [b - a for a, b in zip(paced, paced[1:])]
    assert all(0.08 <= gap <= 0.2 for gap in gaps), gaps

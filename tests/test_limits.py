"""The adaptive limiter (ecab/runner/limits.py) on its own: FIFO hand-off, retries first, Retry-After."""
from __future__ import annotations

import asyncio
import time

from ecab.runner.limits import NEW_CALL_GRACE, THROTTLED, AdaptiveLimiter, LimiterSettings


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


def test_retry_after_pauses_new_calls_a_little_longer_than_retries():
    async def scenario() -> tuple[float, float]:
        limiter = AdaptiveLimiter(LimiterSettings(max_concurrency=8))
        await limiter.acquire()
        limiter.release(THROTTLED, retry_after=0.2)
        started = time.monotonic()

        async def timed(retry: bool) -> float:
            await limiter.acquire(retry)
            limiter.release()
            return time.monotonic() - started

        new_wait, retry_wait = await asyncio.gather(timed(False), timed(True))
        return new_wait, retry_wait

    new_wait, retry_wait = asyncio.run(scenario())
    assert retry_wait < 0.05                                  # the retry slept its Retry-After already
    assert new_wait >= 0.2 * (1 + NEW_CALL_GRACE) - 0.01      # new calls honour it, with the grace


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

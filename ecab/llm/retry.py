"""The retry policy of every LLM call (ecab/llm/client.py: the agent, the LLM judge, the LLM verbalizer).

Only transient failures are retried: 429, request timeouts, connection errors and 5xx. A Retry-After
(or retry-after-ms) header from the server is honoured, capped at `max_wait`; otherwise the wait is
exponential with full jitter. The openai client's own retries must be off (`max_retries=0`) so every
attempt is made, counted and logged here exactly once.

Usage:

    log = RetryLog()
    async for attempt in retrying(on_retry=log.record, max_attempts=6):
        with attempt:
            response = await client.chat.completions.create(...)

When the attempts run out, the last exception is re-raised (the chat client classifies it, `ChatError`).
`sync_retrying` is the same policy for a blocking client.
"""
from __future__ import annotations

import email.utils
import math
import time
from dataclasses import dataclass, field
from typing import Callable

import openai
from tenacity import (AsyncRetrying, RetryCallState, Retrying, retry_if_exception, stop_after_attempt,
                      wait_random_exponential)

DEFAULT_MAX_ATTEMPTS = 6
DEFAULT_MAX_WAIT_S = 60.0       # cap for both Retry-After and backoff: a server asking for 10 minutes gets 60 s
DEFAULT_BACKOFF_BASE_S = 1.0    # first backoff window is [0, 1] s, then [0, 2], [0, 4], ...

OnRetry = Callable[[BaseException, float, int], None]   # (error, wait in seconds, attempt that failed)


class TransientResponseError(RuntimeError):
    """A 200 that is unusable in a way a retry may fix (e.g. no choices, as OpenRouter sends under load)."""


def status_of(exc: BaseException) -> int | None:
    """The HTTP status of an openai API error, or None for transport-level errors."""
    return getattr(exc, "status_code", None) if isinstance(exc, openai.APIStatusError) else None


def is_quota_exhausted(exc: BaseException) -> bool:
    """OpenAI reports an empty account as a 429 with code insufficient_quota: waiting does not help."""
    body = getattr(exc, "body", None)
    code = body.get("code") if isinstance(body, dict) else getattr(exc, "code", None)
    return code == "insufficient_quota"


def is_retryable(exc: BaseException) -> bool:
    """429 (except quota exhaustion), 408, 5xx, timeouts, connection errors and TransientResponseError."""
    if isinstance(exc, (openai.APIConnectionError, TransientResponseError)):   # includes APITimeoutError
        return True
    status = status_of(exc)
    if status is None:
        return False
    if status == 429:
        return not is_quota_exhausted(exc)
    return status == 408 or status >= 500


def retry_after_seconds(exc: BaseException) -> float | None:
    """The server's requested wait from retry-after-ms / retry-after (seconds or an HTTP date), if any."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            value = float(millis) / 1000.0
            if math.isfinite(value) and value >= 0:
                return value
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        value = float(raw)
        return value if math.isfinite(value) and value >= 0 else None
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class _WaitRetryAfterOrBackoff:
    """tenacity wait: the server's Retry-After (capped) when given, else exponential backoff with jitter.

    `paced`: a limiter holds every call of the endpoint until Retry-After has passed (ecab/llm/limits.py), so
    a throttled call goes straight back to the limiter's queue instead of sleeping here. Sleeping here as
    well would make retries arrive one by one at the end of the pause, where the first to arrive, not the
    one that has waited longest, would take the freed capacity (measured: a call starved 12 times over)."""

    def __init__(self, base: float, max_wait: float, paced: bool = False):
        self.max_wait = max_wait
        self.paced = paced
        self.backoff = wait_random_exponential(multiplier=base, max=max_wait)

    def asked(self, state: RetryCallState) -> float | None:
        exc = state.outcome.exception() if state.outcome else None
        asked = retry_after_seconds(exc) if exc is not None else None
        return None if asked is None else min(asked, self.max_wait)

    def __call__(self, state: RetryCallState) -> float:
        asked = self.asked(state)
        if asked is not None:
            return 0.0 if self.paced and status_of(state.outcome.exception()) == 429 else asked
        return self.backoff(state)


def retrying(*, on_retry: OnRetry | None = None, max_attempts: int = DEFAULT_MAX_ATTEMPTS,
             max_wait: float = DEFAULT_MAX_WAIT_S, backoff_base: float = DEFAULT_BACKOFF_BASE_S,
             paced: bool = False) -> AsyncRetrying:
    """An AsyncRetrying with ecab's policy; `on_retry(exc, wait_s, attempt)` is called before each sleep
    (with the Retry-After the call will wait, also when a limiter does the waiting: `paced`)."""
    if max_attempts < 1:
        raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
    wait = _WaitRetryAfterOrBackoff(backoff_base, max_wait, paced)

    def before_sleep(state: RetryCallState) -> None:
        if on_retry is not None and state.outcome is not None and state.next_action is not None:
            waited = float(state.next_action.sleep)
            if paced and waited == 0.0:
                waited = wait.asked(state) or 0.0
            on_retry(state.outcome.exception(), waited, state.attempt_number)

    return AsyncRetrying(stop=stop_after_attempt(max_attempts), wait=wait,
                         retry=retry_if_exception(is_retryable), before_sleep=before_sleep, reraise=True)


def sync_retrying(**kwargs) -> Retrying:
    """`retrying`'s policy (what is retried, Retry-After, backoff) for a blocking client: the same stop / wait /
    retry objects in a tenacity.Retrying, which sleeps with time.sleep instead of asyncio."""
    policy = retrying(**kwargs)
    return Retrying(stop=policy.stop, wait=policy.wait, retry=policy.retry, before_sleep=policy.before_sleep,
                    reraise=True)


def describe_error(exc: BaseException) -> str:
    """A short, secret-free description: class, status and the server's message (never headers)."""
    status = status_of(exc)
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    if isinstance(exc, openai.APIConnectionError) and isinstance(_root_cause(exc), ConnectionRefusedError):
        # the aiohttp transport reports a refused connection as a timeout: say what happened
        return f"connection refused: {' '.join(str(_root_cause(exc)).split())[:200]} (is the server running?)"
    if isinstance(exc, openai.APIConnectionError):
        # The SDK says only "Connection error." or "Request timed out."; the transport's own error says
        # which host refused or stalled (and the aiohttp transport reports a refused connection as a timeout).
        root = _root_cause(exc)
        if root is not exc and str(root):
            message = f"{message} ({type(root).__name__}: {root})"
    message = " ".join(str(message).split())[:300]
    return f"{type(exc).__name__}{f' {status}' if status else ''}: {message}"


def _root_cause(exc: BaseException) -> BaseException:
    seen = {id(exc)}
    while (cause := exc.__cause__ or exc.__context__) is not None and id(cause) not in seen:
        seen.add(id(cause))
        exc = cause
    return exc


@dataclass
class RetryLog:
    """Collects the retries of one call (or of a whole conversation turn) for the trajectory."""

    entries: list[dict] = field(default_factory=list)

    def record(self, exc: BaseException, wait_s: float, attempt: int) -> None:
        self.entries.append({"attempt": attempt, "wait_s": round(wait_s, 3), "status": status_of(exc),
                             "error": describe_error(exc)})

    @property
    def count(self) -> int:
        return len(self.entries)

    @property
    def total_wait_s(self) -> float:
        return round(sum(e["wait_s"] for e in self.entries), 3)

"""The chat client: every LLM call in ecab goes through `ChatClient` (the agent, the LLM judge, the LLM
verbalizer).

A client is built for one model (`ModelSettings`) by whoever uses it, and shared by all its callers (every
episode of a run shares one). It owns:
- the API key, read once from the variable the settings name (ecab/llm/keys.py) and kept out of every message;
- the HTTP client: an openai client with its own retries off, on the SDK's aiohttp transport or its httpx
  client with a pool as big as any gate (docs/decisions.md#aiohttp-transport), bound to the event loop that
  first uses it and closed when that loop ends; requests are posted raw (docs/decisions.md#raw-chat-posts).
  A blocking twin (`complete_blocking`) serves callers without an event loop (construction's workers);
- retries: the tenacity policy of ecab/llm/retry.py, every attempt logged once (`RetryLog`);
- two gates around each HTTP attempt: `settings.concurrency` requests in flight, and the endpoint's adaptive
  limiter (ecab/llm/limits.py) when the builder injects one (the runners do); a call backing off holds neither;
- the disk cache of replies (ecab/llm/cache.py) when given one: `cached` and `remember`, keyed by model id,
  temperature and messages;
- tokens and cost of each reply (`Reply.tokens`, `Reply.cost_usd`, from the model's price table);
- streaming when the settings say `stream: true` (ecab/llm/streaming.py): the reply is streamed and assembled into
  the JSON a non-streamed reply gives, every wait on the server bounded by `idle_timeout_s` (default `timeout_s`)
  instead of one bound on the whole reply; a stall is a retried timeout. The blocking twin streams too.

Failures are classified once (`ChatError.kind`): "unavailable" (transient errors past the retries, or an
exhausted quota, where waiting does not help: worth a later re-run), "refused" (401/403: the key; 404: the
model id or the URL: every call would fail alike), "rejected" (anything else a retry cannot fix, such as a
context-length 400). The messages name the model and the config keys to check, never the key itself.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from typing import Any, AsyncIterator

import openai

from ecab.llm.cache import CachedReply, ReplyCache, cache_key
from ecab.llm.keys import NO_KEY_PLACEHOLDER, resolve_api_key, scrub
from ecab.llm.limits import Limiter, Slot
from ecab.llm.retry import (RetryLog, TransientResponseError, describe_error, is_quota_exhausted, is_retryable,
                            retry_after_seconds, retrying, status_of, sync_retrying)
from ecab.llm.settings import HTTP_CLIENTS, ModelSettings
from ecab.llm.streaming import Streamed, stream_chat_completion, stream_chat_completion_blocking

# One INFO line per HTTP request drowns the run's output (hundreds of requests per second).
for _noisy in ("httpx", "httpx2", "openai"):
    logging.getLogger(_noisy).setLevel(logging.WARNING)
logger = logging.getLogger(__name__)

POOL_CONNECTIONS = 4096   # as big as any gate; see docs/decisions.md#aiohttp-transport
UNAVAILABLE, REFUSED, REJECTED = "unavailable", "refused", "rejected"


class ChatError(RuntimeError):
    """A chat request that produced no usable reply. `kind`: UNAVAILABLE, REFUSED or REJECTED (see the module
    docstring); `detail`: the error alone (class, status, the server's message), secret-free; `retries`: the
    retry log's entries; `attempts`: HTTP attempts made."""

    def __init__(self, kind: str, message: str, *, detail: str, log: RetryLog):
        super().__init__(message)
        self.kind, self.detail = kind, detail
        self.retries = list(log.entries)
        self.attempts = log.count + 1


@dataclass
class TokenUsage:
    """The token counts a completion reports (0 when the endpoint reports none)."""

    prompt: int = 0
    completion: int = 0
    reasoning: int = 0      # part of completion
    cached: int = 0         # part of prompt

    @classmethod
    def of(cls, data: dict[str, Any]) -> "TokenUsage":
        usage = data.get("usage") or {}
        return cls(prompt=int(usage.get("prompt_tokens") or 0), completion=int(usage.get("completion_tokens") or 0),
                   reasoning=int(((usage.get("completion_tokens_details") or {}).get("reasoning_tokens")) or 0),
                   cached=int(((usage.get("prompt_tokens_details") or {}).get("cached_tokens")) or 0))


@dataclass
class Reply:
    """One completion: the endpoint's JSON (a streamed reply assembled into the same shape), what it cost, and
    how long it took with its retries (and, streamed, how long its last attempt waited for the first chunk)."""

    data: dict[str, Any]
    tokens: TokenUsage
    cost_usd: float | None      # None: the model has no price table (the cost is unknown, not 0)
    latency_s: float        # the whole request, retry waits included
    log: RetryLog
    first_chunk_s: float | None = None   # streamed: from the last attempt's request to its first chunk

    @property
    def message(self) -> dict[str, Any]:
        return (self.data.get("choices") or [{}])[0].get("message") or {}

    @property
    def content(self) -> str:
        return self.message.get("content") or ""

    @property
    def attempts(self) -> int:
        return self.log.count + 1


class ChatClient:
    """Chat completions against one model (see the module docstring). `limiter`: the endpoint's adaptive
    limiter, injected by the runner (None: only the `concurrency` gate); `cache`: a reply cache the caller
    opened (and closes); `api_key`: the key to present (default: from the settings' variable); `http`: an
    openai.AsyncOpenAI to use instead of the client's own (tests)."""

    def __init__(self, settings: ModelSettings, *, limiter: Limiter | None = None, cache: ReplyCache | None = None,
                 api_key: str | None = None, http: openai.AsyncOpenAI | None = None):
        self.settings = settings
        self.limiter = limiter
        self.cache = cache
        self.api_key = api_key if api_key is not None else resolve_api_key(settings)
        self._injected = http
        self._loop: asyncio.AbstractEventLoop | None = None
        self._http: openai.AsyncOpenAI | None = None
        self._gate: asyncio.Semaphore | None = None
        self._closer = None
        self._blocking: openai.OpenAI | None = None
        self._told_no_usage = False

    # -- the request ---------------------------------------------------------------------------------------

    def request(self, messages: list[dict[str, Any]], *, tools: list[dict[str, Any]] | None = None,
                json_mode: bool = False, seed: int | None = None) -> dict[str, Any]:
        """The chat-completions request for `messages` as the settings shape it; with `tools`, a tool-calling
        request (`tool_choice` as configured); `json_mode`: response_format json_object; `seed` is sent when
        the settings say so (`send_seed`: llama.cpp and vLLM sample reproducibly with one)."""
        s = self.settings
        request: dict[str, Any] = {"model": s.model_id, "messages": messages}
        if tools is not None:
            request.update(tools=tools, tool_choice=s.tool_choice)
            if s.parallel_tool_calls is not None:
                request["parallel_tool_calls"] = s.parallel_tool_calls
        request["timeout"] = s.timeout_s
        if s.temperature is not None:
            request["temperature"] = s.temperature
        if s.max_output_tokens:
            request["max_tokens" if s.max_tokens_param == "max_tokens" else "max_completion_tokens"] = \
                int(s.max_output_tokens)
        if s.reasoning_effort:
            request["reasoning_effort"] = s.reasoning_effort
        if json_mode:
            request["response_format"] = {"type": "json_object"}
        if s.send_seed and seed is not None:
            request["seed"] = int(seed)
        if s.extra_body:
            request["extra_body"] = s.extra_body
        return request

    # -- asking ----------------------------------------------------------------------------------------------

    async def complete(self, request: dict[str, Any], log: RetryLog | None = None) -> Reply:
        """The reply to `request` under the retry policy and both gates; ChatError when there is none."""
        s = self.settings
        log = log if log is not None else RetryLog()
        http, gate = await self._bound()
        started = time.perf_counter()
        streamed: Streamed | None = None
        try:
            # paced: a limiter holds calls through a Retry-After pause, retried calls first, oldest first
            async for attempt in retrying(on_retry=log.record, max_attempts=s.max_attempts, max_wait=s.max_retry_wait_s,
                                          backoff_base=s.backoff_base_s, paced=self.limiter is not None):
                with attempt:
                    state = attempt.retry_state
                    async with gate, self._slot(retry=state.attempt_number > 1, since=state.start_time) as slot:
                        try:
                            if s.stream:
                                streamed = await stream_chat_completion(http, _body(request), **self._idle(request))
                                data = streamed.data
                            else:
                                data = await post_chat_completion(http, request)
                        except openai.RateLimitError as exc:   # tell the adaptive limiter (shrink, pause)
                            slot.throttled(retry_after_seconds(exc))
                            raise
                    _check_choices(data)
        except Exception as exc:  # noqa: BLE001 - every failure becomes one classified ChatError
            raise self._failure(exc, log) from None
        return self._reply(data, time.perf_counter() - started, log, streamed)

    def complete_blocking(self, request: dict[str, Any], log: RetryLog | None = None) -> Reply:
        """`complete` for a caller without an event loop: the same policy, sleeps with time.sleep; no gates."""
        s = self.settings
        log = log if log is not None else RetryLog()
        http = self._blocking_http()
        started = time.perf_counter()
        streamed: Streamed | None = None
        try:
            for attempt in sync_retrying(on_retry=log.record, max_attempts=s.max_attempts,
                                         max_wait=s.max_retry_wait_s, backoff_base=s.backoff_base_s):
                with attempt:
                    if s.stream:
                        streamed = stream_chat_completion_blocking(http, _body(request), **self._idle(request))
                        data = streamed.data
                    else:
                        data = http.post("/chat/completions", body=_body(request), cast_to=object,
                                         options=_options(request))
                    _check_choices(data)
        except Exception as exc:  # noqa: BLE001 - as in complete
            raise self._failure(exc, log) from None
        return self._reply(data, time.perf_counter() - started, log, streamed)

    # -- the reply cache ---------------------------------------------------------------------------------------

    def cached(self, messages: list[dict[str, Any]]) -> CachedReply | None:
        """The stored reply to `messages` (this model, this temperature), or None (also without a cache)."""
        return self.cache.get(self._cache_key(messages)) if self.cache is not None else None

    def remember(self, messages: list[dict[str, Any]], content: str, usage: dict[str, Any]) -> None:
        """Store `content` as the reply to `messages`, with what it cost (`usage`)."""
        if self.cache is not None:
            self.cache.put(self._cache_key(messages), self.settings.model_id, content, usage)

    def _cache_key(self, messages: list[dict[str, Any]]) -> str:
        return cache_key(self.settings.model_id, self.settings.temperature, messages)

    # -- closing ----------------------------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close the HTTP clients this client opened (an injected one is its owner's)."""
        if self._http is not None and self._injected is None and not self._http.is_closed():
            await self._http.close()
        self._loop = None
        self.close_blocking()

    def close_blocking(self) -> None:
        if self._blocking is not None:
            self._blocking.close()
            self._blocking = None

    # -- parts ------------------------------------------------------------------------------------------------

    async def _bound(self) -> tuple[openai.AsyncOpenAI, asyncio.Semaphore]:
        """The HTTP client and the gate of the running loop (connection pools and semaphores belong to one
        loop): made on first use in a loop, the HTTP client closed when that loop ends."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            s = self.settings
            self._loop = loop
            self._gate = asyncio.Semaphore(max(1, int(s.concurrency)))
            if self._injected is not None:
                self._http = self._injected
            else:
                self._http = openai.AsyncOpenAI(api_key=self.api_key or NO_KEY_PLACEHOLDER, base_url=s.base_url or None,
                                                max_retries=0, http_client=http_client(s.http_client))
                self._closer = _close_at_loop_end(self._http)
                await self._closer.__anext__()
        return self._http, self._gate

    def _blocking_http(self) -> openai.OpenAI:
        if self._blocking is None:
            s = self.settings
            self._blocking = openai.OpenAI(api_key=self.api_key or NO_KEY_PLACEHOLDER, base_url=s.base_url or None,
                                           max_retries=0, timeout=s.timeout_s)
        return self._blocking

    def _idle(self, request: dict[str, Any]) -> dict[str, Any]:
        """The bounds of one streamed attempt (ecab/llm/streaming.py): every wait on the server at most
        idle_timeout_s (default timeout_s), named as configured in the stall's message; timeout_s for the rest."""
        s = self.settings
        idle = s.idle_timeout_s if s.idle_timeout_s is not None else s.timeout_s
        setting = (f"{s.config_key}.idle_timeout_s" if s.idle_timeout_s is not None
                   else f"{s.config_key}.idle_timeout_s unset: {s.config_key}.timeout_s")
        return {"idle_timeout_s": idle, "timeout_s": request.get("timeout", s.timeout_s), "setting": setting}

    def _slot(self, retry: bool, since: float) -> contextlib.AbstractAsyncContextManager[Slot]:
        return self.limiter.slot(retry=retry, since=since) if self.limiter is not None else _no_limiter()

    def _reply(self, data: dict[str, Any], latency_s: float, log: RetryLog, streamed: Streamed | None = None) -> Reply:
        tokens = TokenUsage.of(data)
        cost = self.settings.cost_usd(tokens.prompt, tokens.completion, tokens.cached)
        if streamed is not None and not streamed.usage_reported and not self._told_no_usage:
            self._told_no_usage = True
            logger.warning("model %s (%s): the streamed reply carried no usage (stream_options.include_usage "
                           "ignored?): its tokens and cost read 0", self.settings.name, self.settings.model_id)
        return Reply(data=data, tokens=tokens, cost_usd=cost, latency_s=latency_s, log=log,
                     first_chunk_s=streamed.first_chunk_s if streamed is not None else None)

    def _failure(self, exc: BaseException, log: RetryLog) -> ChatError:
        s = self.settings
        what = scrub(describe_error(exc), self.api_key)
        where = f"model {s.name} ({s.model_id})"
        status = status_of(exc)
        if is_retryable(exc):
            kind, text = UNAVAILABLE, f"gave up after {log.count + 1} attempt(s) ({log.total_wait_s} s of waits)"
        elif status == 429 and is_quota_exhausted(exc):
            kind, text = UNAVAILABLE, "quota exhausted (not retried)"
        elif status in (401, 403):
            kind, text = REFUSED, (f"authentication or permission refused (check "
                                   f"{s.api_key_env or 'the endpoint key'})")
        elif status == 404:
            kind, text = REFUSED, (f"not found at {s.base_url or 'the OpenAI API'} (check {s.config_key}.model_id "
                                   f"and {s.config_key}.base_url)")
        elif status == 400 and "context" in what.lower():
            kind, text = REJECTED, "context length exceeded"
        else:
            kind, text = REJECTED, "request failed"
        return ChatError(kind, f"{where}: {text}: {what}", detail=what, log=log)


# ------------------------------------------------------------------------------------------- HTTP plumbing

def http_client(kind: str = "aiohttp") -> Any:
    """The HTTP client under AsyncOpenAI: the SDK's aiohttp transport or its default httpx client, both with a
    pool as big as any gate; see docs/decisions.md#aiohttp-transport."""
    import httpx2

    if kind not in HTTP_CLIENTS:
        raise ValueError(f"http_client must be one of {', '.join(HTTP_CLIENTS)}, got {kind!r}")
    limits = httpx2.Limits(max_connections=POOL_CONNECTIONS, max_keepalive_connections=POOL_CONNECTIONS)
    if kind == "aiohttp":
        return openai.DefaultAioHttpClient(limits=limits)
    return openai.DefaultAsyncHttpxClient(limits=limits)


async def post_chat_completion(client: openai.AsyncOpenAI, request: dict[str, Any]) -> Any:
    """`client.chat.completions.create(**request)` without its request transform: the client's own `post`,
    same errors and timeout, the reply as parsed JSON; see docs/decisions.md#raw-chat-posts."""
    return await client.post("/chat/completions", body=_body(request), cast_to=object, options=_options(request))


def _body(request: dict[str, Any]) -> dict[str, Any]:
    """The JSON body: the request without the client-side keys, extra_body merged in."""
    body = {key: value for key, value in request.items() if key not in ("timeout", "extra_body")}
    body.update(request.get("extra_body") or {})
    return body


def _options(request: dict[str, Any]) -> dict[str, Any]:
    return {"timeout": request["timeout"]} if request.get("timeout") is not None else {}


def _check_choices(data: Any) -> None:
    """A 200 without a usable first choice is transient (OpenRouter sends such under load): retried."""
    choices = data.get("choices") if isinstance(data, dict) else None
    if not choices or not isinstance(choices[0], dict):
        raise TransientResponseError("the endpoint returned no choices")


@contextlib.asynccontextmanager
async def _no_limiter() -> AsyncIterator[Slot]:
    yield Slot()


async def _close_at_loop_end(client: openai.AsyncOpenAI):
    """An async generator left suspended: asyncio.run's shutdown_asyncgens() resumes it while the loop still
    runs, so the pooled connections close cleanly instead of erroring on a closed loop at garbage collection."""
    try:
        yield
    finally:
        if not client.is_closed():
            await client.close()

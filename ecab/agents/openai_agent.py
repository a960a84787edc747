"""An agent backed by any OpenAI-compatible chat-completions endpoint (OpenAI, OpenRouter, vLLM, a gateway,
the simulator).

One `act` = one chat-completions request with the 10 tool schemas; the episode loop (env/episode.py)
supplies the paper's system prompt and enforces one executed call per turn. Per turn the agent records:
token usage (prompt / completion / reasoning), the cost from the model's price table, the latency
including any retry waits, each retry (attempt, wait, status) as a `{"type": "retry"}` entry of the
reasoning trace, and the provider's reasoning text (`reasoning_content`, `reasoning`, or
`reasoning_details`) as `{"type": "reasoning"}` entries. Provider reasoning fields are also kept on the
assistant message, because OpenRouter and Moonshot expect them echoed in later turns.

Errors: transient failures are retried by the shared policy (agents/retry.py) with the client's own
retries off; when retries run out the turn raises InfraError (the episode ends as infra_error and is
re-run at episode level). A refusal of the client itself (401/403: the key; 404: the model id or the URL)
raises EndpointRefused, which stops the run: every episode would fail the same way, and none is recorded
as the model's failure. Other errors a retry cannot fix (a 400 such as context length) raise AgentError.
A 429 insufficient_quota is an InfraError without retries: not the model's fault, but waiting does not
help. Either error carries the turn's retries (`retry_entries`) for the trajectory. The API key never
appears in messages, traces or errors.

One AsyncOpenAI client per (base_url, key, http_client) per event loop is shared by every episode
(connection pooling; the SDK's aiohttp transport by default, see `http_client`). Each HTTP attempt holds
a slot of two gates: a semaphore per (endpoint, model) per loop, the
hard cap `model.concurrency`, and the runner's adaptive per-endpoint limiter (runner/limits.py: shrinks
on 429, pauses for Retry-After). A call that is backing off between attempts holds neither.
"""
from __future__ import annotations

import asyncio
import logging
import time
import weakref
from dataclasses import dataclass, field
from typing import Any

import openai

from ecab.agents.base import AgentError, AgentTurn, EndpointRefused, InfraError
from ecab.agents.keys import NO_KEY_PLACEHOLDER, resolve_api_key, scrub
from ecab.agents.retry import (RetryLog, TransientResponseError, describe_error, is_quota_exhausted, is_retryable,
                               retry_after_seconds, retrying, status_of)
from ecab.runner.limits import limiter_for

# One INFO line per HTTP request drowns the run's output (hundreds of requests per second).
for _noisy in ("httpx", "httpx2", "openai"):
    logging.getLogger(_noisy).setLevel(logging.WARNING)

REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_details")   # as providers name them


@dataclass
class LLMSettings:
    """The request-shaping part of a model config (conf/model/<name>.yaml)."""

    name: str
    model_id: str
    base_url: str | None = None
    api_key_env: str | None = None
    temperature: float | None = 1.0
    max_output_tokens: int | None = None
    max_tokens_param: str = "max_completion_tokens"    # OpenRouter and vLLM also accept it; some want max_tokens
    reasoning_effort: str | None = None                 # OpenAI reasoning models (top-level field)
    parallel_tool_calls: bool | None = False            # None: do not send the field
    extra_body: dict[str, Any] = field(default_factory=dict)
    echo_reasoning: bool = True
    price_per_million: dict[str, float] = field(default_factory=dict)
    timeout_s: float = 300.0
    max_attempts: int = 6
    max_retry_wait_s: float = 60.0
    backoff_base_s: float = 1.0
    concurrency: int = 64
    http_client: str = "aiohttp"                        # or "httpx" (see http_client())

    @classmethod
    def from_cfg(cls, cfg: Any, base_url: str | None = None) -> "LLMSettings":
        data = _to_dict(cfg)
        if not data.get("model_id"):
            raise ValueError(f"model '{data.get('name', '?')}': model_id is required for kind openai")
        known = set(cls.__dataclass_fields__)
        nullable = {"base_url", "api_key_env", "temperature", "max_output_tokens", "reasoning_effort",
                    "parallel_tool_calls"}   # null means "do not send"; elsewhere null means the default
        out = cls(**{k: v for k, v in data.items() if k in known and (v is not None or k in nullable)})
        if base_url:
            out.base_url = base_url
        check_http_client(out.http_client)
        out.extra_body = dict(out.extra_body or {})
        out.price_per_million = dict(out.price_per_million or {})
        return out

    def cost_usd(self, prompt_tokens: int, completion_tokens: int, cached_tokens: int = 0) -> float:
        price = self.price_per_million
        if not price:
            return 0.0
        cached_price = price.get("cached_input", price.get("input", 0.0))
        fresh = max(prompt_tokens - cached_tokens, 0)
        dollars = (fresh * price.get("input", 0.0) + cached_tokens * cached_price
                   + completion_tokens * price.get("output", 0.0)) / 1e6
        return round(dollars, 8)


def _to_dict(cfg: Any) -> dict[str, Any]:
    if isinstance(cfg, dict):
        return dict(cfg)
    from omegaconf import OmegaConf
    return OmegaConf.to_container(cfg, resolve=True)


# ------------------------------------------------------------------------------- shared per-loop resources

_CLIENTS: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict]" = weakref.WeakKeyDictionary()
_GATES: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict]" = weakref.WeakKeyDictionary()
_CLOSERS: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict]" = weakref.WeakKeyDictionary()


POOL_CONNECTIONS = 4096   # as big as any gate; see docs/decisions.md#aiohttp-transport
HTTP_CLIENTS = ("aiohttp", "httpx")


def check_http_client(kind: Any) -> None:
    if kind not in HTTP_CLIENTS:
        raise ValueError(f"model.http_client must be one of {', '.join(HTTP_CLIENTS)}, got {kind!r}")


def http_client(kind: str = "aiohttp") -> Any:
    """The HTTP client under AsyncOpenAI: the SDK's aiohttp transport or its default httpx client, both with a
    pool as big as any gate; see docs/decisions.md#aiohttp-transport."""
    import httpx2

    check_http_client(kind)
    limits = httpx2.Limits(max_connections=POOL_CONNECTIONS, max_keepalive_connections=POOL_CONNECTIONS)
    if kind == "aiohttp":
        return openai.DefaultAioHttpClient(limits=limits)
    return openai.DefaultAsyncHttpxClient(limits=limits)


def shared_client(base_url: str | None, api_key: str | None, kind: str = "aiohttp") -> openai.AsyncOpenAI:
    """The process's client for (base_url, key) on the running loop (connection pools are bound to a loop)."""
    loop = asyncio.get_running_loop()
    clients = _CLIENTS.setdefault(loop, {})
    key = (base_url or "", api_key or NO_KEY_PLACEHOLDER, kind)
    if key not in clients:
        clients[key] = openai.AsyncOpenAI(api_key=api_key or NO_KEY_PLACEHOLDER, base_url=base_url or None,
                                          max_retries=0, http_client=http_client(kind))
    return clients[key]


async def _close_at_loop_end(client: openai.AsyncOpenAI):
    """An async generator left suspended: asyncio.run's shutdown_asyncgens() resumes it while the loop still
    runs, so the pooled connections close cleanly instead of erroring on a closed loop at garbage collection."""
    try:
        yield
    finally:
        await client.close()


async def ensure_closed_at_loop_end(client: openai.AsyncOpenAI) -> None:
    loop = asyncio.get_running_loop()
    closers = _CLOSERS.setdefault(loop, {})
    if id(client) not in closers:
        closer = _close_at_loop_end(client)
        await closer.__anext__()
        closers[id(client)] = closer


def endpoint_gate(base_url: str | None, model_id: str, size: int) -> asyncio.Semaphore:
    loop = asyncio.get_running_loop()
    gates = _GATES.setdefault(loop, {})
    key = (base_url or "", model_id)
    if key not in gates:
        gates[key] = asyncio.Semaphore(max(1, int(size)))
    return gates[key]


# ------------------------------------------------------------------------------------------------- agent

class OpenAIAgent:
    """`act(messages, tools) -> AgentTurn` against an OpenAI-compatible endpoint."""

    def __init__(self, cfg: Any, budget: int = 100, *, client: openai.AsyncOpenAI | None = None,
                 base_url: str | None = None, api_key: str | None = None):
        self.settings = cfg if isinstance(cfg, LLMSettings) else LLMSettings.from_cfg(cfg, base_url)
        self.name = self.settings.name
        self.budget = budget
        self._client = client
        # Resolved once here (a missing key is a ConfigError, normally caught by ecab.run's validate first).
        self._api_key = api_key if api_key is not None else resolve_api_key(
            {"name": self.settings.name, "api_key_env": self.settings.api_key_env})

    @property
    def client(self) -> openai.AsyncOpenAI:
        if self._client is None:
            self._client = shared_client(self.settings.base_url, self._api_key, self.settings.http_client)
        return self._client

    def build_request(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        s = self.settings
        request: dict[str, Any] = {"model": s.model_id, "messages": messages, "tools": tools,
                                   "tool_choice": "auto", "timeout": s.timeout_s}
        if s.temperature is not None:
            request["temperature"] = s.temperature
        if s.max_output_tokens:
            if s.max_tokens_param == "max_tokens":
                request["max_tokens"] = s.max_output_tokens
            else:
                request["max_completion_tokens"] = s.max_output_tokens
        if s.reasoning_effort:
            request["reasoning_effort"] = s.reasoning_effort
        if s.parallel_tool_calls is not None:
            request["parallel_tool_calls"] = s.parallel_tool_calls
        if s.extra_body:
            request["extra_body"] = s.extra_body
        return request

    async def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> AgentTurn:
        s = self.settings
        request = self.build_request(messages, tools)
        gate = endpoint_gate(s.base_url, s.model_id, s.concurrency)
        limiter = limiter_for({"base_url": s.base_url, "name": s.name})
        log = RetryLog()
        started = time.perf_counter()
        if self._client is None:
            await ensure_closed_at_loop_end(self.client)
        try:
            # paced: the limiter holds calls through a Retry-After pause, retried calls first, oldest first
            async for attempt in retrying(on_retry=log.record, max_attempts=s.max_attempts,
                                          max_wait=s.max_retry_wait_s, backoff_base=s.backoff_base_s, paced=True):
                with attempt:
                    state = attempt.retry_state
                    async with gate, limiter.slot(retry=state.attempt_number > 1, since=state.start_time) as slot:
                        try:
                            response = await post_chat_completion(self.client, request)
                        except openai.RateLimitError as exc:   # tell the adaptive limiter (shrink, pause)
                            slot.throttled(retry_after_seconds(exc))
                            raise
                    choices = response.get("choices") if isinstance(response, dict) else None
                    if not choices or not isinstance(choices[0], dict):
                        raise TransientResponseError("the endpoint returned no choices")
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - every failure becomes AgentError, InfraError or EndpointRefused
            error = self._classify(exc, log)
            error.retry_entries = list(log.entries)
            raise error from None
        return self._turn(response, time.perf_counter() - started, log)

    # -------------------------------------------------------------------------------------------- parts

    def _classify(self, exc: BaseException, log: RetryLog) -> Exception:
        what = scrub(describe_error(exc), self._api_key)
        where = f"model {self.settings.name} ({self.settings.model_id})"
        if is_retryable(exc):
            return InfraError(f"{where}: gave up after {log.count + 1} attempt(s) "
                              f"({log.total_wait_s} s of waits): {what}")
        if status_of(exc) == 429 and is_quota_exhausted(exc):
            return InfraError(f"{where}: quota exhausted (not retried): {what}")
        if status_of(exc) in (401, 403):
            return EndpointRefused(f"{where}: authentication or permission refused (check "
                                   f"{self.settings.api_key_env or 'the endpoint key'}): {what}")
        if status_of(exc) == 404:
            return EndpointRefused(f"{where}: not found at {self.settings.base_url or 'the OpenAI API'} (check "
                                   f"model.model_id and model.base_url): {what}")
        if status_of(exc) == 400 and "context" in what.lower():
            return AgentError(f"{where}: context length exceeded: {what}")
        return AgentError(f"{where}: request failed: {what}")

    def _turn(self, data: dict[str, Any], latency_s: float, log: RetryLog) -> AgentTurn:
        raw = (data.get("choices") or [{}])[0].get("message") or {}
        message: dict[str, Any] = {"role": "assistant", "content": raw.get("content") or ""}
        if raw.get("tool_calls"):
            message["tool_calls"] = [_clean_call(c) for c in raw["tool_calls"]]
        trace = [{"type": "retry", **entry} for entry in log.entries]
        for name in REASONING_FIELDS:
            value = raw.get(name)
            if value in (None, "", []):
                continue
            if self.settings.echo_reasoning:
                message[name] = value
            trace.append({"type": "reasoning", "provider": "openai-compatible", "model": self.settings.model_id,
                          "source": name, "raw_reasoning": value if isinstance(value, str) else None,
                          **({} if isinstance(value, str) else {"details": value})})
        usage = data.get("usage") or {}
        prompt = int(usage.get("prompt_tokens") or 0)
        completion = int(usage.get("completion_tokens") or 0)
        reasoning = int(((usage.get("completion_tokens_details") or {}).get("reasoning_tokens")) or 0)
        cached = int(((usage.get("prompt_tokens_details") or {}).get("cached_tokens")) or 0)
        return AgentTurn(message=message, input_tokens=prompt, output_tokens=completion, reasoning_tokens=reasoning,
                         latency_s=latency_s, retries=log.count, reasoning_trace=trace,
                         cost_usd=self.settings.cost_usd(prompt, completion, cached))


async def post_chat_completion(client: openai.AsyncOpenAI, request: dict[str, Any]) -> Any:
    """`client.chat.completions.create(**request)` without its request transform: the client's own `post`,
    same errors and timeout, the reply as parsed JSON; see docs/decisions.md#raw-chat-posts."""
    body = {key: value for key, value in request.items() if key not in ("timeout", "extra_body")}
    body.update(request.get("extra_body") or {})
    options = {"timeout": request["timeout"]} if request.get("timeout") is not None else {}
    return await client.post("/chat/completions", body=body, cast_to=object, options=options)


def _clean_call(call: dict[str, Any]) -> dict[str, Any]:
    """A tool call as the next request must echo it (id, type, function name + raw arguments string)."""
    function = call.get("function") or {}
    arguments = function.get("arguments")
    return {"id": call.get("id") or "", "type": call.get("type") or "function",
            "function": {"name": function.get("name") or "", "arguments": "" if arguments is None else arguments}}

"""An OpenAI-compatible chat-completions server on 127.0.0.1 whose "model" is a set of reply policies.

It exists so the LLM paths (the openai client, tenacity retries, token accounting, the episode loop's
handling of bad model output, the LLM judge, the LLM verbalizer) run over real HTTP on a machine without any
endpoint or key, in tests and in the offline demo (`model=sim`), and so the runner can be load-tested.
What a request is answered with is up to the policies the starter passes (policy.py); this module knows
nobody's prompts. Start it with `SimServer(config, policies)` (a context manager) or, for a model config,
`serve_if_simulated` (a model with a `sim` block and no base_url).

Injectable trouble (all rates are per request):
- latency: fixed, or lognormal around a median;
- 429 at a given rate, with Retry-After / retry-after-ms; plus RPM and TPM token buckets that answer
  429 with the time until the bucket refills;
- 5xx at a given rate (500/502/503);
- malformed outputs (`malformed`, FAULT_KINDS): invalid JSON arguments, two tool calls in one turn, no tool
  call, an unknown tool, injected by the tool-calling policy (ecab.agents.sim_policy), which draws them per
  (conversation, step) so that a `model=sim` run is reproducible. Latency, 429s and 5xx come from one
  shared seeded generator: they are retried by the client, so they change timing, not results (unless a
  request exhausts its retries);
- optional: a required API key (401 otherwise), a list of served model ids (404 otherwise), a context
  limit in estimated tokens (400 context_length_exceeded).

What real small models served locally send (issue 31; ecab/sim/local_model.py), all off by default:
- `tool_call_format`: the agent's policy writes its tool calls natively, or as text in `content` (after a
  "Thought:" line, no native tool_calls): `json` (a bare object), `json_doubled` (`{{...}}`), `hermes`
  (`<tool_call>...</tool_call>`);
- `invented_tools`, `invented_ids`, `repeats`: per-turn rates of a made-up tool name, made-up product ids,
  the previous turn's call sent again; drawn by the agent's policy per (conversation, step) like
  `malformed`, and like it never on recommend_product, so they never end an episode by themselves;
- `pad_to_cap` (here, for any policy's reply; drawn per (conversation, step) too): the content padded with
  newlines up to the request's max_tokens / max_completion_tokens, finish_reason "length", usage
  completion_tokens = the cap (a request without a cap is never padded);
- `slow_turn_ms`: a turn's extra time (after latency; streamed: a gap between the headers and the first
  chunk), `chunk_gap_ms` between streamed chunks, so a client's timeouts can be tested;
- `replay`: a JSONL (gzip or plain) of ecab trajectories whose recorded assistant messages are sent back
  turn by turn instead of any policy's (local_model.ReplayPolicy).

Streaming: a request with `"stream": true` is answered with Server-Sent Events as OpenAI does
(`chat.completion.chunk`s, content and tool-call deltas in a few pieces, a last chunk with the finish reason,
a usage chunk when `stream_options.include_usage`, then `data: [DONE]`). Errors are plain JSON answers, sent
before any stream starts.

Endpoints: POST /v1/chat/completions, GET /v1/models, GET /v1/sim/stats.
"""
from __future__ import annotations

import asyncio
import collections
import json
import math
import random
import threading
import time
import uuid
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Sequence

from aiohttp import web

from ecab.llm.settings import ModelSettings
from ecab.sim.local_model import TOOL_CALL_FORMATS, ReplayPolicy, turn_draw
from ecab.sim.policy import PolicyFactory, ReplyPolicy

DEFAULT_MODEL_ID = "ecab-sim-heuristic"
FAULT_KINDS = ("invalid_json", "two_calls", "no_tool_call", "unknown_tool")   # see ecab/agents/sim_policy.py
CHARS_PER_TOKEN = 4.0


@dataclass
class SimConfig:
    """How the simulated endpoint behaves. Every rate is a probability per request."""

    latency: str = "fixed"                 # fixed | lognormal
    latency_ms: float = 0.0                # fixed delay, or the lognormal median
    latency_sigma: float = 0.5             # lognormal shape
    rate_429: float = 0.0
    retry_after_s: float | None = 0.05     # Retry-After on random 429s (None: send none)
    rpm: float | None = None               # request bucket (requests per minute)
    tpm: float | None = None               # token bucket (estimated prompt tokens per minute)
    rate_5xx: float = 0.0
    malformed: dict[str, float] = field(default_factory=lambda: {k: 0.0 for k in FAULT_KINDS})
    api_key: str | None = None             # when set, requests must present it (401 otherwise)
    models: list[str] | None = None        # when set, other model ids get 404
    context_limit_tokens: int | None = None
    seed: int = 0
    # What real local models send (local_model.py); the defaults are the well-behaved endpoint.
    tool_call_format: str = "native"       # native | hermes | json | json_doubled: where the agent writes calls
    invented_tools: float = 0.0            # rate per turn: a tool name the model made up
    invented_ids: float = 0.0              # rate per turn: made-up product ids in the call's arguments
    repeats: float = 0.0                   # rate per turn: the previous turn's call, sent again
    pad_to_cap: float = 0.0                # rate per turn: content padded with newlines to max_tokens ("length")
    slow_turn_ms: float = 0.0              # extra time per turn (streamed: before the first chunk)
    chunk_gap_ms: float = 0.0              # streamed: time between chunks
    replay: str | None = None              # JSONL(.gz) of ecab trajectories: answer with their messages

    @classmethod
    def from_any(cls, value: Any) -> "SimConfig":
        """From a SimConfig, a dict or an omegaconf node; unknown keys are an error naming the key."""
        if isinstance(value, SimConfig):
            return value
        if value is None:
            return cls()
        if not isinstance(value, dict):
            from omegaconf import OmegaConf
            value = OmegaConf.to_container(value, resolve=True)
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(value) - known)
        if unknown:
            raise ValueError(f"model.sim: unknown key(s) {unknown}; known: {sorted(known)}")
        out = cls(**{k: v for k, v in value.items()})
        out.malformed = {**{k: 0.0 for k in FAULT_KINDS}, **dict(out.malformed or {})}
        bad = sorted(set(out.malformed) - set(FAULT_KINDS))
        if bad:
            raise ValueError(f"model.sim.malformed: unknown fault(s) {bad}; known: {list(FAULT_KINDS)}")
        if out.latency not in ("fixed", "lognormal"):
            raise ValueError(f"model.sim.latency must be fixed or lognormal, got {out.latency!r}")
        from ecab.config import check_number
        for key, kind, low, inclusive, nullable in (
                ("latency_ms", "number", 0, True, False), ("latency_sigma", "number", 0, True, False),
                ("rate_429", "rate", 0, True, False), ("retry_after_s", "number", 0, True, True),
                ("rpm", "number", 0, False, True), ("tpm", "number", 0, False, True),
                ("rate_5xx", "rate", 0, True, False), ("context_limit_tokens", "int", 1, True, True),
                ("seed", "int", None, True, False), ("invented_tools", "rate", 0, True, False),
                ("invented_ids", "rate", 0, True, False), ("repeats", "rate", 0, True, False),
                ("pad_to_cap", "rate", 0, True, False), ("slow_turn_ms", "number", 0, True, False),
                ("chunk_gap_ms", "number", 0, True, False)):
            check_number(f"model.sim.{key}", getattr(out, key), kind, low, inclusive, nullable)
        if out.tool_call_format not in TOOL_CALL_FORMATS:
            raise ValueError(f"model.sim.tool_call_format must be one of {list(TOOL_CALL_FORMATS)}, "
                             f"got {out.tool_call_format!r}")
        if out.replay is not None:
            from pathlib import Path
            if not isinstance(out.replay, str) or not Path(out.replay).is_file():
                raise ValueError(f"model.sim.replay must be the path of a JSONL (.gz) file of ecab trajectories "
                                 f"(or null), got {out.replay!r}: no such file")
        for kind, rate in out.malformed.items():
            check_number(f"model.sim.malformed.{kind}", rate, "rate")
        if sum(out.malformed.values()) > 1:
            raise ValueError(f"model.sim.malformed: the fault rates add up to more than 1 "
                             f"({sum(out.malformed.values()):g})")
        return out


class TokenBucket:
    """`per_minute` units refilled continuously, holding at most one second's worth (limits are smoothed,
    as hosted APIs do, so a burst hits them without waiting a minute); `take(n)` returns 0 when granted,
    else the seconds until it would be."""

    def __init__(self, per_minute: float, *, clock: Callable[[], float] = time.monotonic):
        self.rate = float(per_minute) / 60.0
        self.capacity = max(1.0, self.rate)
        self.level = self.capacity
        self.clock = clock   # monotonic seconds; a test passes a fake one
        self.stamp = clock()

    def take(self, amount: float) -> float:
        now = self.clock()
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = now
        amount = min(amount, self.capacity)   # a request bigger than the bucket waits for a full one
        if self.level >= amount:
            self.level -= amount
            return 0.0
        return (amount - self.level) / self.rate


def estimate_tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / CHARS_PER_TOKEN))


def pieces(text: str, n: int = 3) -> list[str]:
    """`text` cut into at most `n` non-empty pieces of about equal length ([] for "")."""
    if not text:
        return []
    size = max(1, math.ceil(len(text) / n))
    return [text[i:i + size] for i in range(0, len(text), size)]


def stream_chunks(completion: dict[str, Any], include_usage: bool = False) -> list[dict[str, Any]]:
    """A chat.completion as the chat.completion.chunk objects OpenAI streams for it: the role first, then the
    reasoning, the content and each tool call (id, type and name, then its arguments) in a few deltas, a last
    chunk with the finish reason, and when asked (stream_options.include_usage) a chunk with no choices and
    the usage (every earlier chunk then has "usage": null). They reassemble to the same message."""
    choice = completion["choices"][0]
    message = choice["message"]
    base = {k: completion[k] for k in ("id", "created", "model", "system_fingerprint")}
    base["object"] = "chat.completion.chunk"

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        out = {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
        if include_usage:
            out["usage"] = None
        return out

    chunks = [chunk({"role": "assistant", "content": ""})]
    for piece in pieces(message.get("reasoning_content") or ""):
        chunks.append(chunk({"reasoning_content": piece}))
    for piece in pieces(message.get("content") or ""):
        chunks.append(chunk({"content": piece}))
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call.get("function") or {}
        chunks.append(chunk({"tool_calls": [{"index": index, "id": call.get("id"), "type": call.get("type", "function"),
                                             "function": {"name": function.get("name"), "arguments": ""}}]}))
        for piece in pieces(function.get("arguments") or "", 2):
            chunks.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
    chunks.append(chunk({}, choice["finish_reason"]))
    if include_usage:
        chunks.append({**base, "choices": [], "usage": completion["usage"]})
    return chunks


class SimApp:
    """The request handling, separate from the thread/loop plumbing so it can be reused. `policies`: reply
    policy factories, asked in order (policy.py)."""

    def __init__(self, config: SimConfig, policies: Sequence[PolicyFactory] = ()):
        self.config = config
        self.rng = random.Random(config.seed)
        # A replayed file answers every request (local_model.ReplayPolicy), before any policy passed.
        replay: list[PolicyFactory] = [ReplayPolicy] if config.replay else []
        self.policies: list[ReplyPolicy] = [make(config) for make in (*replay, *policies)]
        self.rpm = TokenBucket(config.rpm) if config.rpm else None
        self.tpm = TokenBucket(config.tpm) if config.tpm else None
        self.stats: dict[str, int] = {"requests": 0, "ok": 0, "429_random": 0, "429_rpm": 0, "429_tpm": 0,
                                      "5xx": 0, "401": 0, "404": 0, "400": 0,
                                      "padded_to_cap": 0, "streamed": 0}
        self.started = time.monotonic()
        # Requests admitted past the rate limits per tenth of a second of wall time (int(time.time() * 10)),
        # so a benchmark can measure the admitted rate over any stretch of a run.
        self.admitted_per_ds: collections.Counter[int] = collections.Counter()

    def make_app(self) -> web.Application:
        app = web.Application(client_max_size=256 * 1024 * 1024)   # 100-step conversations are large
        app.router.add_post("/v1/chat/completions", self.chat_completions)
        app.router.add_get("/v1/models", self.list_models)
        app.router.add_get("/v1/sim/stats", self.get_stats)
        return app

    # -------------------------------------------------------------------------------------------- handlers

    async def list_models(self, request: web.Request) -> web.Response:
        ids = self.config.models or [DEFAULT_MODEL_ID]
        return web.json_response({"object": "list", "data": [{"id": m, "object": "model", "created": 0,
                                                              "owned_by": "ecab-sim"} for m in ids]})

    async def get_stats(self, request: web.Request) -> web.Response:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        return web.json_response({**self.all_stats(), "elapsed_s": round(elapsed, 3)})

    def all_stats(self) -> dict[str, int]:
        """The server's counters and its policies' (faults injected, plan replays)."""
        out = dict(self.stats)
        for policy in self.policies:
            out.update(policy.stats())
        return out

    async def chat_completions(self, request: web.Request) -> web.Response:
        self.stats["requests"] += 1
        cfg = self.config
        presented = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        if cfg.api_key and presented != cfg.api_key:
            # Echoes the presented key, as some providers do: the client must keep it out of its records.
            return self._error(401, f"Incorrect API key provided: {presented}.", "invalid_request_error",
                               "invalid_api_key")
        try:
            raw = await request.read()
            body = json.loads(raw)
            body["messages"]  # required (a KeyError answers 400); the policies read it
            model = str(body.get("model") or "")
        except (json.JSONDecodeError, KeyError, TypeError):
            return self._error(400, "Request body must be JSON with 'model' and 'messages'.",
                               "invalid_request_error", None)
        if cfg.models and model not in cfg.models:
            return self._error(404, f"The model `{model}` does not exist or you do not have access to it.",
                               "invalid_request_error", "model_not_found")
        prompt_tokens = estimate_tokens(raw.decode("utf-8", "replace"))   # messages + tool schemas, roughly
        if cfg.context_limit_tokens and prompt_tokens > cfg.context_limit_tokens:
            return self._error(400, f"This model's maximum context length is {cfg.context_limit_tokens} tokens. "
                                    f"However, your messages resulted in {prompt_tokens} tokens.",
                               "invalid_request_error", "context_length_exceeded")
        limited = self._rate_limited(prompt_tokens)
        if limited is not None:
            return limited
        self.admitted_per_ds[int(time.time() * 10)] += 1
        await asyncio.sleep(self._latency_s())
        if cfg.rate_5xx and self.rng.random() < cfg.rate_5xx:
            self.stats["5xx"] += 1
            status = self.rng.choice((500, 502, 503))
            return self._error(status, "The server had an error while processing your request.", "server_error", None)
        policy = self.policy_for(body)
        if policy is None:
            return self._error(400, "The simulator has no reply policy for this request.", "invalid_request_error",
                               None)
        message, finish = policy.reply(body)
        completion = self._completion(model, message, finish, prompt_tokens)
        self._maybe_pad(body, completion)
        self.stats["ok"] += 1
        if body.get("stream"):
            self.stats["streamed"] += 1
            options = body.get("stream_options") or {}
            return await self._stream(request, completion, bool(options.get("include_usage")))
        if cfg.slow_turn_ms > 0:
            await asyncio.sleep(cfg.slow_turn_ms / 1000.0)
        return web.json_response(completion)

    # ------------------------------------------------------------------------------------ local models

    def _maybe_pad(self, body: dict[str, Any], completion: dict[str, Any]) -> None:
        """`pad_to_cap`: the reply's content padded with newlines to the request's output cap (what a small
        model did under tool_choice=required): finish_reason "length", completion_tokens = the cap."""
        cfg = self.config
        cap = body.get("max_completion_tokens") or body.get("max_tokens")
        if not cfg.pad_to_cap or not isinstance(cap, int) or isinstance(cap, bool) or cap < 1:
            return
        messages = body.get("messages") or []
        if turn_draw(cfg.seed, "pad_to_cap", messages) >= cfg.pad_to_cap:
            return
        self.stats["padded_to_cap"] += 1
        choice = completion["choices"][0]
        message = choice["message"]
        calls_chars = sum(len(_call_text(c)) for c in message.get("tool_calls") or [])
        room = max(0, int(cap * CHARS_PER_TOKEN) - calls_chars)
        content = (message.get("content") or "")[:room]
        message["content"] = content + "\n" * (room - len(content))
        choice["finish_reason"] = "length"
        usage = completion["usage"]
        usage["completion_tokens"] = cap
        usage["total_tokens"] = usage["prompt_tokens"] + cap

    async def _stream(self, request: web.Request, completion: dict[str, Any],
                      include_usage: bool) -> web.StreamResponse:
        """The completion as OpenAI streams it: Server-Sent Events of chat.completion.chunk."""
        cfg = self.config
        response = web.StreamResponse(status=200, headers={"Content-Type": "text/event-stream",
                                                           "Cache-Control": "no-cache"})
        await response.prepare(request)
        chunks = stream_chunks(completion, include_usage)
        try:
            if cfg.slow_turn_ms > 0:
                await asyncio.sleep(cfg.slow_turn_ms / 1000.0)
            for k, chunk in enumerate(chunks):
                if k and cfg.chunk_gap_ms > 0:
                    await asyncio.sleep(cfg.chunk_gap_ms / 1000.0)
                await response.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            await response.write(b"data: [DONE]\n\n")
            await response.write_eof()
        except ConnectionError:   # the client gave up (an idle timeout, say): nobody to answer
            pass
        return response

    # ---------------------------------------------------------------------------------------------- parts

    def _rate_limited(self, prompt_tokens: int) -> web.Response | None:
        cfg = self.config
        if cfg.rate_429 and self.rng.random() < cfg.rate_429:
            self.stats["429_random"] += 1
            return self._error(429, "Rate limit reached (simulated).", "rate_limit_error", "rate_limit_exceeded",
                               retry_after=cfg.retry_after_s)
        if self.rpm is not None:
            wait = self.rpm.take(1)
            if wait:
                self.stats["429_rpm"] += 1
                return self._error(429, f"Rate limit reached for requests per minute: limit {cfg.rpm:g}.",
                                   "rate_limit_error", "rate_limit_exceeded", retry_after=wait)
        if self.tpm is not None:
            wait = self.tpm.take(prompt_tokens)
            if wait:
                self.stats["429_tpm"] += 1
                return self._error(429, f"Rate limit reached for tokens per minute: limit {cfg.tpm:g}, "
                                        f"requested {prompt_tokens}.",
                                   "rate_limit_error", "rate_limit_exceeded", retry_after=wait)
        return None

    def _latency_s(self) -> float:
        cfg = self.config
        if cfg.latency_ms <= 0:
            return 0.0
        if cfg.latency == "lognormal":
            return self.rng.lognormvariate(math.log(cfg.latency_ms), cfg.latency_sigma) / 1000.0
        return cfg.latency_ms / 1000.0

    def policy_for(self, request: dict[str, Any]) -> ReplyPolicy | None:
        """The first policy that claims the request."""
        return next((policy for policy in self.policies if policy.claims(request)), None)

    def _completion(self, model: str, message: dict[str, Any], finish: str, prompt_tokens: int) -> dict[str, Any]:
        spoken = (message.get("content") or "") + "".join(_call_text(c) for c in message.get("tool_calls") or [])
        reasoning_tokens = estimate_tokens(message.get("reasoning_content") or "")
        completion_tokens = estimate_tokens(spoken) + reasoning_tokens
        return {"id": "chatcmpl-" + uuid.uuid4().hex[:24], "object": "chat.completion", "created": int(time.time()),
                "model": model or DEFAULT_MODEL_ID, "system_fingerprint": "ecab-sim",
                "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                          "total_tokens": prompt_tokens + completion_tokens,
                          "completion_tokens_details": {"reasoning_tokens": reasoning_tokens}}}

    def _error(self, status: int, message: str, kind: str, code: str | None,
               retry_after: float | None = None) -> web.Response:
        if status in (400, 401, 404):   # 429s and 5xx are counted where they are decided
            self.stats[str(status)] += 1
        headers = {}
        if retry_after is not None:
            headers["retry-after-ms"] = str(int(math.ceil(retry_after * 1000)))
            headers["retry-after"] = f"{retry_after:.3f}"
        return web.json_response({"error": {"message": message, "type": kind, "param": None, "code": code}},
                                 status=status, headers=headers)


def _call_text(call: dict[str, Any]) -> str:
    """A tool call's name and arguments as the model spelled them (what its tokens were spent on)."""
    function = call.get("function") or {}
    arguments = function.get("arguments") or ""
    return str(function.get("name") or "") + (arguments if isinstance(arguments, str) else json.dumps(arguments))


class SimServer:
    """The simulator on its own event loop in a background thread:
    `with SimServer(cfg, [HeuristicPolicy]) as sim: sim.base_url`."""

    def __init__(self, config: SimConfig | dict | Any = None, policies: Sequence[PolicyFactory] = (),
                 host: str = "127.0.0.1", port: int = 0):
        self.config = SimConfig.from_any(config)
        self.host, self.port = host, port
        self.app = SimApp(self.config, policies)
        self.base_url: str | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._ready = threading.Event()
        self._failure: BaseException | None = None

    def start(self) -> str:
        self._thread = threading.Thread(target=self._serve, name="ecab-sim", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout=30):
            raise RuntimeError("the simulator did not start within 30 s")
        if self._failure is not None:
            raise RuntimeError(f"the simulator failed to start: {self._failure}") from self._failure
        return self.base_url

    def _serve(self) -> None:
        loop = self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            self._runner = web.AppRunner(self.app.make_app(), access_log=None)
            loop.run_until_complete(self._runner.setup())
            site = web.TCPSite(self._runner, self.host, self.port, backlog=1024)
            loop.run_until_complete(site.start())
            host, port = self._runner.addresses[0][:2]
            self.port = port
            self.base_url = f"http://{host}:{port}/v1"
        except BaseException as exc:  # noqa: BLE001 - reported to start()
            self._failure = exc
            self._ready.set()
            loop.close()
            return
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(self._runner.cleanup())
            loop.close()

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=30)

    @property
    def stats(self) -> dict[str, Any]:
        """The counters (the policies' too), plus `admitted_per_ds`: requests admitted per tenth of a second
        of wall time."""
        return {**self.app.all_stats(), "admitted_per_ds": dict(self.app.admitted_per_ds)}

    def __enter__(self) -> "SimServer":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def serve_if_simulated(settings: ModelSettings,
                       policies: Sequence[PolicyFactory]) -> tuple[ModelSettings, SimServer | None]:
    """The one way ecab starts the simulator for a model config: a simulated model (a `sim` block and no
    base_url: model=sim, judge.model=sim, construct.llm.model=sim) gets a simulator on 127.0.0.1 answering
    with `policies`, and the settings pointing at it; any other model comes back as it is, with no server.
    The caller stops the server when done."""
    if not settings.simulated:
        return settings, None
    server = SimServer(settings.sim, policies)
    return settings.replace(base_url=server.start()), server

"""Check a model endpoint before any episode runs (issue 31): is it there, does it serve our model id, and does it
answer a tool-calling request with a tool call?

Found with real servers (llama.cpp `llama-server`, vLLM): llama-server answers to ANY model name, so a typo in
`model.model_id` silently evaluates whatever is loaded; a refused connection ends up reported as a timeout; and a
server whose tool-call parser never fires (a wrong chat template, vLLM without `--enable-auto-tool-choice
--tool-call-parser hermes`, llama-server without `--jinja`) makes every episode end `no_tool_call`, with a summary
that says "finish rate 100%, 0 tool calls" and no hint. `check_endpoint` finds all three in a few seconds:

1. reachable: GET `<base_url>/models`. A refused connection, a host that does not resolve, or no answer in time is
   one `EndpointCheckError` naming the URL and what happened; 401/403 names the key's variable (never the key).
2. the model: when the server lists models (`{"data": [{"id": ...}]}`) and ours is not among them, an error listing
   up to 5 served ids and the override that fixes it. A server that lists none, or has no /models (404), is not an
   error: the report says the id was not checked.
3. one probe turn (`probe=True`): a real chat-completions request with the tool schemas and the system prompt the
   caller passes and a shopper query that obviously calls for a search, sent through `ChatClient` (so the key,
   extra_body, tool_choice and max_tokens_param apply as in the run), with a small output limit. The report says
   whether the reply carried native tool_calls, and if not whether its text holds a call written as text
   (`<tool_call>` → hermes; a `{"name": ..., "arguments": ...}` object, doubled braces or not → json), with the fix
   as one hint line. A request the server rejects (vLLM's 400 for tool_choice "auto" without its flags,
   llama-server's "tools param requires --jinja flag") is an error with the same hint. A probe that gets no answer
   (a timeout, a 503 while a model loads) or is cut at the output limit before any call proves nothing either way:
   the report notes it, and `NoToolCallWatch` catches the problem during the run instead.

`NoToolCallWatch` is the run-time half: shared by a run's episodes, it warns once when the run's first N turns
carried no tool call at all.

This module sits in the model layer, below the environment: the caller passes the tool schemas and the system
prompt (ecab.env.tools.tool_schemas(), ecab.env.agent_protocol.system_prompt(budget)). `EndpointCheckError` is a
ConfigError: the run's entry point reports it as one error line before any episode.
"""
from __future__ import annotations

import difflib
import json
import re
import socket
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import openai

from ecab.config import ConfigError
from ecab.llm.client import UNAVAILABLE, ChatClient, ChatError
from ecab.llm.keys import NO_KEY_PLACEHOLDER, resolve_api_key, scrub
from ecab.llm.retry import describe_error, status_of
from ecab.llm.settings import ModelSettings
from ecab.llm.tool_text import calls_from_text

__all__ = ["EndpointCheckError", "EndpointReport", "NoToolCallWatch", "check_endpoint", "detect_text_call",
           "no_call_hint", "text_call_hint", "PROBE_QUERY"]

OPENAI_URL = "https://api.openai.com/v1"
PROBE_QUERY = "Find me a red umbrella under $20."
PROBE_OUTPUT_TOKENS = 256
REACH_TIMEOUT_S = 10.0      # GET /models: a server that is up answers at once, even while a model loads
PROBE_TIMEOUT_S = 30.0      # the probe turn (capped by the model's own timeout_s)
SHOWN_IDS = 5               # served model ids named in the error
TEXT_FORMATS = ("hermes", "json")
SERVER_FLAGS = "llama-server with --jinja / vLLM with --enable-auto-tool-choice --tool-call-parser hermes"


class EndpointCheckError(ConfigError):
    """The endpoint cannot serve the run: unreachable, the key refused, the model id not served, or the probe
    request refused or rejected. Every episode would fail alike, so the run stops before the first one."""


@dataclass
class EndpointReport:
    """What `check_endpoint` found. `models`: the ids the server lists (None: it lists none, or has no /models);
    `model_listed`: whether ours is among them (None: not checked); `native_tool_calls`: whether the probe reply
    carried native tool_calls (None: no probe, or an inconclusive one); `text_format`: the text form of a call
    found in the reply's text (hermes | json), else None; `hint`: the fix, one line, when tool calls will not
    work as configured (None: nothing to fix); `notes`: what was not checked, and why."""

    url: str
    model_id: str
    models: list[str] | None = None
    model_listed: bool | None = None
    native_tool_calls: bool | None = None
    text_format: str | None = None
    hint: str | None = None
    probed: bool = False
    reply_excerpt: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Nothing to fix (a report with a hint still lets the run start: the caller decides)."""
        return self.hint is None

    def lines(self) -> list[str]:
        """Short lines to print at the start of the run."""
        listed = "" if self.models is None else \
            f"; model {self.model_id!r} is served ({len(self.models)} model(s) listed)"
        out = [f"endpoint {self.url}: reachable{listed}"]
        if self.probed:
            if self.native_tool_calls:
                out.append("tool calls: native (the probe turn made one)")
            elif self.text_format is not None:
                out.append(f"tool calls: written as text ({self.text_format} format) in the probe reply")
            elif self.native_tool_calls is False:
                excerpt = f": {self.reply_excerpt!r}" if self.reply_excerpt else " (empty)"
                out.append(f"tool calls: none in the probe reply{excerpt}")
        out += self.notes
        if self.hint:
            out.append(f"hint: {self.hint}")
        return out


def check_endpoint(settings: ModelSettings, *, probe: bool = True, tools: Sequence[dict[str, Any]] = (),
                   system: str | None = None, probe_tokens: int = PROBE_OUTPUT_TOKENS,
                   reach_timeout_s: float = REACH_TIMEOUT_S, probe_timeout_s: float = PROBE_TIMEOUT_S) -> EndpointReport:
    """Check `settings`' endpoint (see the module docstring); blocking, a few seconds. `tools` (the run's tool
    schemas) and `system` (the run's system prompt) are what the probe turn sends; `probe=False`: reachability and
    the model id only (an agent that calls the endpoint without tools). Raises EndpointCheckError (one line, no
    key in it) when the run cannot work; returns the report otherwise."""
    if probe and not tools:
        raise ValueError("check_endpoint: the probe turn needs the tool schemas (tools=tool_schemas())")
    url = (settings.base_url or OPENAI_URL).rstrip("/")
    key = resolve_api_key(settings)
    report = EndpointReport(url=url, model_id=settings.model_id)
    _check_models(settings, url, key, min(settings.timeout_s, reach_timeout_s), report)
    if probe:
        _probe(settings, url, list(tools), system, probe_tokens, min(settings.timeout_s, probe_timeout_s), report)
    return report


# ------------------------------------------------------------------------------------------ reachable, listed

def _check_models(settings: ModelSettings, url: str, key: str | None, timeout_s: float,
                  report: EndpointReport) -> None:
    http = openai.OpenAI(api_key=key or NO_KEY_PLACEHOLDER, base_url=url, max_retries=0, timeout=timeout_s)
    try:
        data = http.get("/models", cast_to=object)
    except openai.APIConnectionError as exc:       # includes APITimeoutError
        raise EndpointCheckError(unreachable_message(exc, url, timeout_s, settings.config_key)) from None
    except openai.APIStatusError as exc:
        status = status_of(exc)
        if status in (401, 403):
            raise EndpointCheckError(key_message(settings, url, status)) from None
        what = "the server has no /models (HTTP 404)" if status == 404 else \
            f"/models answered {scrub(describe_error(exc), key)}"
        report.notes.append(f"the model id is not checked: {what}")
        return
    finally:
        http.close()
    ids = served_ids(data)
    if not ids:
        report.notes.append("the server lists no models: the model id is not checked")
        return
    report.models = ids
    report.model_listed = settings.model_id in ids
    if not report.model_listed:
        raise EndpointCheckError(unlisted_message(settings, url, ids))


def served_ids(data: Any) -> list[str]:
    """The model ids of an OpenAI-format /models answer (`{"data": [{"id": ...}]}`); [] for anything else."""
    entries = data.get("data") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return []
    return [str(e["id"]) for e in entries if isinstance(e, dict) and e.get("id") not in (None, "")]


def unreachable_message(exc: BaseException, url: str, timeout_s: float, config_key: str = "model") -> str:
    """One line for a connection that failed: refused, a host that does not resolve, or no answer in time."""
    chain = _chain(exc)
    if any(isinstance(e, ConnectionRefusedError) for e in chain) or \
            any("connection refused" in str(e).lower() for e in chain):
        return f"connection refused at {url}: is the server running? (check {config_key}.base_url)"
    if any(isinstance(e, socket.gaierror) for e in chain):
        unresolved = next(e for e in chain if isinstance(e, socket.gaierror))
        return (f"cannot resolve the host of {url} ({unresolved.strerror or unresolved}): "
                f"check {config_key}.base_url")
    if isinstance(exc, openai.APITimeoutError) or any(isinstance(e, TimeoutError) for e in chain):
        return (f"no answer from {url} within {timeout_s:g} s: is the server up and {config_key}.base_url right?")
    root = chain[-1]
    return f"cannot connect to {url} ({type(root).__name__}: {root}): is the server running? (check {config_key}.base_url)"


def key_message(settings: ModelSettings, url: str, status: int | None) -> str:
    if settings.api_key_env:
        return (f"{url} refused the API key (HTTP {status}): check the key in the environment variable "
                f"{settings.api_key_env} ({settings.config_key}.api_key_env)")
    return (f"{url} wants an API key (HTTP {status}): export it in an environment variable and name that variable "
            f"in {settings.config_key}.api_key_env")


def unlisted_message(settings: ModelSettings, url: str, ids: list[str]) -> str:
    """The served ids closest to ours first, up to SHOWN_IDS, and the override that fixes it."""
    close = difflib.get_close_matches(settings.model_id, ids, n=SHOWN_IDS, cutoff=0.3)
    shown = (close + [i for i in ids if i not in close])[:SHOWN_IDS]
    more = f" (and {len(ids) - len(shown)} more)" if len(ids) > len(shown) else ""
    k = settings.config_key
    fix = f"set {k}.model_id={shown[0]}" if len(ids) == 1 else f"set {k}.model_id=<one of them>, e.g. {k}.model_id={shown[0]}"
    return (f"{url} does not serve model {settings.model_id!r}; it serves: {', '.join(shown)}{more}: {fix}")


def _chain(exc: BaseException) -> list[BaseException]:
    out, seen = [exc], {id(exc)}
    while (cause := out[-1].__cause__ or out[-1].__context__) is not None and id(cause) not in seen:
        seen.add(id(cause))
        out.append(cause)
    return out


# ------------------------------------------------------------------------------------------------- the probe

def _probe(settings: ModelSettings, url: str, tools: list[dict[str, Any]], system: str | None, probe_tokens: int,
           timeout_s: float, report: EndpointReport) -> None:
    probe_settings = settings.replace(max_output_tokens=int(probe_tokens), timeout_s=timeout_s, max_attempts=1,
                                      stream=False)
    client = ChatClient(probe_settings)
    messages: list[dict[str, Any]] = ([{"role": "system", "content": system}] if system else []) + \
        [{"role": "user", "content": PROBE_QUERY}]
    try:
        reply = client.complete_blocking(client.request(messages, tools=tools))
    except ChatError as exc:
        hint = server_hint(exc.detail, settings)
        if hint is None and exc.kind == UNAVAILABLE:
            # no answer in time, a 503 while the model loads, a 5xx: proves nothing about the run
            report.notes.append(f"tool calling is not checked: the probe turn got no answer ({exc.detail})")
            return
        failed = f"the probe turn failed: {exc}"
        if exc.kind != UNAVAILABLE and status_of_detail(exc.detail) == 404 and not url.endswith("/v1"):
            failed += f" (does {settings.config_key}.base_url need to end in /v1?)"
        raise EndpointCheckError(failed + (f"; hint: {hint}" if hint else "")) from None
    finally:
        client.close_blocking()
    report.probed = True
    message = reply.message
    content = str(message.get("content") or "")
    report.reply_excerpt = " ".join(content.split())[:120] or None
    if message.get("tool_calls"):
        report.native_tool_calls = True
        if settings.tool_call_format != "native":
            report.notes.append(f"the endpoint makes native tool calls: {settings.config_key}.tool_call_format="
                                f"{settings.tool_call_format} is not needed")
        return
    report.native_tool_calls = False
    texts = [content] + [str(message.get(f) or "") for f in ("reasoning_content", "reasoning")]
    found, call = None, None
    for text in texts:
        found, call = detect_text_call(text, prefer=settings.tool_call_format)
        if found is not None:
            break
    report.text_format = found
    finish = ((reply.data.get("choices") or [{}])[0] or {}).get("finish_reason")
    if found is None:
        if finish == "length":
            report.native_tool_calls = None
            report.notes.append(f"tool calling is not checked: the probe reply was cut at {probe_tokens} output "
                                "tokens before any tool call (a thinking model?)")
            return
        report.hint = no_call_hint(settings)
        return
    if settings.tool_call_format == found and call is not None:
        return                                     # a text call in the configured form: parsed as the run will
    report.hint = text_call_hint(found, settings)


def status_of_detail(detail: str) -> int | None:
    """The HTTP status in a ChatError's detail ("NotFoundError 404: ..."), or None."""
    match = re.match(r"\w+ (\d{3}):", detail or "")
    return int(match.group(1)) if match else None


def server_hint(detail: str, settings: ModelSettings) -> str | None:
    """The fix for a server that refuses tool-calling requests as it was started, from its error message."""
    text = (detail or "").lower()
    if "enable-auto-tool-choice" in text or "tool-call-parser" in text:
        return ("start vLLM with --enable-auto-tool-choice --tool-call-parser hermes (or your model's parser), or "
                f"try {settings.config_key}.tool_choice=required")
    if "jinja" in text:
        return "start llama-server with --jinja (tool calls need the model's own chat template)"
    return None


def text_call_hint(fmt: str, settings: ModelSettings) -> str:
    """The one-line fix for a tool call the endpoint writes as text in format `fmt` (hermes | json)."""
    k = settings.config_key
    return (f"the endpoint answered with a tool call written as text ({fmt} format), not a native tool call: "
            f"set {k}.tool_call_format={fmt}, or start {SERVER_FLAGS}")


def no_call_hint(settings: ModelSettings | None = None) -> str:
    """The one-line fix for an endpoint that answers without any tool call."""
    k = settings.config_key if settings is not None else "model"
    fmt = settings.tool_call_format if settings is not None else "native"
    choice = settings.tool_choice if settings is not None else "auto"
    head = "the endpoint answered without any tool call"
    if fmt != "native":
        head += f" (none written as text in {fmt} format either)"
    try_choice = (f"try {k}.tool_choice=required, " if choice != "required"
                  else f"even with {k}.tool_choice=required; ")
    return (f"{head}: {try_choice}check that the server makes tool calls (start {SERVER_FLAGS}; a chat "
            f"template with tools), or set {k}.tool_call_format=hermes|json if the model writes its calls as text")


# ------------------------------------------------------------------------------------------ calls as text



def detect_text_call(text: str, prefer: str | None = None) -> tuple[str | None, dict[str, Any] | None]:
    """(format, call) of a tool call written as text, read by the run's own parser (ecab/llm/tool_text.py):
    "hermes" when the text has `<tool_call>` blocks (the call None when none can be read), "json" for a
    `{"name": ..., "arguments": ...}` object anywhere in it (doubled braces too), else (None, None).
    `prefer="json"`: a hermes call also counts as json (its inside is the same object, and the json format
    reads it)."""
    if not text:
        return None, None
    for fmt in ("json",) if prefer == "json" else ("hermes", "json"):
        found = calls_from_text(text, fmt)
        readable = next((c for c in found.calls if c.error is None), None)
        if readable is not None:
            return fmt, {"name": readable.name, "arguments": json.loads(readable.arguments)}
        if fmt == "hermes" and found.calls:
            return "hermes", None
    return None, None


# ------------------------------------------------------------------------------------------ during the run

class NoToolCallWatch:
    """Watches a run's agent turns for the endpoint that never makes a tool call. One watch per run, shared by its
    episodes: `turn(had_tool_call)` after each agent turn; when the run's first `after` turns all carried no tool
    call, that turn returns the warning (and passes it to `emit`, when given), once per run; from the first turn
    with a call on, the watch is quiet for good.

    Not locked: meant for the episodes of one event loop, where `turn` (no await inside) runs whole. Episodes on
    threads or other processes (Ray workers) keep a watch each: every worker then warns at most once."""

    def __init__(self, settings: ModelSettings | None = None, *, after: int = 8,
                 emit: Callable[[str], None] | None = None, hint: str | None = None):
        if after < 1:
            raise ValueError(f"NoToolCallWatch: after must be at least 1, got {after}")
        self.after = int(after)
        self.emit = emit
        self.hint = hint or no_call_hint(settings)
        self.turns = 0
        self.seen_call = False
        self.warned = False

    def turn(self, had_tool_call: bool) -> str | None:
        """Count one agent turn; the warning on the turn that completes `after` turns without a call, else None."""
        if self.seen_call or self.warned:
            return None
        if had_tool_call:
            self.seen_call = True
            return None
        self.turns += 1
        if self.turns < self.after:
            return None
        self.warned = True
        warning = f"warning: the first {self.turns} agent turns of this run carried no tool call: {self.hint}"
        if self.emit is not None:
            self.emit(warning)
        return warning

"""An agent backed by any OpenAI-compatible chat-completions endpoint (OpenAI, OpenRouter, vLLM, a gateway,
the simulator).

One `act` = one chat-completions request with the 10 tool schemas, sent through the model layer's chat client
(ecab/llm/client.py: retries, the concurrency gate and the endpoint's limiter, tokens and cost); the episode
loop (env/episode.py) supplies the paper's system prompt and enforces one executed call per turn. Per turn the
agent records: token usage (prompt / completion / reasoning), the cost from the model's price table, the
latency including any retry waits, each retry (attempt, wait, status) as a `{"type": "retry"}` entry of the
reasoning trace, and the provider's reasoning text (`reasoning_content`, `reasoning`, or `reasoning_details`)
as `{"type": "reasoning"}` entries. Provider reasoning fields are also kept on the assistant message, because
OpenRouter and Moonshot expect them echoed in later turns.

Tool calls written as text (`model.tool_call_format` hermes or json, for local servers whose chat template
leaves the call in `content`, issue 31): a reply without native `tool_calls` is read by llm/tool_text.py; the
calls found become ordinary tool calls (ids `text_call_<n>`, unique in the episode) with the rest of the text
as `content`, the message is marked `tool_calls_parsed_from: <format>` and the trace gets a
`{"type": "text_tool_calls"}` entry. A call that looks like one but cannot be read becomes a call with the
raw text as arguments and a `parse_error` key (the message that tells the model what to write); the episode
loop records it as a failed call without running it.

Errors, from the client's classification: a request that stays unavailable (retries run out, an exhausted
quota) raises InfraError (the episode ends as infra_error and is re-run at episode level); a refusal of the
client itself (401/403: the key; 404: the model id or the URL) raises EndpointRefused, which stops the run:
every episode would fail the same way, and none is recorded as the model's failure; anything else a retry
cannot fix (a 400 such as context length) raises AgentError. Either error carries the turn's retries
(`retry_entries`) for the trajectory. The API key never appears in messages, traces or errors.

Every episode of a run shares one ChatClient (connection pool, gate, limiter), built by the runner
(runner/local.py, runner/ray_worker.py) with the endpoint's limiter.
"""
from __future__ import annotations

import sys
import weakref
from typing import Any

from ecab.env.agent_protocol import AgentError, AgentTurn, EndpointRefused, InfraError
from ecab.llm.client import REFUSED, UNAVAILABLE, ChatClient, ChatError, Reply
from ecab.llm.context_window import ContextOverflow, fit
from ecab.llm.endpoint_check import NoToolCallWatch
from ecab.llm.tool_text import TextCall, calls_from_text

# One watch per chat client, i.e. per run (the runner shares one client among its episodes): a run whose first
# turns carry no tool call at all is told once why that usually is (docs/local-models.md).
_WATCHES: "weakref.WeakKeyDictionary[ChatClient, NoToolCallWatch]" = weakref.WeakKeyDictionary()


def _warn(text: str) -> None:
    print(text, file=sys.stderr, flush=True)

REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_details")   # as providers name them


class OpenAIAgent:
    """`act(messages, tools) -> AgentTurn` against an OpenAI-compatible endpoint, through `chat`."""

    def __init__(self, chat: ChatClient, budget: int = 100, seed: int | None = None):
        self.chat = chat
        self.settings = chat.settings
        self.name = self.settings.name
        self.budget = budget
        self.seed = seed          # the episode's seed, sent when settings.send_seed
        self.text_calls = 0       # calls read from text so far: their ids, text_call_<n>, are unique per episode
        self._fit_entry: dict[str, Any] | None = None   # how the last request was fitted into context_tokens
        if chat not in _WATCHES:
            _WATCHES[chat] = NoToolCallWatch(self.settings, emit=_warn)
        self.watch = _WATCHES[chat]

    def build_request(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        return self.chat.request(self._fitted(messages, tools), tools=tools, seed=self.seed)

    def _fitted(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The conversation kept under `context_tokens` (older tool results shortened first); what was shortened
        goes into the turn's trace. Past the limit even so: the episode's agent_error, naming the budget."""
        self._fit_entry = None
        limit = self.settings.context_tokens
        if not limit:
            return messages
        try:
            fitted = fit(messages, tools, limit, reserve_output=self.settings.max_output_tokens or None,
                         config_key=self.settings.config_key)
        except ContextOverflow as exc:
            raise AgentError(str(exc)) from None
        if fitted.trimmed:
            self._fit_entry = {"type": "context_fit", "limit_tokens": limit,
                               "estimated_tokens": fitted.estimated_tokens, "shortened": len(fitted.trims),
                               "messages": [t["index"] for t in fitted.trims]}
        return fitted.messages

    async def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> AgentTurn:
        try:
            reply = await self.chat.complete(self.build_request(messages, tools))
        except ChatError as exc:
            error_type = {REFUSED: EndpointRefused, UNAVAILABLE: InfraError}.get(exc.kind, AgentError)
            error = error_type(str(exc))
            error.retry_entries = exc.retries
            raise error from None
        turn = self._turn(reply)
        if self._fit_entry is not None:
            turn.reasoning_trace.append(self._fit_entry)
        self.watch.turn(bool(turn.message.get("tool_calls")))
        return turn

    def _turn(self, reply: Reply) -> AgentTurn:
        raw = reply.message
        message: dict[str, Any] = {"role": "assistant", "content": raw.get("content") or ""}
        if raw.get("tool_calls"):
            message["tool_calls"] = [_clean_call(c) for c in raw["tool_calls"]]
        trace = [{"type": "retry", **entry} for entry in reply.log.entries]
        if not raw.get("tool_calls") and self.settings.tool_call_format != "native":
            self._read_text_calls(message, trace)
        for name in REASONING_FIELDS:
            value = raw.get(name)
            if value in (None, "", []):
                continue
            if self.settings.echo_reasoning:
                message[name] = value
            trace.append({"type": "reasoning", "provider": "openai-compatible", "model": self.settings.model_id,
                          "source": name, "raw_reasoning": value if isinstance(value, str) else None,
                          **({} if isinstance(value, str) else {"details": value})})
        tokens = reply.tokens
        return AgentTurn(message=message, input_tokens=tokens.prompt, output_tokens=tokens.completion,
                         reasoning_tokens=tokens.reasoning, latency_s=reply.latency_s, retries=reply.log.count,
                         reasoning_trace=trace, cost_usd=reply.cost_usd)

    def _read_text_calls(self, message: dict[str, Any], trace: list[dict[str, Any]]) -> None:
        """Put the calls written in the message's text on it as tool calls (llm/tool_text.py); no-op without any."""
        fmt = self.settings.tool_call_format
        found = calls_from_text(message["content"], fmt)
        if not found.calls:
            return
        message["content"] = found.text
        message["tool_calls"] = [self._text_call(call) for call in found.calls]
        message["tool_calls_parsed_from"] = fmt
        trace.append({"type": "text_tool_calls", "format": fmt, "calls": len(found.calls),
                      "unreadable": sum(1 for call in found.calls if call.error)})

    def _text_call(self, call: TextCall) -> dict[str, Any]:
        self.text_calls += 1
        out: dict[str, Any] = {"id": f"text_call_{self.text_calls}", "type": "function",
                               "function": {"name": call.name, "arguments": call.arguments}}
        if call.error:
            out["parse_error"] = call.error
        return out


def _clean_call(call: dict[str, Any]) -> dict[str, Any]:
    """A tool call as the next request must echo it (id, type, function name + raw arguments string)."""
    function = call.get("function") or {}
    arguments = function.get("arguments")
    return {"id": call.get("id") or "", "type": call.get("type") or "function",
            "function": {"name": function.get("name") or "", "arguments": "" if arguments is None else arguments}}

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

from typing import Any

from ecab.env.agent_protocol import AgentError, AgentTurn, EndpointRefused, InfraError
from ecab.llm.client import REFUSED, UNAVAILABLE, ChatClient, ChatError, Reply

REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_details")   # as providers name them


class OpenAIAgent:
    """`act(messages, tools) -> AgentTurn` against an OpenAI-compatible endpoint, through `chat`."""

    def __init__(self, chat: ChatClient, budget: int = 100):
        self.chat = chat
        self.settings = chat.settings
        self.name = self.settings.name
        self.budget = budget

    def build_request(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        return self.chat.request(messages, tools=tools)

    async def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> AgentTurn:
        try:
            reply = await self.chat.complete(self.build_request(messages, tools))
        except ChatError as exc:
            error_type = {REFUSED: EndpointRefused, UNAVAILABLE: InfraError}.get(exc.kind, AgentError)
            error = error_type(str(exc))
            error.retry_entries = exc.retries
            raise error from None
        return self._turn(reply)

    def _turn(self, reply: Reply) -> AgentTurn:
        raw = reply.message
        message: dict[str, Any] = {"role": "assistant", "content": raw.get("content") or ""}
        if raw.get("tool_calls"):
            message["tool_calls"] = [_clean_call(c) for c in raw["tool_calls"]]
        trace = [{"type": "retry", **entry} for entry in reply.log.entries]
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


def _clean_call(call: dict[str, Any]) -> dict[str, Any]:
    """A tool call as the next request must echo it (id, type, function name + raw arguments string)."""
    function = call.get("function") or {}
    arguments = function.get("arguments")
    return {"id": call.get("id") or "", "type": call.get("type") or "function",
            "function": {"name": function.get("name") or "", "arguments": "" if arguments is None else arguments}}

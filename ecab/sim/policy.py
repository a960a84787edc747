"""What the simulator answers with: its reply policies.

The server (server.py) does the endpoint's part: HTTP, the key, the served model ids, the context limit,
latency, 429s and 5xx. What a request gets as its assistant message is decided by the first of the server's
policies that claims the request. Each stage that talks to a model brings its own policy, so the simulator
knows nobody's prompts: the agent's (ecab.agents.sim_policy: the heuristic agent behind tool calls, with
the malformed replies `SimConfig.malformed` asks for), the LLM judge's (ecab.judge.sim_policy) and the LLM
verbalizer's (ecab.construct.sim_policy). Whoever starts the simulator passes the policies it needs, as
factories called with the server's SimConfig (a policy class taking the config is one).
"""
from __future__ import annotations

import json
from typing import Any, Callable, Protocol


class ReplyPolicy(Protocol):
    def claims(self, request: dict[str, Any]) -> bool:
        """Whether this policy answers the chat-completions request (its body: model, messages, ...)."""

    def reply(self, request: dict[str, Any]) -> tuple[dict[str, Any], str]:
        """(the assistant message, the finish reason) for the request."""

    def stats(self) -> dict[str, int]:
        """Counters the simulator reports with its own (GET /v1/sim/stats, SimServer.stats)."""


PolicyFactory = Callable[[Any], ReplyPolicy]    # called with the server's SimConfig


def system_prompt_starts_with(messages: list[dict[str, Any]], marker: str) -> bool:
    """Whether the conversation's system prompt starts with `marker` (how a stage marks its prompts)."""
    first = messages[0] if messages else {}
    return first.get("role") == "system" and str(first.get("content") or "").startswith(marker)


def first_user_text(messages: list[dict[str, Any]]) -> str:
    """The first user message's text (content parts as canonical JSON)."""
    for message in messages:
        if message.get("role") == "user":
            content = message.get("content")
            return json.dumps(content, sort_keys=True) if not isinstance(content, str) else content
    return ""


class TextPolicy:
    """A policy answering plain text (no tool calls) to the requests `claims_request` accepts, with
    `answer(messages)`: how the judge's and the verbalizer's policies are built."""

    def __init__(self, claims_request: Callable[[dict[str, Any]], bool],
                 answer: Callable[[list[dict[str, Any]]], str]):
        self._claims, self._answer = claims_request, answer

    def claims(self, request: dict[str, Any]) -> bool:
        return self._claims(request)

    def reply(self, request: dict[str, Any]) -> tuple[dict[str, Any], str]:
        return {"role": "assistant", "content": self._answer(request["messages"])}, "stop"

    def stats(self) -> dict[str, int]:
        return {}

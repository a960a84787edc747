"""Helpers of the offline agents: scripted agents that speak the environment's agent protocol
(ecab/env/agent_protocol.py) and read tool results back from the message history exactly as a model would."""
from __future__ import annotations

import json
from typing import Any

from ecab.env.agent_protocol import AgentTurn


def tool_call_message(call_id: str, name: str, arguments: dict[str, Any], thought: str = "") -> dict[str, Any]:
    """An assistant message making exactly one tool call, as an OpenAI-compatible model would send it."""
    return {"role": "assistant", "content": thought,
            "tool_calls": [{"id": call_id, "type": "function",
                            "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)}}]}


def last_tool_result(messages: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The parsed content of the most recent tool message, or None."""
    for message in reversed(messages):
        if message.get("role") == "tool":
            try:
                return json.loads(message.get("content") or "null")
            except json.JSONDecodeError:
                return None
    return None


class ScriptedAgent:
    """Base for offline agents written as a plan of tool calls that may look at earlier results.

    Subclasses implement `plan()`, a generator that yields (tool name, arguments) and receives each tool's
    parsed result back via `send`. The plan must end with recommend_product.
    """

    name = "scripted"

    def __init__(self) -> None:
        self._plan = None
        self._calls = 0

    def plan(self):  # pragma: no cover - abstract
        raise NotImplementedError

    async def act(self, messages, tools) -> AgentTurn:
        if self._plan is None:
            self._plan = self.plan()
            name, args = next(self._plan)
        else:
            try:
                name, args = self._plan.send(last_tool_result(messages))
            except StopIteration:
                # A plan that ran dry without recommending: answer in text (the loop reminds, then stops).
                return AgentTurn(message={"role": "assistant", "content": "I have nothing more to do."})
        self._calls += 1
        return AgentTurn(message=tool_call_message(f"call_{self._calls}", name, args,
                                                   thought=f"Thought: call {name}."))

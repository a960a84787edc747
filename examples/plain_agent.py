"""A plain Python agent: one tool call per turn, written against ecab's `Agent` protocol.

Run it (from the repository root, so `examples` is importable; or install your own package):
    python -m ecab.run model=example-agent
which is conf/model/example-agent.yaml:  {name: example-agent, kind: python, target: examples.plain_agent:make_agent}

The agent reads the shopper's profile, asks one question, searches with the query plus what it learned, and
recommends the first hit. It is deliberately simple: the point is the shape, not the score.
"""
from __future__ import annotations

import json
from typing import Any

import ecab


class ProfileFirstAgent:
    name = "example-agent"

    def __init__(self, query: str, question: str):
        self.query, self.question = query, question
        self.calls = 0

    async def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ecab.AgentTurn:
        """One assistant message with one tool call; `messages` is the conversation so far (OpenAI format),
        `tools` the tool definitions. ecab executes the call and appends its result before the next turn."""
        self.calls += 1
        if self.calls == 1:
            return call(self.calls, "get_user_profile", {})
        if self.calls == 2:
            return call(self.calls, "ask_user", {"question": self.question})
        if self.calls == 3:
            return call(self.calls, "search_products", {"query": self.query})
        hits = last_result(messages).get("products") or []
        product_id = hits[0]["product_id"] if hits else "none"
        return call(self.calls, "recommend_product", {"product_id": product_id, "reasoning": "the first hit"})


def call(n: int, name: str, arguments: dict[str, Any]) -> ecab.AgentTurn:
    return ecab.AgentTurn(message={"role": "assistant", "content": f"Thought: call {name}.", "tool_calls": [
        {"id": f"call_{n}", "type": "function",
         "function": {"name": name, "arguments": json.dumps(arguments)}}]})


def last_result(messages: list[dict[str, Any]]) -> dict[str, Any]:
    for message in reversed(messages):
        if message.get("role") == "tool":
            result = json.loads(message["content"])
            return result if isinstance(result, dict) else {}
    return {}


def make_agent(context: ecab.AgentContext) -> ProfileFirstAgent:
    """The factory ecab calls once per episode; `context.options` holds the config's `model.options`."""
    return ProfileFirstAgent(context.query, context.options.get("question", "What matters most to you?"))

"""What every agent speaks: OpenAI chat messages in, one assistant message (with tool calls) out.

Offline agents (oracle, heuristic, random) and LLM agents share this protocol, so the episode loop is
the same code for all of them. Offline agents read tool results back from the message history exactly
as a model would.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol

SYSTEM_PROMPT_TEMPLATE = """You are a personal shopping assistant with access to a product catalog and the shopper's profile.
Your job is to find the single product that best matches everything this shopper needs. Their full requirements come from three sources that you must consult:
1. The shopping query they just sent you.
2. Their saved user profile.
3. Their answers to your follow-up questions - use ask_user to probe for any remaining unknowns properties.

Before every tool call, write a Thought block in your response:
Thought:
- Observation: what I learned from the previous tool result (skip on the first turn)
- Reasoning: how this narrows down or changes my strategy
- Plan: which tool I will call next and why

Rules:
- One tool call per step.
- Recommend exactly one product by calling recommend_product. Do not answer in plain text.
- You have a limited of {budget} steps. If you tried hard and are very near step limit, try to make a best guess.
- All three information sources contain parts of requirements for the final product.
- If search results do not match, try to broaden your search. Consider that the catalog uses specific attribute terms that may differ from the shopper's phrasing.
- This is a strict evaluation. The recommended product must satisfy EVERY requirement - missing even one attribute means the case is judged as completely wrong. Be thorough."""


def system_prompt(budget: int = 100) -> str:
    """The paper's prediction prompt (PAPER App. C.3), with the step limit set to the run's budget."""
    return SYSTEM_PROMPT_TEMPLATE.format(budget=budget)


class AgentError(RuntimeError):
    """The model failed in a way a re-run would not fix (a context-length 400): termination agent_error."""


class InfraError(RuntimeError):
    """The endpoint failed after retries (timeouts, 5xx, connection): termination infra_error, re-runnable."""


class EndpointRefused(RuntimeError):
    """The endpoint refuses this client outright (401/403: the key; 404: the model or the URL), so every
    episode would fail the same way: not an episode's outcome (nothing is recorded), it stops the run."""


@dataclass
class AgentTurn:
    """One assistant message plus what it cost."""

    message: dict[str, Any]
    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    latency_s: float = 0.0
    retries: int = 0
    reasoning_trace: list[dict[str, Any]] = field(default_factory=list)
    cost_usd: float = 0.0


class Agent(Protocol):
    name: str

    async def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> AgentTurn: ...


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

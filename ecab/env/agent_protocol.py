"""What the environment expects of an agent (docs/architecture.md §2): OpenAI chat messages in, one assistant
message (with tool calls) out, the errors that end an episode, and the system prompt that states the rules.

It lives with the environment, not with the agents, because the episode loop (env/episode.py) is written
against it and every agent - offline (agents/heuristic.py, oracle.py, random_agent.py) or LLM
(agents/openai_agent.py) - implements it: the agents depend on the environment, never the reverse.
"""
from __future__ import annotations

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
    """Every episode would fail the same way: the endpoint refuses this client outright (401/403: the key; 404:
    the model or the URL), or a user's agent factory fails (agents/__init__.py::make_agent). Not an episode's
    outcome (nothing is recorded): it stops the run, and the finished episodes are kept."""


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
    cost_usd: float | None = 0.0        # None: unknown (a model without a price table), never read as $0


def add_cost(total: float | None, cost: float | None, digits: int = 6) -> float | None:
    """A running cost plus one more: None (unknown) as soon as either is, so an unpriced call never adds $0."""
    return None if total is None or cost is None else round(total + cost, digits)


class Agent(Protocol):
    name: str

    async def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> AgentTurn: ...

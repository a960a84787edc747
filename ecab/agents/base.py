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


def tool_results_in(messages: list[dict[str, Any]]) -> int:
    """The tool messages of a conversation: the tool calls the episode has executed (and charged)."""
    return sum(1 for m in messages if m.get("role") == "tool")


class ScriptedAgent:
    """Base for offline agents written as a plan of tool calls that may look at earlier results.

    Subclasses implement `plan()`, a generator that yields (tool name, arguments) and receives each tool's
    parsed result back via `send`. The plan must end with recommend_product.
    """

    name = "scripted"

    def __init__(self) -> None:
        self._plan = None
        self._calls = 0
        # Tool calls the episode has executed so far (its tool messages): the budget counts these, and they can
        # outnumber the plan's own calls when a turn failed (a malformed call still costs one).
        self.calls_spent = 0
        self.used = 0              # the plan's own calls (`call`)
        self.limit = 0             # subclasses: calls the plan may make before recommend_product
        self.budget = 100          # subclasses: the episode's budget of tool calls

    def calls_left(self) -> int:
        """Calls the plan may still make before recommending: its own limit less its calls, and never more than
        the episode's budget still allows once as many calls again as have failed so far are kept back (a
        run that met failures expects more, and must keep a call for its recommendation). Without failures,
        or with room to spare, the plan is the same as a failure-free run's."""
        failed = max(0, self.calls_spent - self.used)
        return min(self.limit - self.used, self.budget - 1 - self.calls_spent - failed)

    def call(self, name: str, args: dict):
        """A plan step (`result = yield from self.call(...)`) that counts the plan's calls."""
        self.used += 1
        return (yield name, args)

    def plan(self):  # pragma: no cover - abstract
        raise NotImplementedError

    async def act(self, messages, tools) -> AgentTurn:
        self.calls_spent = tool_results_in(messages)
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


class SearchFusion:
    """Search result pages fused by reciprocal rank: each hit adds `weight / (k + its 1-based rank)` to its
    product's score (weight 0 records a page without ranking it), first-seen order breaks ties. The offline
    agents search several phrasings and inspect the best-fused hits first."""

    def __init__(self, k: int):
        self.k = k
        self.scores: dict[str, float] = {}
        self.order: list[str] = []             # product ids in the order first seen
        self.titles: dict[str, str] = {}       # product id -> the title its first hit showed

    def take(self, result: Any, weight: float = 1.0) -> list[str]:
        """Fuse one search_products result; returns its product ids in page order (malformed hits skipped)."""
        hits = result.get("products") if isinstance(result, dict) else None
        ids = []
        for i, hit in enumerate(hits if isinstance(hits, list) else []):
            pid = hit.get("product_id") if isinstance(hit, dict) else None
            if not isinstance(pid, str) or not pid:
                continue
            ids.append(pid)
            if pid not in self.titles:
                self.titles[pid] = str(hit.get("title") or "")
                self.order.append(pid)
            self.scores[pid] = self.scores.get(pid, 0.0) + weight / (self.k + i + 1)
        return ids

    def fused(self) -> list[str]:
        """Every product seen, best fused score first (a stable sort keeps first-seen order among ties)."""
        return sorted(self.order, key=lambda p: -self.scores.get(p, 0.0))


def read_review_stats(ids: list[str], batch: int, call, calls_left):
    """A plan step (`stats = yield from read_review_stats(...)`): get_product_review_stats over `ids` in batches
    of `batch`, through the agent's counting `call`, while `calls_left()` is positive; {product id: its row}."""
    stats: dict[str, dict] = {}
    for i in range(0, len(ids), batch):
        if calls_left() < 1:
            break
        got = yield from call("get_product_review_stats", {"product_ids": ids[i:i + batch]})
        rows = got.get("products") if isinstance(got, dict) else None
        for row in rows if isinstance(rows, list) else []:
            pid = row.get("product_id") if isinstance(row, dict) else None
            if pid:
                stats[str(pid)] = row
    return stats

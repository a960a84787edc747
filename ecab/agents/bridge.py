"""The loop-owning agent bridge: an agent that runs its own loop (a LangGraph graph, the OpenAI Agents SDK, a
plain while-loop) is scored by the same episode loop as every other agent.

ecab's episode loop asks an agent for one turn at a time (`act`). A loop-owning agent instead calls tools when
it likes: `result = await session.call("search_products", {"query": "usb hub"})`. `BridgeAgent` joins the two:
it runs the agent's `run(session)` as a task beside the episode; each `session.call` becomes the turn the
episode loop is waiting for, and the tool message the loop executes is handed back as the call's result. So
the budget, the one-call-per-turn rule, termination, the trajectory record and the judge stay ecab's: a call
past the budget is simply never answered (the episode has ended and the task is cancelled), and
recommend_product ends the episode exactly as it does for a model.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from ecab.agents.base import tool_call_message
from ecab.core.plugins import describe_exception
from ecab.env.agent_protocol import AgentError, AgentTurn, InfraError, add_cost, system_prompt

LoopRun = Callable[["ToolSession"], Awaitable[Any]]
LOOP_ENDED = "The agent's loop ended without recommending a product."


@dataclass
class _Call:
    name: str
    arguments: str
    thought: str
    answer: asyncio.Future


@dataclass
class _Ended:
    value: Any = None
    error: BaseException | None = None


class ToolSession:
    """What a loop-owning agent holds: the episode's query and tools (OpenAI-style tool definitions, ready to
    pass to any chat-completions client), and `call` to run one tool through the episode."""

    def __init__(self, context, requests: asyncio.Queue):
        self.query: str = context.query
        self.budget: int = context.budget
        self.seed: int = context.seed
        self.options: dict[str, Any] = dict(context.options)
        self.chat = context.chat
        self.system_prompt: str = system_prompt(context.budget)
        self.tools: list[dict[str, Any]] = []       # filled before `run` starts
        self.calls_made = 0
        self._requests = requests
        self._usage = {"input_tokens": 0, "output_tokens": 0, "reasoning_tokens": 0, "cost_usd": 0.0}
        self._one_at_a_time = asyncio.Lock()

    @property
    def calls_left(self) -> int:
        return self.budget - self.calls_made

    @property
    def tool_names(self) -> list[str]:
        return [t["function"]["name"] for t in self.tools]

    async def call(self, name: str, arguments: dict[str, Any] | str | None = None, *, thought: str = "") -> Any:
        """Run one tool call through the episode and return its parsed result (the tool message's JSON; a
        tool error is a result with an `error` key, as a model sees it). Calls are made one at a time. A call
        the episode does not answer (budget spent, product recommended) never returns: the task is cancelled."""
        text = arguments if isinstance(arguments, str) else json.dumps(arguments or {}, ensure_ascii=False)
        async with self._one_at_a_time:
            answer = asyncio.get_running_loop().create_future()
            await self._requests.put(_Call(name, text, thought, answer))
            content = await answer
            self.calls_made += 1
        try:
            return json.loads(content)
        except (TypeError, json.JSONDecodeError):
            return content

    def report_usage(self, *, input_tokens: int = 0, output_tokens: int = 0, reasoning_tokens: int = 0,
                     cost_usd: float | None = 0.0) -> None:
        """Add what the agent's own model calls cost; it is recorded on the next tool call's step. A cost of
        None is unknown (a model without prices): the episode's cost is then unknown, not $0."""
        self._usage["input_tokens"] += int(input_tokens)
        self._usage["output_tokens"] += int(output_tokens)
        self._usage["reasoning_tokens"] += int(reasoning_tokens)
        self._usage["cost_usd"] = add_cost(self._usage["cost_usd"], None if cost_usd is None else float(cost_usd), 8)

    def take_usage(self) -> dict[str, Any]:
        usage = self._usage
        self._usage = {"input_tokens": 0, "output_tokens": 0, "reasoning_tokens": 0, "cost_usd": 0.0}
        return usage


class BridgeAgent:
    """An `Agent` (one `act` per turn) driving a loop-owning agent's `run(session)`."""

    def __init__(self, run: LoopRun, context, *, name: str | None = None):
        self.name = name or getattr(context.model, "name", None) or "loop-agent"
        if not isinstance(self.name, str):
            self.name = "loop-agent"
        self._run = run
        self._requests: asyncio.Queue = asyncio.Queue()
        self.session = ToolSession(context, self._requests)
        self._task: asyncio.Task | None = None
        self._pending: tuple[str, _Call] | None = None     # (tool call id, the call) awaiting its tool message
        self._ended: _Ended | None = None
        self._ids = 0

    async def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> AgentTurn:
        if self._task is None:
            self.session.tools = [dict(t) for t in tools]
            self._task = asyncio.create_task(self._drive())
        else:
            self._answer(messages)
        if self._ended is None:
            event = await self._requests.get()
            if isinstance(event, _Ended):
                self._ended = event
            else:
                return self._turn_for(event)
        return self._final_turn()

    def _answer(self, messages: list[dict[str, Any]]) -> None:
        """Hand the tool message of the pending call back to the agent's loop."""
        if self._pending is None:
            return
        call_id, call = self._pending
        self._pending = None
        content = next((m.get("content") for m in reversed(messages)
                        if m.get("role") == "tool" and m.get("tool_call_id") == call_id), None)
        if not call.answer.done():
            call.answer.set_result(content)

    def _turn_for(self, call: _Call) -> AgentTurn:
        self._ids += 1
        call_id = f"bridge_{self._ids}"
        self._pending = (call_id, call)
        message = tool_call_message(call_id, call.name, {}, thought=call.thought)
        message["tool_calls"][0]["function"]["arguments"] = call.arguments
        usage = self.session.take_usage()
        return AgentTurn(message=message, input_tokens=usage["input_tokens"], output_tokens=usage["output_tokens"],
                         reasoning_tokens=usage["reasoning_tokens"], cost_usd=usage["cost_usd"])

    def _final_turn(self) -> AgentTurn:
        """The loop has returned: its text (or a plain note) as a turn without a tool call, every time asked;
        the episode loop then reminds once and ends the episode (no_tool_call), as for a model."""
        ended = self._ended
        assert ended is not None
        if ended.error is not None:
            if isinstance(ended.error, (AgentError, InfraError)):
                raise ended.error
            raise AgentError(f"the agent's loop raised {describe_exception(ended.error)}")
        text = ended.value if isinstance(ended.value, str) and ended.value else LOOP_ENDED
        return AgentTurn(message={"role": "assistant", "content": text})

    async def _drive(self) -> None:
        try:
            value = await self._run(self.session)
            await self._requests.put(_Ended(value=value))
        except Exception as exc:  # noqa: BLE001 - the user's loop failing is the episode's agent_error
            await self._requests.put(_Ended(error=exc))

    async def aclose(self) -> None:
        """The episode is over: stop the agent's loop (it may be waiting on a call that will not be answered)."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task

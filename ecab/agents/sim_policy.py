"""The agent's reply policy for the simulator (ecab/sim): the heuristic agent behind stateless
chat-completions requests, with the malformed replies the simulator's config asks for.

Whoever starts the simulator for an agent passes `HeuristicPolicy` (`python -m ecab.run model=sim`, the
tests of the LLM path, the throughput benchmark through `python -m ecab.sim`). It answers every request, so
it goes last among the policies.

HTTP is stateless, so every request carries the whole conversation. The policy rebuilds the heuristic
agent's plan by replaying it: the plan is a generator of tool calls, and each call it made is found in the
history (matched by name and arguments) together with its tool result, which is sent back into the plan.
Assistant turns that do not match the plan's next call are the simulator's own injected faults (invalid
JSON, an unknown tool, a text-only answer) and are skipped, so after a fault the plan simply re-issues its
call: the server never has to remember which replies it corrupted.

Replaying from the start costs O(steps) per request, so live plans are also kept in an LRU keyed by the
last assistant message they produced (its unique tool-call id or text); a request that continues that
message resumes the plan where it stopped. A miss (a client retry, an eviction, a restarted server) falls
back to the full replay, which gives the same answer.

Malformed replies (`SimConfig.malformed`: invalid JSON arguments, two tool calls in one turn, no tool call,
an unknown tool) never end an episode on their own: none on recommend_product, and no "no tool call" right
after a turn without one (the episode loop ends an episode at the second text-only turn in a row). They are
drawn per (conversation, step) from sha256 of the seed, the conversation's first user message and the number
of assistant turns so far, so the same episode meets the same faults at any concurrency and in any order.

What real local models do (issue 31, ecab/sim/local_model.py), drawn the same way, each with its own draw,
and, like the faults, never on recommend_product: `repeats` (the previous turn's call again), else
`invented_tools` (a made-up tool name) and/or `invented_ids` (made-up product ids, when the call names
products). A malformed fault, when one is drawn, takes the turn instead. `tool_call_format` (hermes, json,
json_doubled) writes every call as text in `content` after a "Thought:" line, with no native tool_calls. A
client that parses such calls echoes them back as native tool_calls; one that does not echoes the text: the
replay reads a text call in an assistant message without tool_calls as that call (executed when a tool
result follows it before the next assistant turn, else skipped like a fault).
"""
from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from ecab.agents.base import tool_results_in
from ecab.agents.heuristic import HeuristicAgent
from ecab.sim.local_model import (INVENTED_TOOL_NAMES, invent_ids, parsed_arguments, pick, read_text_calls,
                                  turn_draw, write_text_calls)
from ecab.sim.policy import first_user_text
from ecab.sim.server import FAULT_KINDS, SimConfig

Call = tuple[str, dict]
FINAL_TOOL = "recommend_product"         # never faulted: a fault there would change the episode's answer
EXTRA_CALL = "get_user_profile"          # the second call of a two_calls fault
UNKNOWN_TOOL_NAME = "search_catalog"     # plausible, but not one of the 10 tools
LOCAL_BEHAVIOURS = ("repeats", "invented_tools", "invented_ids")   # SimConfig rates, see the module docstring


def message_key(message: dict[str, Any]) -> str | None:
    """A unique handle for an assistant message the simulator wrote: its first call id, else its text."""
    if message.get("role") != "assistant":
        return None
    calls = message.get("tool_calls") or []
    if calls:
        return "call:" + str(calls[0].get("id") or "")
    return "text:" + str(message.get("content") or "")


def _parsed_call(message: dict[str, Any]) -> tuple[str, dict | None, str]:
    """(name, parsed arguments or None, call id) of an assistant message's first tool call."""
    first = (message.get("tool_calls") or [{}])[0]
    function = first.get("function") or {}
    raw = function.get("arguments")
    try:
        arguments = json.loads(raw) if isinstance(raw, str) and raw.strip() else (raw if isinstance(raw, dict) else {})
    except json.JSONDecodeError:
        arguments = None
    return str(function.get("name") or ""), arguments, str(first.get("id") or "")


def _text_call(message: dict[str, Any]) -> tuple[str, dict | None] | None:
    """(name, parsed arguments or None) of the first tool call written in an assistant message's text."""
    calls = read_text_calls(message.get("content") if isinstance(message.get("content"), str) else None)
    if not calls:
        return None
    name, arguments = calls[0]
    return name, parsed_arguments(arguments)


class PlanState:
    """One conversation's heuristic plan and how far into the message list it has read. `text_calls`: also
    read tool calls written in the text of assistant messages that have no native ones."""

    def __init__(self, user_query: str, seed: int = 0, budget: int = 100, text_calls: bool = False):
        self.text_calls = text_calls
        self.agent = HeuristicAgent(SimpleNamespace(user_query=user_query), seed, budget=budget)
        self._plan = self.agent.plan()
        self.pending: Call | None = next(self._plan)   # the call the plan wants to make next
        self.position = 2                               # messages [0, position) have been consumed

    def advance(self, result: Any) -> None:
        try:
            self.pending = self._plan.send(result)
        except StopIteration:
            self.pending = None

    def consume(self, messages: list[dict[str, Any]]) -> None:
        """Read messages[position:]: every assistant call that is the plan's pending call feeds its result."""
        i = self.position
        while i < len(messages):
            message = messages[i]
            if message.get("role") == "assistant" and message.get("tool_calls") and self.pending is not None:
                name, arguments, call_id = _parsed_call(message)
                if (name, arguments) == self.pending:
                    result_index = _find_tool_result(messages, i + 1, call_id)
                    if result_index is None:   # the result is not in this request yet: stop before the call
                        break
                    # What the episode had charged when this result came back, faults included, as the
                    # agent run directly sees it (ScriptedAgent.act).
                    self.agent.calls_spent = tool_results_in(messages[:result_index + 1])
                    self.advance(_json_or_none(messages[result_index].get("content")))
                    i = result_index
            elif message.get("role") == "assistant" and self.text_calls and self.pending is not None \
                    and _text_call(message) == self.pending:
                # A call written as text and echoed back as text: executed if a tool result follows it.
                result_index = _find_tool_result(messages, i + 1, None)
                if result_index is not None:
                    self.agent.calls_spent = tool_results_in(messages[:result_index + 1])
                    self.advance(_json_or_none(messages[result_index].get("content")))
                    i = result_index
            i += 1
        self.position = i


def _find_tool_result(messages: list[dict[str, Any]], start: int, call_id: str | None) -> int | None:
    """The index of the tool result for `call_id` (None: the first tool result) before the next assistant
    turn, or None."""
    for j in range(start, len(messages)):
        message = messages[j]
        if message.get("role") == "tool" and (call_id is None or str(message.get("tool_call_id") or "") == call_id):
            return j
        if message.get("role") == "assistant":
            return None
    return None


def _json_or_none(text: Any) -> Any:
    try:
        return json.loads(text) if isinstance(text, str) else text
    except json.JSONDecodeError:
        return None


@dataclass
class PolicyReply:
    """What the policy wants to say next: a tool call, or (plan exhausted) plain text."""

    call: Call | None
    thought: str
    reasoning: str


class HeuristicPolicy:
    """Maps a chat-completions message list to the heuristic agent's next move, as a tool-calling model
    would send it (with the configured faults). A simulator policy (ecab/sim/policy.py)."""

    def __init__(self, config: SimConfig | None = None, cache_size: int = 20000):
        self.config = config or SimConfig()
        self.cache_size = cache_size
        self.seed = self.config.seed
        self._live: OrderedDict[str, PlanState] = OrderedDict()
        self.replays = 0     # full replays (cache misses), for tests and tuning
        self.resumes = 0
        self.faults = {kind: 0 for kind in FAULT_KINDS}
        self.behaviours = {kind: 0 for kind in LOCAL_BEHAVIOURS}
        self.text_calls = 0  # replies whose call went into the text (tool_call_format not native)
        form = self.config.tool_call_format
        self.text_form: str | None = None if form == "native" else form

    # -- the simulator's policy protocol -------------------------------------------------------------------

    def claims(self, request: dict[str, Any]) -> bool:
        return True          # any conversation: the agent's policy answers what no other policy claims

    def stats(self) -> dict[str, int]:
        return {**{f"fault_{kind}": n for kind, n in self.faults.items()},
                **{f"local_{kind}": n for kind, n in self.behaviours.items()}, "text_calls": self.text_calls,
                "policy_replays": self.replays, "policy_resumes": self.resumes}

    def reply(self, request: dict[str, Any]) -> tuple[dict[str, Any], str]:
        """(assistant message, finish reason): the plan's next call, or text once the plan is finished."""
        messages = request["messages"]
        reply, state = self.next_reply(messages)
        message: dict[str, Any] = {"role": "assistant", "content": reply.thought}
        if self.text_form is None:   # the local servers' models write no separate reasoning
            message["reasoning_content"] = reply.reasoning
        if reply.call is None:
            message["content"] = f"{reply.thought} (ref {uuid.uuid4().hex[:12]})"
            return message, "stop"
        name, arguments = reply.call
        fault = self.pick_fault(messages) if name != FINAL_TOOL else None
        if fault:
            self.faults[fault] += 1
        if fault == "no_tool_call":
            message["content"] = (f"{reply.thought}\nI think I can answer without a tool. "
                                  f"(ref {uuid.uuid4().hex[:12]})")
            self.remember(state, message)
            return message, "stop"
        if fault is None and name != FINAL_TOOL:
            name, arguments = self.misbehave(messages, name, arguments)
        call_name = UNKNOWN_TOOL_NAME if fault == "unknown_tool" else name
        text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
        if fault == "invalid_json":
            text = text[:-1] + ',"'       # a truncated object: json.loads fails
        calls = [(call_name, text)]
        if fault == "two_calls":
            calls.append((EXTRA_CALL, "{}"))
        if self.text_form is not None:
            # As a local model writes it: a Thought line (its ref keeps the message unique, the plan cache's
            # key), then the call(s) as text; arguments that are not valid JSON go as the string they are.
            self.text_calls += 1
            written = [(n, parsed_arguments(t) if parsed_arguments(t) is not None else t) for n, t in calls]
            message["content"] = (f"Thought: I will call {reply.call[0]} next, as my plan says. "
                                  f"(ref {uuid.uuid4().hex[:12]})\n" + write_text_calls(written, self.text_form))
            self.remember(state, message)
            return message, "stop"
        message["tool_calls"] = [_tool_call(n, t) for n, t in calls]
        self.remember(state, message)
        return message, "tool_calls"

    def misbehave(self, messages: list[dict[str, Any]], name: str, arguments: Any) -> tuple[str, Any]:
        """The call a small local model would send instead of the plan's (name, arguments), per the config's
        rates (see the module docstring): the previous turn's call again, else a made-up name and/or made-up
        product ids. Arguments come back as a dict, or as the string a repeated call carried."""
        cfg = self.config
        if cfg.repeats and turn_draw(self.seed, "repeats", messages) < cfg.repeats:
            previous = self.previous_call(messages)
            if previous is not None and previous[0] != FINAL_TOOL:
                self.behaviours["repeats"] += 1
                return previous
        if cfg.invented_tools and turn_draw(self.seed, "invented_tools", messages) < cfg.invented_tools:
            self.behaviours["invented_tools"] += 1
            name = pick(INVENTED_TOOL_NAMES, self.seed, "invented_tools", messages)
        if cfg.invented_ids and turn_draw(self.seed, "invented_ids", messages) < cfg.invented_ids:
            invented = invent_ids(arguments, self.seed, messages) if isinstance(arguments, dict) else None
            if invented is not None:
                self.behaviours["invented_ids"] += 1
                arguments = invented
        return name, arguments

    def previous_call(self, messages: list[dict[str, Any]]) -> tuple[str, Any] | None:
        """The first call of the last assistant turn (native, or written in its text), None if it made none."""
        for message in reversed(messages):
            if message.get("role") != "assistant":
                continue
            if message.get("tool_calls"):
                function = (message["tool_calls"][0] or {}).get("function") or {}
                arguments = function.get("arguments")
                parsed = parsed_arguments(arguments)
                return str(function.get("name") or ""), parsed if parsed is not None else str(arguments or "")
            if self.text_form is not None:
                found = read_text_calls(message.get("content") if isinstance(message.get("content"), str) else None)
                return found[0] if found else None
            return None
        return None

    def pick_fault(self, messages: list[dict[str, Any]]) -> str | None:
        """The fault (or None) for this conversation at this step: the same on every run and at any
        concurrency (see the module docstring); no text-only fault right after a text-only turn."""
        assistant = [m for m in messages if m.get("role") == "assistant"]
        digest = hashlib.sha256("\x1f".join(
            ("fault", str(self.seed), first_user_text(messages), str(len(assistant)))).encode()).digest()
        draw = int.from_bytes(digest[:8], "big") / 2**64
        edge = 0.0
        for kind in FAULT_KINDS:
            edge += float(self.config.malformed.get(kind) or 0.0)
            if draw < edge:
                if kind == "no_tool_call" and assistant and not _made_a_call(messages, assistant[-1]):
                    return None   # a second text-only turn in a row would end the episode
                return kind
        return None

    # -- the plan -----------------------------------------------------------------------------------------

    def next_reply(self, messages: list[dict[str, Any]]) -> tuple[PolicyReply, PlanState]:
        state = self._resume(messages)
        if state is None:
            self.replays += 1
            state = PlanState(_user_query(messages), self.seed, _budget(messages),
                              text_calls=self.text_form is not None)
        else:
            self.resumes += 1
        state.consume(messages)
        state.position = len(messages)
        if state.pending is None:
            return PolicyReply(None, "Thought: I have nothing more to do.", "The plan is finished."), state
        name, _ = state.pending
        return PolicyReply(state.pending, f"Thought:\n- Plan: call {name} next, as my plan says.",
                           f"Following the heuristic plan; next step is {name}."), state

    def remember(self, state: PlanState, emitted: dict[str, Any]) -> None:
        """Keep the plan under the key of the message just sent, so the next request can resume it."""
        key = message_key(emitted)
        if key is None:
            return
        self._live[key] = state
        self._live.move_to_end(key)
        while len(self._live) > self.cache_size:
            self._live.popitem(last=False)

    def _resume(self, messages: list[dict[str, Any]]) -> PlanState | None:
        for i in range(len(messages) - 1, 1, -1):
            if messages[i].get("role") == "assistant":
                state = self._live.pop(message_key(messages[i]) or "", None)
                if state is not None and state.position == i:
                    return state
                return None
        return None


def _made_a_call(messages: list[dict[str, Any]], message: dict[str, Any]) -> bool:
    """Whether an assistant turn counted as a tool call for the episode loop: it has native tool_calls, or a
    tool result follows it (a call written as text that the client parsed and executed)."""
    if message.get("tool_calls"):
        return True
    at = next((i for i, m in enumerate(messages) if m is message), None)
    return at is not None and at + 1 < len(messages) and messages[at + 1].get("role") == "tool"


def _user_query(messages: list[dict[str, Any]]) -> str:
    for message in messages:
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):   # content parts
                return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
            return str(content or "")
    return ""


# The heuristic scales its plan to the episode's budget; a chat request carries it only in the system prompt
# (ecab/env/agent_protocol.py::SYSTEM_PROMPT_TEMPLATE: "You have a limited of {budget} steps").
_BUDGET_IN_PROMPT = re.compile(r"limited of (\d+) steps")
DEFAULT_BUDGET = 100


def _budget(messages: list[dict[str, Any]]) -> int:
    """The episode's budget as the system prompt states it; DEFAULT_BUDGET when it does not."""
    for message in messages:
        if message.get("role") == "system":
            found = _BUDGET_IN_PROMPT.search(str(message.get("content") or ""))
            if found:
                return int(found.group(1))
    return DEFAULT_BUDGET


def new_call_id() -> str:
    return "call_" + uuid.uuid4().hex[:24]


def _tool_call(name: str, arguments: str) -> dict[str, Any]:
    return {"id": new_call_id(), "type": "function", "function": {"name": name, "arguments": arguments}}

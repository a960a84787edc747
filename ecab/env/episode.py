"""The step loop of one episode (docs/original-harness.md §3.2), shared by every agent.

Faithful to the original where it defines the score: one executed tool call per turn (extra calls get the
original's error reminder), a no-tool turn gets a reminder and a second one in a row ends the episode,
recommend_product ends it even with an invalid id, and the tool error results are the original's.
Where the original was vague ecab is explicit: `budget` caps executed tool calls (not LLM turns), the
termination reason is recorded, and a last-call warning can be switched on (`final_warning`, off by
default because the original gives none and it changes what a score means).
"""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any, Callable

from ecab.env.agent_protocol import Agent, AgentError, InfraError, add_cost, system_prompt
from ecab.schema import Step, Task, Trajectory

NO_TOOL_REMINDER = ("Do not answer directly. Continue by calling a tool if more evidence is needed, or call "
                    "recommend_product if you are ready to finish.")
MULTI_CALL_ERROR = ("Error: only one tool call is allowed per assistant turn. You called multiple tools in one "
                    "turn. Continue with exactly one tool call.")
FINAL_WARNING = "You have one tool call left. Call recommend_product now with your best candidate."


@dataclass
class EpisodeSettings:
    budget: int = 100                 # maximum executed tool calls
    final_warning: bool = False
    wall_clock_s: float | None = None  # per-episode limit; exceeded -> infra_error


async def run_episode(task: Task, agent: Agent, toolbox, settings: EpisodeSettings, *,
                      unit: dict[str, Any] | None = None,
                      on_turn: Callable[[Trajectory], None] | None = None) -> Trajectory:
    """Run one episode to its end and return its record. Never raises for agent or tool trouble.
    `on_turn`, when given, is called on the loop after every turn that does not end the episode, with the
    record so far (the live object: copy what you keep; the runners checkpoint it, ecab/runner/episode.py)."""
    traj = Trajectory(id=task.id, intent_category=task.intent_category, user_query=task.user_query,
                      model=getattr(agent, "name", "agent"), unit=dict(unit or {}))
    started = time.perf_counter()
    try:
        if settings.wall_clock_s:
            await asyncio.wait_for(_loop(task, agent, toolbox, settings, traj, on_turn), settings.wall_clock_s)
        else:
            await _loop(task, agent, toolbox, settings, traj, on_turn)
    except asyncio.TimeoutError:
        _fail(traj, "infra_error", f"episode exceeded its wall-clock limit of {settings.wall_clock_s} s")
    except AgentError as exc:
        _fail(traj, "agent_error", str(exc))
    except InfraError as exc:
        _fail(traj, "infra_error", str(exc))
    finally:
        await _close(agent)
    traj.wall_s = round(time.perf_counter() - started, 4)
    traj.revealed_slots = [s.revealed_slot for s in traj.steps if s.revealed_slot]
    traj.tool_errors = sum(1 for s in traj.steps if s.is_error)
    return traj


async def _close(agent: Agent) -> None:
    """Let an agent that holds something for the episode release it (a loop-owning agent's task,
    agents/bridge.py); agents without `aclose` hold nothing."""
    close = getattr(agent, "aclose", None)
    if close is not None:
        await close()


def _fail(traj: Trajectory, termination: str, message: str) -> None:
    traj.termination, traj.error, traj.finished = termination, message, False
    traj.predicted_product_id = None


async def _loop(task: Task, agent: Agent, toolbox, settings: EpisodeSettings, traj: Trajectory,
                on_turn: Callable[[Trajectory], None] | None = None) -> None:
    history: list[dict[str, Any]] = [{"role": "system", "content": system_prompt(settings.budget)},
                                     {"role": "user", "content": task.user_query}]
    traj.trajectory = [dict(m) for m in history]
    schemas = toolbox.schemas()
    reminded = False
    turn = 0
    usage = traj.usage = {"input_tokens": 0, "output_tokens": 0, "reasoning_tokens": 0, "cost_usd": 0.0,
                          "retries": 0}
    while traj.total_tool_calls < settings.budget:
        turn += 1
        try:
            reply = await agent.act(history, schemas)
        except (AgentError, InfraError) as exc:
            _record_failed_turn(traj, usage, turn, exc)
            raise
        _account(usage, reply)
        message = _clean_assistant(reply.message)
        if reply.reasoning_trace:
            for entry in reply.reasoning_trace:
                entry.setdefault("step", turn)
            traj.reasoning_trace.extend(reply.reasoning_trace)
        calls = message.get("tool_calls") or []
        step = Step(index=turn, agent_latency_s=round(reply.latency_s, 6), input_tokens=reply.input_tokens,
                    output_tokens=reply.output_tokens, reasoning_tokens=reply.reasoning_tokens,
                    retries=reply.retries)
        if not calls:
            history.append(message)
            traj.trajectory.append(message)
            traj.steps.append(step)
            if reminded:  # two no-tool turns in a row: the original stops here, with no prediction
                traj.reasoning, traj.finished, traj.termination = message.get("content") or "", True, "no_tool_call"
                return
            reminded = True
            _say(history, traj, NO_TOOL_REMINDER)
            if on_turn is not None:
                on_turn(traj)
            continue
        reminded = False
        first = calls[0]
        history.append(_for_endpoint({**message, "tool_calls": [first]}))
        traj.trajectory.append(message)  # the record keeps every call the model emitted
        name = (first.get("function") or {}).get("name", "")
        arguments = (first.get("function") or {}).get("arguments") or ""
        if first.get("parse_error"):   # a call written as text that could not be read: not run (_unreadable_call)
            result = _unreadable_call(toolbox, name, first["parse_error"])
        else:
            result = await toolbox.call(name, arguments)
        traj.total_tool_calls += 1
        if result.arguments is not None:  # like the original: counted only after the JSON parsed
            traj.ask_user_calls += name == "ask_user"
            traj.get_profile_calls += name == "get_user_profile"
        tool_message = {"role": "tool", "tool_call_id": first.get("id") or "", "content": result.content_json}
        history.append(tool_message)
        traj.trajectory.append(tool_message)
        step.call_index, step.tool = traj.total_tool_calls, name
        if first.get("parse_error") and not name:
            step.tool = None  # no name could be read: keyed under no tool (see _unreadable_call)
        step.arguments = result.arguments if result.arguments is not None else arguments
        step.is_error = result.is_error
        step.error = str(result.content.get("error")) if result.is_error else None
        step.extra_calls, step.tool_latency_s = len(calls) - 1, round(result.latency_s, 6)
        step.revealed_slot, step.result_ids = result.revealed_slot_id, result_ids(result.content)
        if result.sandbox_timing is not None:
            step.sandbox_queued_s, step.sandbox_run_s = result.sandbox_timing
        traj.steps.append(step)
        if len(calls) > 1:
            _say(history, traj, MULTI_CALL_ERROR)
        if result.terminal:
            _finish(traj, result)
            return
        if settings.final_warning and traj.total_tool_calls == settings.budget - 1:
            _say(history, traj, FINAL_WARNING)
        if on_turn is not None:
            on_turn(traj)
    traj.termination = "budget_exhausted"


def result_ids(content: dict[str, Any]) -> list[str]:
    """Product ids a tool returned (search, store listing, filter, review search), for the analyses."""
    if isinstance(content.get("product_ids"), list):
        return [str(p) for p in content["product_ids"]]
    rows = content.get("products") if isinstance(content.get("products"), list) else content.get("reviews")
    if isinstance(rows, list):
        return [str(r.get("product_id")) for r in rows if isinstance(r, dict) and r.get("product_id")]
    return []


def _finish(traj: Trajectory, result) -> None:
    traj.finished = True
    traj.recommended_id = result.recommended_id
    traj.recommend_call_index = traj.total_tool_calls
    traj.reasoning = (result.arguments or {}).get("reasoning", "") if isinstance(result.arguments, dict) else ""
    if result.valid_recommendation:
        traj.predicted_product_id, traj.termination = result.recommended_id, "recommended"
    else:
        traj.termination = "invalid_recommendation"


def _say(history: list[dict], traj: Trajectory, text: str) -> None:
    message = {"role": "user", "content": text}
    history.append(message)
    traj.trajectory.append(dict(message))


def _clean_assistant(message: dict[str, Any]) -> dict[str, Any]:
    """The assistant message as it goes back into the history: role, content, tool calls only."""
    out = {"role": "assistant", "content": message.get("content") or ""}
    if message.get("tool_calls"):
        out["tool_calls"] = message["tool_calls"]
    for key, value in message.items():  # provider extras the next request must echo (reasoning details)
        if key not in out and key != "role":
            out[key] = value
    return out


def _for_endpoint(message: dict[str, Any]) -> dict[str, Any]:
    """The assistant message as the next request sends it: the record's marks of calls read from text
    (`tool_calls_parsed_from`, a call's `parse_error`) stay in traj.trajectory only."""
    out = {k: v for k, v in message.items() if k != "tool_calls_parsed_from"}
    if out.get("tool_calls"):
        out["tool_calls"] = [{k: v for k, v in call.items() if k != "parse_error"} for call in out["tool_calls"]]
    return out


def _unreadable_call(toolbox, name: str, parse_error: str):
    """The result of a call the model wrote as text that could not be read (llm/tool_text.py), recorded like an
    executed call that failed, without running it: it costs one call of the budget, as a native call whose
    arguments JSON does not parse does, and the model gets `{"error": <what is wrong, what to write>}` in the
    tool message, the shape of every tool error. The step's `tool` is the name when it could be read (so the
    per-tool analyses count it as that tool's error, like a native call with bad arguments, and a read
    recommend_product ends the episode as invalid_recommendation, as the native one does), and None when no
    name could be read: the per-tool tables (reduce/interaction.py, reduce/usage.py) then key no invented ""
    tool, while the step's call_index, is_error and error still count it against the budget and in
    traj.tool_errors."""
    from ecab.env.tools import ToolResult

    tool = getattr(toolbox, "tools", {}).get(name) if name else None
    return ToolResult(name, None, {"error": parse_error}, is_error=True, terminal=bool(tool and tool.terminal),
                      error_kind="unreadable_call")


def _record_failed_turn(traj: Trajectory, usage: dict[str, Any], turn: int, exc: Exception) -> None:
    """The retries of a turn that failed for good (`exc.retry_entries`, set by the LLM agent) go into the
    record like a finished turn's: usage.retries and `retry` entries of the reasoning trace, so the
    episode's retry count is every retry made, not only those of the turns that got an answer."""
    entries = list(getattr(exc, "retry_entries", None) or [])
    usage["retries"] += len(entries)
    traj.reasoning_trace.extend({"type": "retry", **entry, "step": turn} for entry in entries)


def _account(usage: dict[str, Any], reply) -> None:
    usage["input_tokens"] += reply.input_tokens
    usage["output_tokens"] += reply.output_tokens
    usage["reasoning_tokens"] += reply.reasoning_tokens
    usage["cost_usd"] = add_cost(usage["cost_usd"], reply.cost_usd)   # None once a reply's cost is unknown
    usage["retries"] += reply.retries

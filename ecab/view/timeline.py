"""One episode's timeline: the recorded chat messages and ecab's per-step records merged into one entry per
model turn, with what each step taught the agent marked (docs/architecture.md §2, item 5).

A trajectory keeps two views of an episode. `trajectory` is the original's message list: the system prompt,
the query, then per turn the assistant message (all the tool calls it emitted), the tool result of the
first call, and any note the harness said back (a reminder after a tool-less turn, the one-call rule, the
final warning). `steps` has one record per turn (turn number, call index, tool, parsed arguments, latency,
tokens, retries, the slot an ask_user revealed). The k-th assistant message is the k-th step, the rule
env/episode.py writes them by, so the two are zipped in order; an episode recorded without messages falls
back to its steps alone.
"""
from __future__ import annotations

from typing import Any

from ecab.schema import Task, Trajectory

PROFILE_TOOL = "get_user_profile"
ASK_TOOL = "ask_user"
SEARCH_TOOL = "search_products"


def _message_turns(messages: list[dict[str, Any]]) -> tuple[str | None, list[dict[str, Any]], list[str]]:
    """(system prompt, one dict per assistant message with its tool result and notes, notes before the first
    turn). The first user message is the query, shown from the task, so it is skipped here."""
    system, turns, preface = None, [], []
    query_seen = False
    for message in messages:
        role, content = message.get("role"), message.get("content")
        text = content if isinstance(content, str) else ("" if content is None else str(content))
        if role == "system" and system is None and not turns:
            system = text
        elif role == "user" and not query_seen and not turns:
            query_seen = True
        elif role == "assistant":
            turns.append({"message": text, "calls": message.get("tool_calls") or [], "result": None, "notes": []})
        elif role == "tool" and turns and turns[-1]["result"] is None:
            turns[-1]["result"] = text
        elif turns:
            turns[-1]["notes"].append(text)
        else:
            preface.append(text)
    return system, turns, preface


def _call_summary(call: dict[str, Any]) -> dict[str, Any]:
    function = call.get("function") or {}
    return {"tool": function.get("name") or "", "arguments": function.get("arguments")}


def _trace_by_turn(traj: Trajectory) -> dict[int, list[dict[str, Any]]]:
    by_turn: dict[int, list[dict[str, Any]]] = {}
    for entry in traj.reasoning_trace or []:
        if isinstance(entry, dict):
            step = entry.get("step")
            by_turn.setdefault(step if isinstance(step, int) else 0, []).append(entry)
    return by_turn


def _reasoning_text(entry: dict[str, Any]) -> str:
    raw = entry.get("raw_reasoning")
    if isinstance(raw, str) and raw:
        return raw
    details = entry.get("details")
    return "" if details is None else str(details)


def _marks(task: Task | None, tool: str | None, revealed: str | None, is_error: bool) -> dict[str, Any]:
    """What this step taught the agent: a profile read carries the task's persona rubrics, a revealing
    ask_user carries the rubrics linked to its slot."""
    if task is None or is_error:
        return {}
    if tool == PROFILE_TOOL:
        return {"profile": [r.id for r in task.rubrics if r.info_source == "persona"]}
    if tool == ASK_TOOL and revealed:
        slot = next((s for s in task.clarification_script.clarification_slots if s.slot_id == revealed), None)
        return {"reveal": {"slot": revealed, "rubrics": list(slot.linked_rubric_ids) if slot else []}}
    return {}


def build_timeline(traj: Trajectory, task: Task | None) -> dict[str, Any]:
    """{"system", "preface", "steps"}: one entry per model turn, in order."""
    system, turns, preface = _message_turns(traj.trajectory or [])
    steps = list(traj.steps or [])
    trace = _trace_by_turn(traj)
    entries = []
    count = max(len(turns), len(steps))
    for k in range(count):
        turn = turns[k] if k < len(turns) else None
        step = steps[k] if k < len(steps) else None
        number = step.index if step is not None and step.index else k + 1
        calls = [_call_summary(c) for c in (turn["calls"] if turn else [])]
        tool = step.tool if step is not None else (calls[0]["tool"] if calls else None)
        arguments = step.arguments if step is not None and step.tool is not None else (
            calls[0]["arguments"] if calls else None)
        revealed = step.revealed_slot if step is not None else None
        is_error = bool(step.is_error) if step is not None else False
        notes = turn["notes"] if turn else []
        entry: dict[str, Any] = {
            "turn": number,
            "call": step.call_index if step is not None else 0,
            "tool": tool,
            "arguments": arguments,
            "message": turn["message"] if turn else "",
            "result": turn["result"] if turn else None,
            "is_error": is_error,
            "error": step.error if step is not None else None,
            "extra_calls": calls[1:] if len(calls) > 1 else [],
            "agent_s": step.agent_latency_s if step is not None else None,
            "tool_s": step.tool_latency_s if step is not None and step.tool is not None else None,
            "tokens": [step.input_tokens, step.output_tokens, step.reasoning_tokens] if step is not None else None,
            "retries": step.retries if step is not None else 0,
            "retry_log": [{k: v for k, v in e.items() if k not in ("type", "step")}
                          for e in trace.get(number, []) if e.get("type") == "retry"],
            "reasoning": "\n\n".join(t for e in trace.get(number, []) if e.get("type") == "reasoning"
                                     for t in [_reasoning_text(e)] if t),
            "notes": notes,
            **_marks(task, tool, revealed, is_error),
        }
        entries.append({k: v for k, v in entry.items() if v not in (None, "", [], {}) or k in ("turn", "call")})
    return {"system": system, "preface": preface, "steps": entries}


def _first(steps: list[dict[str, Any]], matches) -> dict[str, Any] | None:
    return next((s for s in steps if matches(s) and not s.get("is_error")), None)


def where_learned(task: Task, rubric_source: str, rubric_id: str, steps: list[dict[str, Any]]) -> dict[str, Any]:
    """Where the agent could have learned a rubric's requirement, and the step where it consulted that source
    (`call` and `turn`, the page's jump target; None: never consulted): the query (the first search, which
    acted on it), the profile (the first get_user_profile read), a clarification slot (the ask_user call
    that revealed it; never: the slot's trigger words were not asked about)."""
    if rubric_source == "persona":
        step = _first(steps, lambda s: s.get("tool") == PROFILE_TOOL)
        where: dict[str, Any] = {"where": "profile"}
    elif rubric_source == "clarification":
        slot = next((s for s in task.clarification_script.clarification_slots if rubric_id in s.linked_rubric_ids),
                    None)
        step = None if slot is None else _first(steps, lambda s: (s.get("reveal") or {}).get("slot") == slot.slot_id)
        where = {"where": "clarification", "slot": slot.slot_id if slot else None}
    else:
        step = _first(steps, lambda s: s.get("tool") == SEARCH_TOOL)
        where = {"where": rubric_source or "query"}
    return {**where, "call": step["call"] if step else None, "turn": step["turn"] if step else None}

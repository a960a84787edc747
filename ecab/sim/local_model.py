"""What real small models served locally (llama.cpp's `llama-server --jinja` and the like) send, so the
simulator can send it too (issue 31).

Seen in real trajectories of Qwen2.5-Coder 0.5B/1.5B: tool calls written as text in `content` instead of
native `tool_calls` (a bare JSON object `{"name": ..., "arguments": {...}}` after a "Thought:" paragraph, the
same with doubled braces `{{ ... }}` from a broken chat template, Hermes `<tool_call>{json}</tool_call>`,
several objects in one message), invented tool names, invented product ids, the same call repeated turn after
turn, replies padded with newlines up to the output-token cap, turns taking minutes.

This module holds the pieces the simulator's server and the agent's policy (ecab.agents.sim_policy) share:
- the text forms of a tool call (`write_text_calls`) and a lenient reader of them (`read_text_calls`);
- `turn_draw`: a number in [0, 1) per (seed, behaviour, conversation, step), so a behaviour injected at some
  rate meets the same turns of the same episode on every run, at any concurrency and in any order;
- `ReplayPolicy` (`SimConfig.replay`): answers the n-th assistant turn of a conversation with the n-th
  assistant message of a recorded ecab trajectory.
"""
from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path
from typing import Any

from ecab.llm.tool_text import calls_from_text
from ecab.sim.policy import first_user_text

TEXT_FORMATS = ("hermes", "json", "json_doubled")
TOOL_CALL_FORMATS = ("native", *TEXT_FORMATS)
# Names the real models invented (search_catalog, get_product_info) and the like.
INVENTED_TOOL_NAMES = ("search_catalog", "get_product_info", "find_products", "product_search",
                       "get_reviews")
# Product ids the real models invented.
INVENTED_PRODUCT_IDS = ("12345", "987654321", "67890", "54321", "P001")


def assistant_turns(messages: list[dict[str, Any]]) -> int:
    return sum(1 for m in messages if m.get("role") == "assistant")


def turn_digest(seed: int, kind: str, messages: list[dict[str, Any]]) -> bytes:
    """sha256 of the seed, the behaviour, the conversation's first user message and its assistant turns so far."""
    return hashlib.sha256("\x1f".join((kind, str(seed), first_user_text(messages),
                                       str(assistant_turns(messages)))).encode()).digest()


def turn_draw(seed: int, kind: str, messages: list[dict[str, Any]]) -> float:
    """A number in [0, 1) for this behaviour at this step of this conversation (see the module docstring)."""
    return int.from_bytes(turn_digest(seed, kind, messages)[:8], "big") / 2**64


def pick(options: tuple[str, ...], seed: int, kind: str, messages: list[dict[str, Any]]) -> str:
    """One of `options`, drawn like `turn_draw` (independently of it)."""
    return options[int.from_bytes(turn_digest(seed, kind + ":pick", messages)[8:16], "big") % len(options)]


# ------------------------------------------------------------------------------------- text tool calls

def write_text_calls(calls: list[tuple[str, Any]], form: str) -> str:
    """Tool calls (name, arguments: a dict, or a string sent as it is) as a local model writes them in its
    text: one per line, as a bare JSON object, the same with doubled outer braces, or Hermes tags."""
    out = []
    for name, arguments in calls:
        text = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
        if form == "json_doubled":
            text = "{" + text + "}"
        elif form == "hermes":
            text = f"<tool_call>\n{text}\n</tool_call>"
        elif form != "json":
            raise ValueError(f"not a text tool-call format: {form!r}; known: {list(TEXT_FORMATS)}")
        out.append(text)
    return "\n".join(out)


def read_text_calls(text: str | None) -> list[tuple[str, Any]]:
    """The tool calls written in a message's text, in order, in any of the text forms (bare JSON objects,
    doubled braces, Hermes tags), read as the agent reads them (ecab/llm/tool_text.py, whose json format finds
    objects inside tags too): (name, arguments: a dict, or the call's raw text when it could not be read).
    Text that holds none gives []."""
    if not text or "{" not in text:
        return []
    return [(call.name, json.loads(call.arguments) if call.error is None else call.arguments)
            for call in calls_from_text(text, "json").calls if call.name]


def parsed_arguments(arguments: Any) -> dict | None:
    """A call's arguments as a dict (a JSON string parsed), None when they are not a JSON object."""
    if isinstance(arguments, dict):
        return arguments
    if isinstance(arguments, str):
        if not arguments.strip():
            return {}
        try:
            value = json.loads(arguments)
        except json.JSONDecodeError:
            return None
        return value if isinstance(value, dict) else None
    return None


def invent_ids(arguments: dict, seed: int, messages: list[dict[str, Any]]) -> dict | None:
    """The arguments with their product ids (product_id, product_ids) replaced by invented ones; None when
    they name no product."""
    if not isinstance(arguments.get("product_id"), str) and not isinstance(arguments.get("product_ids"), list):
        return None
    first = INVENTED_PRODUCT_IDS.index(pick(INVENTED_PRODUCT_IDS, seed, "invented_ids", messages))
    out = dict(arguments)
    if isinstance(out.get("product_id"), str):
        out["product_id"] = INVENTED_PRODUCT_IDS[first]
    if isinstance(out.get("product_ids"), list):
        out["product_ids"] = [INVENTED_PRODUCT_IDS[(first + k) % len(INVENTED_PRODUCT_IDS)]
                              for k in range(max(1, len(out["product_ids"])))]
    return out


# ------------------------------------------------------------------------------------------------ replay

def load_trajectories(path: str | Path) -> list[dict[str, Any]]:
    """The ecab trajectories (one JSON object a line, with `trajectory`: the messages) of a gzip or plain
    JSONL file; lines without a message list are skipped. ValueError when none is left."""
    path = Path(path)
    with path.open("rb") as f:
        gzipped = f.read(2) == b"\x1f\x8b"
    opener = gzip.open if gzipped else open
    records = []
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            record = json.loads(line)
            if isinstance(record, dict) and isinstance(record.get("trajectory"), list):
                records.append(record)
    if not records:
        raise ValueError(f"model.sim.replay: {path} holds no ecab trajectory (a JSON line with a 'trajectory' list)")
    return records


class ReplayPolicy:
    """Answers the n-th assistant turn of a conversation with the n-th assistant message of a recorded
    trajectory (`SimConfig.replay`), content and tool_calls exactly as recorded.

    The trajectory: the one whose first user message is the conversation's, else one picked by the hash of
    the seed and the conversation's first user message (the same conversation always gets the same one).
    When the recorded turns run out, the last recorded assistant message is sent again (as the real models
    did: they repeat), its call ids suffixed `-again<k>` so that no id comes twice; the episode loop then
    ends the episode as it would the real model's (two text-only turns, or the budget).
    Claims every request: a server replaying a file answers nothing else."""

    def __init__(self, config: Any):
        self.seed = int(getattr(config, "seed", 0))
        self.records = load_trajectories(config.replay)
        self.turns = [[_as_recorded(m) for m in r["trajectory"] if m.get("role") == "assistant"]
                      for r in self.records]
        self.by_query: dict[str, int] = {}
        for i, record in enumerate(self.records):
            self.by_query.setdefault(first_user_text(record["trajectory"]), i)
        self.counts = {"replay_turns": 0, "replay_past_end": 0}

    def claims(self, request: dict[str, Any]) -> bool:
        return True

    def stats(self) -> dict[str, int]:
        return dict(self.counts)

    def trajectory_for(self, messages: list[dict[str, Any]]) -> int:
        query = first_user_text(messages)
        if query in self.by_query:
            return self.by_query[query]
        digest = hashlib.sha256("\x1f".join(("replay", str(self.seed), query)).encode()).digest()
        return int.from_bytes(digest[:8], "big") % len(self.records)

    def reply(self, request: dict[str, Any]) -> tuple[dict[str, Any], str]:
        messages = request["messages"]
        turns = self.turns[self.trajectory_for(messages)]
        n = assistant_turns(messages)
        if not turns:
            message: dict[str, Any] = {"role": "assistant", "content": ""}
        elif n < len(turns):
            self.counts["replay_turns"] += 1
            message = json.loads(json.dumps(turns[n]))
        else:
            self.counts["replay_past_end"] += 1
            message = json.loads(json.dumps(turns[-1]))
            for call in message.get("tool_calls") or []:
                call["id"] = f"{call.get('id') or 'call'}-again{n - len(turns) + 1}"
        return message, "tool_calls" if message.get("tool_calls") else "stop"


def _as_recorded(message: dict[str, Any]) -> dict[str, Any]:
    """A recorded assistant message as it is sent: its own keys, role first, content always present."""
    out = {"role": "assistant", "content": message.get("content")}
    out.update({k: v for k, v in message.items() if k not in ("role", "content")})
    return out

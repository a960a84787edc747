"""Episode records: one executed tool call (Step) and one episode (Trajectory)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from ecab.schema.record import Record, parse_list

TERMINATIONS = ("recommended", "invalid_recommendation", "budget_exhausted", "no_tool_call", "agent_error",
                "infra_error")


@dataclass
class Step(Record):
    """One executed tool call (or a no-tool turn) of an episode, for analysis.

    `call_index` counts executed tool calls (1-based; 0 for a no-tool turn), which is what the budget caps.
    """

    index: int = 0                      # LLM turn number, 1-based
    call_index: int = 0
    tool: str | None = None
    arguments: Any = None               # the parsed arguments, or the raw string when it was not JSON
    is_error: bool = False
    error: str | None = None
    extra_calls: int = 0                # tool calls beyond the first in that turn (not executed)
    tool_latency_s: float = 0.0
    agent_latency_s: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    retries: int = 0
    revealed_slot: str | None = None    # ask_user: the slot this question revealed
    result_ids: list[str] = field(default_factory=list)   # product ids a search-like tool returned
    # python_execute: of tool_latency_s, the wait for a sandbox slot and the run (ecab/env/sandbox_queue.py)
    sandbox_queued_s: float | None = None
    sandbox_run_s: float | None = None

    OMIT_IF_NONE: ClassVar[tuple[str, ...]] = ("sandbox_queued_s", "sandbox_run_s")


@dataclass
class Trajectory(Record):
    """One episode: the original's predictions line (docs/original-harness.md §3.3) followed by ecab's own fields."""

    # -- the original predictions line
    id: str = ""
    intent_category: str = ""
    user_query: str = ""
    predicted_product_id: str | None = None
    reasoning: str = ""
    trajectory: list[dict[str, Any]] = field(default_factory=list)
    reasoning_trace: list[dict[str, Any]] = field(default_factory=list)
    model: str = ""
    total_tool_calls: int = 0
    ask_user_calls: int = 0
    get_profile_calls: int = 0
    finished: bool = False
    error: str | None = None
    # -- ecab
    unit: dict[str, Any] = field(default_factory=dict)      # task_id, model, budget, seed, trial
    termination: str = "budget_exhausted"
    recommended_id: str | None = None                       # what was recommended, valid or not
    recommend_call_index: int | None = None                 # executed calls when recommend_product ran
    steps: list[Step] = field(default_factory=list)
    tool_errors: int = 0
    revealed_slots: list[str] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)     # input/output/reasoning tokens, cost_usd
    wall_s: float = 0.0
    attempts: int = 1                                       # episode-level re-runs after infra errors

    OMIT_IF_NONE: ClassVar[tuple[str, ...]] = ("error",)

    @classmethod
    def _parse_field(cls, key, value, where):
        return parse_list(value, Step, where) if key == "steps" else value

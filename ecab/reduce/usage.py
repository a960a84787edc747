"""What the episodes used: the agents' tokens and cost (and the LLM judge's), latencies and LLM retries,
and tool errors."""
from __future__ import annotations

from collections import Counter
from typing import Any, Sequence

from ecab.reduce.episodes import Episode, evaluated_episodes
from ecab.reduce.interaction import tool_label
from ecab.reduce.rates import rate, round4, spread
from ecab.schema import Trajectory

TOKEN_KEYS = ("input_tokens", "output_tokens", "reasoning_tokens")
JUDGE_USAGE_KEYS = ("calls", "cache_hits", "input_tokens", "output_tokens", "cost_usd")


# ---------------------------------------------------------------------------------------------------------
# Tokens and cost
# ---------------------------------------------------------------------------------------------------------

def episode_usage(traj: Trajectory) -> dict[str, float | None]:
    """Tokens and cost of one episode: `usage` when recorded, else the per-step token counts. The cost is None
    when the trajectory records it as unknown (`cost_usd: null`: a model without a price table), 0 when absent."""
    usage: dict[str, float | None] = {
        k: float((traj.usage.get(k) if k in traj.usage else sum(getattr(s, k) for s in traj.steps)) or 0)
        for k in TOKEN_KEYS}
    cost = traj.usage.get("cost_usd", 0.0) if traj.usage else 0.0
    usage["cost_usd"] = None if cost is None else float(cost or 0)
    return usage


def _usage_totals(usages: Sequence[dict[str, Any]], keys: Sequence[str]) -> dict[str, Any]:
    """{episodes, total, mean_per_episode} of per-episode usage dicts (cost in USD to 6 decimals). A cost of
    None in any of them (unknown) makes the total and the mean None: an unknown cost is never summed as $0."""
    totals: dict[str, float | None] = {k: 0.0 for k in keys}
    for usage in usages:
        for k in keys:
            value = usage.get(k)
            if k == "cost_usd" and k in usage and value is None:
                totals[k] = None
            elif totals[k] is not None:
                totals[k] = (totals[k] or 0.0) + float(value or 0)
    n = len(usages)

    def total(k: str, v: float | None) -> float | int | None:
        return None if v is None else round(v, 6) if k == "cost_usd" else int(v)

    def mean(k: str, v: float | None) -> float | None:
        if v is None:
            return None
        return (round(v / n, 6) if k == "cost_usd" else round4(v / n)) if n else 0.0
    return {"episodes": n, "total": {k: total(k, v) for k, v in totals.items()},
            "mean_per_episode": {k: mean(k, v) for k, v in totals.items()}}


def episode_model(e: Episode) -> str:
    return str(e.traj.unit.get("model") or e.traj.model or "(unknown)")


def tokens_and_cost(episodes: Sequence[Episode]) -> dict[str, Any]:
    """The agents' tokens and cost (all episodes, and per model), and what the LLM judge cost: its
    `judge_usage` per judgement (absent for the rules judge, which costs nothing)."""
    keys = (*TOKEN_KEYS, "cost_usd")
    out = _usage_totals([episode_usage(e.traj) for e in episodes], keys)
    models = sorted({episode_model(e) for e in episodes})
    out["by_model"] = {m: _usage_totals([episode_usage(e.traj) for e in episodes if episode_model(e) == m], keys)
                       for m in models}
    judged = [e.judgement.extras["judge_usage"] for e in episodes
              if e.judgement is not None and isinstance(e.judgement.extras.get("judge_usage"), dict)]
    out["judge"] = _usage_totals(judged, JUDGE_USAGE_KEYS)
    if out["total"]["cost_usd"] is None:     # an episode recorded its cost as unknown (no price table)
        out["cost"] = COST_UNPRICED
    return out


COST_UNPRICED = ("unknown: some episodes' model had no price table, so their cost is unknown "
                 "(model.price_per_million.input=..., output=... gives one)")
COST_UNKNOWN = ("unknown: the agent's endpoint or model id differs from its YAML and no prices were given "
                "(model.price_per_million.input=..., output=...)")


def mark_cost_unknown(section: dict[str, Any]) -> dict[str, Any]:
    """The agents' cost as unknown (None, with the reason) when the run had no price table for them
    (manifest `agent_prices: unknown`, docs/decisions.md#run-names): $0 would read as free. The judge's cost
    stays, it is priced separately."""
    def unknown(usage: dict[str, Any]) -> None:
        for part in ("total", "mean_per_episode"):
            if isinstance(usage.get(part), dict) and "cost_usd" in usage[part]:
                usage[part]["cost_usd"] = None
    unknown(section)
    for usage in (section.get("by_model") or {}).values():
        unknown(usage)
    section["cost"] = COST_UNKNOWN
    return section


# ---------------------------------------------------------------------------------------------------------
# Latency, retries and tool errors
# ---------------------------------------------------------------------------------------------------------

def episode_retries(traj: Trajectory) -> int:
    """LLM retries of one episode: `usage.retries` when recorded (every retry, those of a turn that failed
    for good included), else the per-step counts."""
    if "retries" in (traj.usage or {}):
        return int(traj.usage.get("retries") or 0)
    return sum(s.retries for s in traj.steps)


def latency_section(episodes: Sequence[Episode]) -> dict[str, Any]:
    """Latencies of evaluated episodes; `llm_retries` counts every episode's retries (runtime errors too:
    their retries are usually why they failed), so it equals the sum over the trajectories."""
    evaluated = evaluated_episodes(episodes)
    steps = [s for e in evaluated for s in e.traj.steps]
    return {
        "tool_latency_s": spread([s.tool_latency_s for s in steps if s.tool is not None]),
        # python_execute's share of it: waiting for a sandbox slot (other episodes' calls) apart from running
        "sandbox_queued_s": spread([s.sandbox_queued_s for s in steps if s.sandbox_queued_s is not None]),
        "sandbox_run_s": spread([s.sandbox_run_s for s in steps if s.sandbox_run_s is not None]),
        "agent_latency_s": spread([s.agent_latency_s for s in steps]),
        "episode_wall_s": spread([e.traj.wall_s for e in evaluated]),
        "llm_retries": sum(episode_retries(e.traj) for e in episodes),
        "llm_retries_in_runtime_errors": sum(episode_retries(e.traj) for e in episodes if not e.evaluated),
    }


def tool_errors_section(episodes: Sequence[Episode]) -> dict[str, Any]:
    steps = [s for e in evaluated_episodes(episodes) for s in e.traj.steps if s.tool is not None]
    errors = Counter(tool_label(s) for s in steps if s.is_error)
    return {"total": sum(errors.values()), "rate": rate(sum(errors.values()), len(steps)),
            "by_tool": {tool: errors[tool] for tool in sorted(errors)}}

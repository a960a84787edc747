"""The run summary: every metric of the original `summary.json` (docs/original-harness.md §4.4), plus ecab's analyses.

The original keys keep their names and formulas, but the denominators are made consistent (docs/original-harness.md §8
item 19); `DENOMINATORS` below is written into the summary so a reader knows what each rate divides by.
The outcome rules (what is excluded, what is correct) are in budget.py.
"""
from __future__ import annotations

import math
import statistics
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

from ecab.core.unit import describe_unit, unit_key
from ecab.reduce.budget import (CUT_POINTS, Outcome, accuracy_added, cap_reached, cut_points_for, outcome_of,
                                pair_by_unit, truncated_accuracy_of)
from ecab.reduce.audit import judge_audit
from ecab.reduce.report import write_summary  # noqa: F401  (re-exported: callers import it from here too)
from ecab.reduce.variance import variance_section
from ecab.schema import INFO_SOURCES, TERMINATIONS, VERDICT_METHODS, Judgement, Task, Trajectory, Verdict

TOP_FAILURE_REASONS = 20
RUNTIME_ERROR_EXAMPLES = 20
SEARCH_TOOL = "search_products"
ASK_TOOL = "ask_user"
REVIEW_TOOL = "get_review_content"
REVIEW_FAILURE_KINDS = ("no_valid_recommendation", "retrieved_recommended_reviews", "searched_no_matching_text",
                        "never_searched")
TOKEN_KEYS = ("input_tokens", "output_tokens", "reasoning_tokens")

DENOMINATORS = {
    "runtime_errors": "episodes with termination infra_error, or whose judge could not run (judgement "
                      "runtime_error); left out of every rate below except runtime_error_rate, which divides "
                      "by all episodes (total_samples). agent_error episodes are evaluated and wrong.",
    "evaluated_samples": "all episodes minus runtime errors; the denominator of every per-episode rate and "
                         "mean: prediction_finished_rate, valid_finish_rate, avg/median_tool_calls, "
                         "avg/median_ask_user_calls, profile_called_rate, budget.cap_reached_rate, "
                         "clarification, interaction, latency and tool_errors (the original mixed all rows "
                         "and valid rows).",
    "accuracy": "scored_samples = evaluated episodes whose correctness is decided (an episode with no failed "
                "rubric but an unscored one, and no exact match, is unscored); used by overall_accuracy, "
                "exact_match_rate, non_exact_but_correct_rate, every by_* accuracy and "
                "budget.accuracy_if_cut_at.",
    "rubrics": "scored verdicts of evaluated episodes; verdicts with satisfied=null are counted in "
               "unscored_rubrics only.",
    "tokens_and_cost": "all episodes, runtime errors included: their calls were paid.",
    "judge_only_correct": "kept for compatibility; it counts all_satisfied episodes whether or not the target "
                          "matched, the same number as all_satisfied_count.",
}


# ---------------------------------------------------------------------------------------------------------
# Joining the records
# ---------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RubricResult:
    rubric_id: str
    type: str
    source: str
    method: str
    satisfied: bool | None
    reason: str


@dataclass(frozen=True)
class Episode:
    task: Task
    traj: Trajectory
    judgement: Judgement | None
    outcome: Outcome
    rubrics: tuple[RubricResult, ...]       # empty for runtime errors

    @property
    def evaluated(self) -> bool:
        return not self.outcome.excluded

    @property
    def correct(self) -> bool:
        return self.outcome.correct is True

    @property
    def exact(self) -> bool:
        return self.judgement is not None and self.judgement.exact_product_match

    @property
    def all_satisfied(self) -> bool:
        return self.judgement is not None and self.judgement.all_satisfied is True


def rubric_result(task: Task, verdict: Verdict) -> RubricResult:
    """Type and source come from the task's rubric (the source of truth), else from the verdict."""
    rubric = next((r for r in task.rubrics if r.id == verdict.rubric_id), None)
    rtype = rubric.type if rubric else (verdict.type or "unknown")
    source = rubric.info_source if rubric else (verdict.info_source or "query")
    satisfied = None if verdict.satisfied is None else bool(verdict.satisfied)
    return RubricResult(verdict.rubric_id, rtype, source, verdict.method, satisfied,
                        verdict.reasoning or verdict.evidence)


def join_episodes(tasks: dict[str, Task], trajectories: Iterable[Trajectory],
                  judgements: Iterable[Judgement]) -> list[Episode]:
    episodes = []
    for traj, judgement in pair_by_unit(trajectories, judgements):
        key = unit_key(traj.unit, traj.id)
        if traj.termination not in TERMINATIONS:
            raise ValueError(f"{describe_unit(key)}: unknown termination {traj.termination!r}; "
                             f"expected one of {list(TERMINATIONS)}")
        task = tasks.get(key[0])
        if task is None:
            raise ValueError(f"{describe_unit(key)}: task {key[0]!r} is not in the task set")
        outcome = outcome_of(traj, judgement)
        verdicts = judgement.verdicts if judgement is not None and not outcome.excluded else []
        episodes.append(Episode(task, traj, judgement, outcome, tuple(rubric_result(task, v) for v in verdicts)))
    return episodes


# ---------------------------------------------------------------------------------------------------------
# Small numeric helpers
# ---------------------------------------------------------------------------------------------------------

def _r4(x: float) -> float:
    return round(x, 4)


def _rate(numerator: float, denominator: float) -> float:
    return _r4(numerator / denominator) if denominator else 0.0


def _median(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if values else 0.0


def percentile(values: Sequence[float], q: float) -> float:
    """The q-quantile (0..1) with linear interpolation between closest ranks; 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def spread(values: Sequence[float]) -> dict[str, float]:
    mean = sum(values) / len(values) if values else 0.0
    return {"mean": _r4(mean), "p50": _r4(percentile(values, 0.5)), "p95": _r4(percentile(values, 0.95))}


def _evaluated(episodes: Iterable[Episode]) -> list[Episode]:
    return [e for e in episodes if e.evaluated]


def _scored(episodes: Iterable[Episode]) -> list[Episode]:
    return [e for e in episodes if e.evaluated and e.outcome.correct is not None]


def _rubrics(episodes: Iterable[Episode]) -> list[RubricResult]:
    return [r for e in episodes if e.evaluated for r in e.rubrics]


# ---------------------------------------------------------------------------------------------------------
# Rubric and accuracy groupings
# ---------------------------------------------------------------------------------------------------------

def rubric_tally(results: Sequence[RubricResult]) -> dict[str, Any]:
    """{count, satisfied, satisfaction} over scored verdicts, plus unscored and the judging methods."""
    count = sum(1 for r in results if r.satisfied is not None)
    satisfied = sum(1 for r in results if r.satisfied is True)
    methods = {m: 0 for m in VERDICT_METHODS}
    for r in results:
        methods[r.method] = methods.get(r.method, 0) + 1
    return {"count": count, "satisfied": satisfied, "satisfaction": _rate(satisfied, count),
            "unscored": sum(1 for r in results if r.satisfied is None), "methods": methods}


def by_rubric_type(episodes: Sequence[Episode]) -> dict[str, dict[str, Any]]:
    results = _rubrics(episodes)
    return {t: rubric_tally([r for r in results if r.type == t]) for t in sorted({r.type for r in results})}


def by_source(episodes: Sequence[Episode]) -> dict[str, dict[str, Any]]:
    results = _rubrics(episodes)
    sources = list(INFO_SOURCES) + sorted({r.source for r in results} - set(INFO_SOURCES))
    return {s: rubric_tally([r for r in results if r.source == s]) for s in sources}


def _rubric_satisfaction(episodes: Sequence[Episode]) -> float:
    return rubric_tally(_rubrics(episodes))["satisfaction"]


def group_stats(episodes: Sequence[Episode]) -> dict[str, Any]:
    """The original's by_intent entry; the same shape serves every other grouping."""
    evaluated, base = _evaluated(episodes), _scored(episodes)
    correct = sum(e.correct for e in base)
    return {
        "accuracy": _rate(correct, len(base)),
        "rubric_satisfaction": _rubric_satisfaction(episodes),
        "count": len(episodes),
        "correct": correct,
        "exact_match_correct": sum(e.exact for e in evaluated),
        "non_exact_but_correct": sum(not e.exact and e.all_satisfied for e in evaluated),
        "judge_only_correct": sum(e.all_satisfied for e in evaluated),
        "evaluated_samples": len(evaluated),
        "runtime_error_count": len(episodes) - len(evaluated),
    }


def group_by(episodes: Sequence[Episode], key: Callable[[Episode], str | None],
             stats: Callable[[Sequence[Episode]], dict[str, Any]] = group_stats) -> dict[str, dict[str, Any]]:
    """stats per key value, sorted; episodes whose key is None are left out."""
    groups: dict[str, list[Episode]] = {}
    for e in episodes:
        k = key(e)
        if k is not None:
            groups.setdefault(k, []).append(e)
    return {k: stats(groups[k]) for k in sorted(groups)}


def voucher_kind(task: Task) -> str | None:
    """fixed | percentage | tiered | stacked (the judge's four cases), None without a voucher."""
    if task.voucher is None:
        return None
    kind = task.voucher.kind
    return task.voucher.discount_type if kind == "simple" else kind


def voucher_group_stats(episodes: Sequence[Episode]) -> dict[str, Any]:
    stats = group_stats(episodes)
    budget_rubrics = [r for r in _rubrics(episodes) if r.type == "budget_match"]
    tally = rubric_tally(budget_rubrics)
    stats["budget_match"] = {k: tally[k] for k in ("count", "satisfied", "satisfaction")}
    return stats


def implicit_bucket(task: Task) -> str:
    """Difficulty bucket by the number of implicit query requirements: 0-1, 2, 3+."""
    n = task.difficulty_metrics.get("implicit_count", len(task.implicit_rubric_ids))
    n = n if isinstance(n, int) else len(task.implicit_rubric_ids)
    return "0-1" if n <= 1 else "2" if n == 2 else "3+"


# ---------------------------------------------------------------------------------------------------------
# The original's keys
# ---------------------------------------------------------------------------------------------------------

def original_keys(episodes: Sequence[Episode], *, model: str, judge_model: str) -> dict[str, Any]:
    total = len(episodes)
    evaluated, base = _evaluated(episodes), _scored(episodes)
    n_valid, n_scored = len(evaluated), len(base)
    errors = [e for e in episodes if not e.evaluated]
    correct = sum(e.correct for e in base)
    exact = sum(e.exact for e in evaluated)
    non_exact = sum(not e.exact and e.all_satisfied for e in evaluated)
    rubrics = rubric_tally(_rubrics(episodes))
    finished = sum(e.traj.finished for e in evaluated)
    tool_calls = [e.traj.total_tool_calls for e in evaluated]
    ask_calls = [e.traj.ask_user_calls for e in evaluated]
    profile_called = sum(e.traj.get_profile_calls > 0 for e in evaluated)
    return {
        "overall_accuracy": _rate(correct, n_scored),
        "overall_rubric_satisfaction": rubrics["satisfaction"],
        "total_samples": total,
        "evaluated_samples": n_valid,
        "runtime_error_count": len(errors),
        "runtime_error_rate": _rate(len(errors), total),
        "total_correct": correct,
        "exact_match_correct": exact,
        "exact_match_rate": _rate(exact, n_scored),
        "non_exact_but_correct": non_exact,
        "non_exact_but_correct_rate": _rate(non_exact, n_scored),
        "judge_only_correct": sum(e.all_satisfied for e in evaluated),
        "judge_misjudged_count": sum(e.exact and e.judgement.all_satisfied is False for e in evaluated),
        "total_rubrics": rubrics["count"],
        "satisfied_rubrics": rubrics["satisfied"],
        "prediction_finished_count": finished,
        "prediction_unfinished_count": n_valid - finished,
        "prediction_finished_rate": _rate(finished, n_valid),
        "avg_tool_calls": _rate(sum(tool_calls), n_valid),
        "median_tool_calls": _median(tool_calls),
        "by_rubric_type": by_rubric_type(episodes),
        "top_failure_reasons": top_failure_reasons(episodes),
        "runtime_error_examples": [runtime_error_example(e) for e in errors[:RUNTIME_ERROR_EXAMPLES]],
        "by_intent": group_by(episodes, lambda e: e.task.intent_category),
        "by_source": by_source(episodes),
        "persona_utilization": {"profile_called_count": profile_called,
                                "profile_called_rate": _rate(profile_called, max(n_valid, 1))},
        "clarification_efficiency": {
            "total_ask_user_calls": sum(ask_calls),
            "avg_ask_user_calls": _rate(sum(ask_calls), max(n_valid, 1)),
            "median_ask_user_calls": _median(ask_calls),
            "total_clarification_slots": sum(_slot_count(e) for e in evaluated),
        },
        "model": model,
        "judge_model": judge_model,
    }


def top_failure_reasons(episodes: Sequence[Episode]) -> dict[str, int]:
    reasons = Counter(r.reason for r in _rubrics(episodes) if r.satisfied is False)
    return dict(reasons.most_common(TOP_FAILURE_REASONS))


def runtime_error_example(e: Episode) -> dict[str, Any]:
    message = e.traj.error or (e.judgement.error_message if e.judgement else None) or ""
    return {"id": e.task.id, "intent_category": e.task.intent_category, "error_message": message}


def _slot_count(e: Episode) -> int:
    return len(e.task.clarification_script.clarification_slots)


# ---------------------------------------------------------------------------------------------------------
# ecab's analyses
# ---------------------------------------------------------------------------------------------------------

def terminations(episodes: Sequence[Episode]) -> dict[str, int]:
    counts = Counter(e.traj.termination for e in episodes)
    return {t: counts.get(t, 0) for t in TERMINATIONS}


def budget_section(episodes: Sequence[Episode]) -> dict[str, Any]:
    budgets = sorted({b for e in episodes if isinstance(b := e.traj.unit.get("budget"), int)})
    budget = max(budgets) if budgets else None
    outcomes = [e.outcome for e in episodes]
    accuracy_at = truncated_accuracy_of(outcomes, cut_points_for(budget, CUT_POINTS))
    added = accuracy_added(accuracy_at, 75, 100)
    capped = cap_reached(outcomes)
    return {
        "budget": budget,
        "budgets": budgets,
        "cap_reached_count": capped,
        "cap_reached_rate": _rate(capped, len(_evaluated(episodes))),
        "accuracy_if_cut_at": {str(k): _r4(v) for k, v in accuracy_at.items()},
        "accuracy_added_by_calls_76_100": None if added is None else _r4(added),
    }


def _ask_steps(e: Episode) -> list:
    return [s for s in e.traj.steps if s.tool == ASK_TOOL]


def revealed_slots(e: Episode) -> set[str]:
    return set(e.traj.revealed_slots) | {s.revealed_slot for s in e.traj.steps if s.revealed_slot is not None}


def clarification_section(episodes: Sequence[Episode]) -> dict[str, Any]:
    evaluated = _evaluated(episodes)
    slots_by_task = {e.task.id: _slot_count(e) for e in evaluated}
    available = sum(_slot_count(e) for e in evaluated)
    revealed = sum(len(revealed_slots(e)) for e in evaluated)
    questions = [s for e in evaluated for s in _ask_steps(e) if not s.is_error]
    return {
        "total_clarification_slots": available,
        "slots_per_task": _rate(sum(slots_by_task.values()), len(slots_by_task)),
        "slots_revealed": revealed,
        "slots_revealed_per_episode": _rate(revealed, len(evaluated)),
        "reveal_rate": _rate(revealed, available),
        "questions_asked": len(questions),
        "questions_revealed_nothing": sum(1 for s in questions if s.revealed_slot is None),
    }


def first_ask_position(e: Episode) -> float | None:
    """Where the first ask_user fell among the episode's calls: 0 = first call, 1 = last call."""
    asks = [s.call_index for s in _ask_steps(e) if s.call_index > 0]
    if not asks:
        return None
    total = max(e.traj.total_tool_calls, max(asks))
    return (min(asks) - 1) / (total - 1) if total > 1 else 0.0


def search_depth(evaluated: Sequence[Episode]) -> dict[str, Any]:
    """Searches per episode and how deep into the result pages they went (page 0 is the first page)."""
    n = len(evaluated)
    searches = [[s for s in e.traj.steps if s.tool == SEARCH_TOOL] for e in evaluated]
    pages = [[_page_of(s) for s in ss] for ss in searches]
    queries = [{str(s.arguments.get("query", "")).strip().lower() for s in ss if isinstance(s.arguments, dict)}
               for ss in searches]
    searched = [p for p in pages if p]
    return {
        "searches_mean": _rate(sum(map(len, searches)), n),
        "distinct_queries_mean": _rate(sum(map(len, queries)), n),
        "next_page_calls_mean": _rate(sum(sum(1 for x in p if x > 0) for p in pages), n),
        "result_pages_deepest_mean": _rate(sum(max(p) + 1 for p in searched), len(searched)),
    }


def _page_of(step) -> int:
    page = step.arguments.get("page", 0) if isinstance(step.arguments, dict) else 0
    try:
        return max(0, int(page or 0))
    except (TypeError, ValueError):
        return 0


FIRST_ASK_BINS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)


def first_ask_bins(evaluated: Sequence[Episode]) -> list[dict[str, Any]]:
    """Accuracy by where the first ask_user fell (5 bins of width 0.2, then the episodes that never asked)."""
    rows = []
    for low, high in zip(FIRST_ASK_BINS, FIRST_ASK_BINS[1:]):
        last = high == FIRST_ASK_BINS[-1]
        members = [e for e in evaluated if (p := first_ask_position(e)) is not None
                   and low <= p and (p <= high if last else p < high)]
        rows.append(_bin_row(f"{low:.1f}-{high:.1f}", members))
    rows.append(_bin_row("never asked", [e for e in evaluated if first_ask_position(e) is None]))
    return rows


def _bin_row(label: str, members: Sequence[Episode]) -> dict[str, Any]:
    base = _scored(members)
    return {"bin": label, "episodes": len(members), "scored": len(base),
            "accuracy": _rate(sum(e.correct for e in base), len(base)) if base else None}


def interaction_section(episodes: Sequence[Episode]) -> dict[str, Any]:
    """The paper's Table 8 row (interaction behaviour) and the per-episode data behind Figure 4."""
    evaluated = _evaluated(episodes)
    n = len(evaluated)
    calls = Counter(s.tool for e in evaluated for s in e.traj.steps if s.tool is not None)
    positions = [p for e in evaluated if (p := first_ask_position(e)) is not None]
    depth = search_depth(evaluated)
    return {
        "calls_per_tool_mean": {tool: _rate(calls[tool], n) for tool in sorted(calls)},
        "searches_mean": depth["searches_mean"],
        "search_depth": depth,
        "ask_user_episode_rate": _rate(sum(e.traj.ask_user_calls > 0 for e in evaluated), n),
        "first_ask_user_position_mean": _r4(sum(positions) / len(positions)) if positions else None,
        "first_ask_user_position_median": _r4(_median(positions)) if positions else None,
        "profile_read_rate": _rate(sum(e.traj.get_profile_calls > 0 for e in evaluated), n),
        "finish_rate": _rate(sum(e.traj.finished for e in evaluated), n),
        "first_ask_vs_accuracy": first_ask_bins(evaluated),
    }


def _accuracy_of(members: Sequence[Episode]) -> dict[str, Any]:
    base = _scored(members)
    return {"episodes": len(members), "scored": len(base),
            "accuracy": _rate(sum(e.correct for e in base), len(base)) if base else None}


def accuracy_given(episodes: Sequence[Episode]) -> dict[str, Any]:
    """Accuracy conditioned on reading the profile and on asking the user (correlation, not cause)."""
    evaluated = _evaluated(episodes)
    read = [e.traj.get_profile_calls > 0 for e in evaluated]
    asked = [e.traj.ask_user_calls > 0 for e in evaluated]
    return {
        "profile_read": _accuracy_of([e for e, r in zip(evaluated, read) if r]),
        "profile_not_read": _accuracy_of([e for e, r in zip(evaluated, read) if not r]),
        "asked_user": _accuracy_of([e for e, a in zip(evaluated, asked) if a]),
        "did_not_ask": _accuracy_of([e for e, a in zip(evaluated, asked) if not a]),
    }


def failure_by_source(episodes: Sequence[Episode]) -> dict[str, dict[str, Any]]:
    """Per requirement source: how often its rubrics fail, overall and per rubric type."""
    def tally(results: Sequence[RubricResult]) -> dict[str, Any]:
        scored = [r for r in results if r.satisfied is not None]
        failed = sum(1 for r in scored if r.satisfied is False)
        return {"count": len(scored), "failed": failed, "failure_rate": _rate(failed, len(scored))}

    results = _rubrics(episodes)
    out = {}
    for source, group in by_source(episodes).items():
        members = [r for r in results if r.source == source]
        out[source] = {**tally(members),
                       "by_type": {t: tally([r for r in members if r.type == t])
                                   for t in sorted({r.type for r in members})}}
    return out


def review_failure_kind(e: Episode) -> str:
    predicted = e.traj.predicted_product_id
    if predicted is None:
        return "no_valid_recommendation"
    searches = [s for s in e.traj.steps if s.tool == REVIEW_TOOL and not s.is_error
                and isinstance(s.arguments, dict) and s.arguments.get("product_id") == predicted]
    if any(s.result_ids for s in searches):
        return "retrieved_recommended_reviews"
    return "searched_no_matching_text" if searches else "never_searched"


def review_evidence_failures(episodes: Sequence[Episode]) -> dict[str, int]:
    """Failed review_opinion rubrics by what the agent did about the recommended product's reviews."""
    counts = {k: 0 for k in REVIEW_FAILURE_KINDS}
    for e in _evaluated(episodes):
        failed = sum(1 for r in e.rubrics if r.type == "review_opinion" and r.satisfied is False)
        if failed:
            counts[review_failure_kind(e)] += failed
    return {"total": sum(counts.values()), **counts}


def episode_usage(traj: Trajectory) -> dict[str, float]:
    """Tokens and cost of one episode: `usage` when recorded, else the per-step token counts."""
    usage = {k: traj.usage.get(k) if k in traj.usage else sum(getattr(s, k) for s in traj.steps)
             for k in TOKEN_KEYS}
    usage["cost_usd"] = traj.usage.get("cost_usd") or 0.0
    return {k: float(v or 0) for k, v in usage.items()}


def _usage_totals(usages: Sequence[dict[str, float]], keys: Sequence[str]) -> dict[str, Any]:
    """{episodes, total, mean_per_episode} of per-episode usage dicts (cost in USD to 6 decimals)."""
    totals = {k: 0.0 for k in keys}
    for usage in usages:
        for k in keys:
            totals[k] += float(usage.get(k) or 0)
    n = len(usages)
    as_number = {k: (round(v, 6) if k == "cost_usd" else int(v)) for k, v in totals.items()}
    means = {k: (round(v / n, 6) if k == "cost_usd" else _r4(v / n)) if n else 0.0 for k, v in totals.items()}
    return {"episodes": n, "total": as_number, "mean_per_episode": means}


JUDGE_USAGE_KEYS = ("calls", "cache_hits", "input_tokens", "output_tokens", "cost_usd")


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
    return out


def episode_retries(traj: Trajectory) -> int:
    """LLM retries of one episode: `usage.retries` when recorded (every retry, those of a turn that failed
    for good included), else the per-step counts."""
    if "retries" in (traj.usage or {}):
        return int(traj.usage.get("retries") or 0)
    return sum(s.retries for s in traj.steps)


def latency_section(episodes: Sequence[Episode]) -> dict[str, Any]:
    """Latencies of evaluated episodes; `llm_retries` counts every episode's retries (runtime errors too:
    their retries are usually why they failed), so it equals the sum over the trajectories."""
    evaluated = _evaluated(episodes)
    steps = [s for e in evaluated for s in e.traj.steps]
    return {
        "tool_latency_s": spread([s.tool_latency_s for s in steps if s.tool is not None]),
        "agent_latency_s": spread([s.agent_latency_s for s in steps]),
        "episode_wall_s": spread([e.traj.wall_s for e in evaluated]),
        "llm_retries": sum(episode_retries(e.traj) for e in episodes),
        "llm_retries_in_runtime_errors": sum(episode_retries(e.traj) for e in episodes if not e.evaluated),
    }


def tool_errors_section(episodes: Sequence[Episode]) -> dict[str, Any]:
    steps = [s for e in _evaluated(episodes) for s in e.traj.steps if s.tool is not None]
    errors = Counter(s.tool for s in steps if s.is_error)
    return {"total": sum(errors.values()), "rate": _rate(sum(errors.values()), len(steps)),
            "by_tool": {tool: errors[tool] for tool in sorted(errors)}}


def trials(episodes: Sequence[Episode]) -> int:
    return max((int(e.traj.unit.get("trial", 0)) + 1 for e in episodes), default=0)


def ecab_keys(episodes: Sequence[Episode]) -> dict[str, Any]:
    evaluated, base = _evaluated(episodes), _scored(episodes)
    rubrics = rubric_tally(_rubrics(episodes))
    valid_finish = sum(e.traj.termination == "recommended" for e in evaluated)
    return {
        "denominators": DENOMINATORS,
        "scored_samples": len(base),
        "unscored_samples": len(evaluated) - len(base),
        "all_satisfied_count": sum(e.all_satisfied for e in evaluated),
        "unscored_rubrics": rubrics["unscored"],
        "valid_finish_count": valid_finish,
        "valid_finish_rate": _rate(valid_finish, len(evaluated)),
        "invalid_recommendation_count": sum(e.traj.termination == "invalid_recommendation" for e in evaluated),
        "terminations": terminations(episodes),
        "budget": budget_section(episodes),
        "clarification": clarification_section(episodes),
        "by_main_category": group_by(episodes, lambda e: e.task.target_product.main_category or "(none)"),
        "by_voucher_kind": group_by(episodes, lambda e: voucher_kind(e.task), voucher_group_stats),
        "by_implicit_count": group_by(episodes, lambda e: implicit_bucket(e.task)),
        "by_rubric_count": group_by(episodes, lambda e: f"{len(e.task.rubrics):02d}"),
        "interaction": interaction_section(episodes),
        "review_evidence_failures": review_evidence_failures(episodes),
        "failure_by_source": failure_by_source(episodes),
        "accuracy_given": accuracy_given(episodes),
        "judge_audit": judge_audit(episodes),
        "variance": variance_section(episodes),
        "tokens_and_cost": tokens_and_cost(episodes),
        "latency": latency_section(episodes),
        "tool_errors": tool_errors_section(episodes),
        "trials": trials(episodes),
    }


def summarize(tasks: dict[str, Task], trajectories: Iterable[Trajectory], judgements: Iterable[Judgement], *,
              model: str, judge_model: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The summary.json object: the original's keys first, then ecab's, then `extra` (run metadata)."""
    episodes = join_episodes(tasks, trajectories, judgements)
    summary = original_keys(episodes, model=model, judge_model=judge_model)
    summary.update(ecab_keys(episodes))
    for key, value in (extra or {}).items():
        if key in summary:
            raise ValueError(f"extra key {key!r} would overwrite the metric of the same name")
        summary[key] = value
    return summary

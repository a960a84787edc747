"""Accuracy and rubric satisfaction per group: by rubric type, requirement source, intent, main category,
voucher kind and difficulty bucket, and how often each source's requirements fail."""
from __future__ import annotations

from typing import Any, Callable, Sequence

from ecab.reduce.episodes import (Episode, RubricResult, evaluated_episodes, evaluated_rubrics,
                                  scored_episodes)
from ecab.reduce.rates import rate
from ecab.schema import INFO_SOURCES, VERDICT_METHODS, Task


def rubric_tally(results: Sequence[RubricResult]) -> dict[str, Any]:
    """{count, satisfied, satisfaction} over scored verdicts, plus unscored and the judging methods."""
    count = sum(1 for r in results if r.satisfied is not None)
    satisfied = sum(1 for r in results if r.satisfied is True)
    methods = {m: 0 for m in VERDICT_METHODS}
    for r in results:
        methods[r.method] = methods.get(r.method, 0) + 1
    return {"count": count, "satisfied": satisfied, "satisfaction": rate(satisfied, count),
            "unscored": sum(1 for r in results if r.satisfied is None), "methods": methods}


def by_rubric_type(episodes: Sequence[Episode]) -> dict[str, dict[str, Any]]:
    results = evaluated_rubrics(episodes)
    return {t: rubric_tally([r for r in results if r.type == t]) for t in sorted({r.type for r in results})}


def by_source(episodes: Sequence[Episode]) -> dict[str, dict[str, Any]]:
    results = evaluated_rubrics(episodes)
    sources = list(INFO_SOURCES) + sorted({r.source for r in results} - set(INFO_SOURCES))
    return {s: rubric_tally([r for r in results if r.source == s]) for s in sources}


def group_stats(episodes: Sequence[Episode]) -> dict[str, Any]:
    """The original's by_intent entry; the same shape serves every other grouping."""
    evaluated, base = evaluated_episodes(episodes), scored_episodes(episodes)
    correct = sum(e.correct for e in base)
    return {
        "accuracy": rate(correct, len(base)),
        "rubric_satisfaction": rubric_tally(evaluated_rubrics(episodes))["satisfaction"],
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
    budget_rubrics = [r for r in evaluated_rubrics(episodes) if r.type == "budget_match"]
    tally = rubric_tally(budget_rubrics)
    stats["budget_match"] = {k: tally[k] for k in ("count", "satisfied", "satisfaction")}
    return stats


def implicit_bucket(task: Task) -> str:
    """Difficulty bucket by the number of implicit query requirements: 0-1, 2, 3+."""
    n = task.difficulty_metrics.get("implicit_count", len(task.implicit_rubric_ids))
    n = n if isinstance(n, int) else len(task.implicit_rubric_ids)
    return "0-1" if n <= 1 else "2" if n == 2 else "3+"


def failure_by_source(episodes: Sequence[Episode]) -> dict[str, dict[str, Any]]:
    """Per requirement source: how often its rubrics fail, overall and per rubric type."""
    def tally(results: Sequence[RubricResult]) -> dict[str, Any]:
        scored = [r for r in results if r.satisfied is not None]
        failed = sum(1 for r in scored if r.satisfied is False)
        return {"count": len(scored), "failed": failed, "failure_rate": rate(failed, len(scored))}

    results = evaluated_rubrics(episodes)
    out = {}
    for source, group in by_source(episodes).items():
        members = [r for r in results if r.source == source]
        out[source] = {**tally(members),
                       "by_type": {t: tally([r for r in members if r.type == t])
                                   for t in sorted({r.type for r in members})}}
    return out

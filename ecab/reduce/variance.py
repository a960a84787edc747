"""How much the headline numbers would move with another draw of tasks or another trial.

- Confidence intervals (`interval`; formulas in intervals.py). Each statistic is a ratio of sums over tasks
  (correct / scored episodes, satisfied / scored rubrics): a task contributes a numerator and a denominator.
  * Every task contributes at most one unit (accuracy with one trial per task): the units are independent, so
    the Wilson score interval of the proportion ("wilson").
  * Otherwise (several trials per task, rubric satisfaction) the units of a task are not independent draws:
    a percentile bootstrap that resamples *tasks*, every unit travelling with its task ("cluster_bootstrap");
    a resample is sum(num) / sum(den). The generator is a seeded numpy Generator: the same run gives the same
    intervals on every re-reduce.
  * A bootstrap interval of zero width (every task at 0% or at 100%, or a single task) says nothing: it is
    replaced by a Wilson interval over the tasks, the estimate times the number of tasks as successes
    ("wilson_over_tasks"). No interval is ever [0, 0] or [1, 1].
- pass^k (tau-bench): for a task with n scored trials of which c are correct, the chance that k trials
  drawn without replacement are all correct is C(c,k) / C(n,k); pass^k is its mean over tasks with n >= k.
- Flip rate: the share of tasks with two or more scored trials whose outcomes disagree.
"""
from __future__ import annotations

from math import comb
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from ecab.reduce.episodes import Episode, RubricResult, scored_episodes
from ecab.reduce.intervals import wilson_interval
from ecab.schema import INFO_SOURCES

RESAMPLES = 1000
LEVEL = 0.95
SEED = 0
METHOD = ("Wilson score interval when every task has at most one scored unit (accuracy with one trial per "
          "task); otherwise a percentile bootstrap resampling tasks (all trials of a task together), replaced "
          "by a Wilson interval over tasks when the bootstrap has zero width (0%, 100%, one task); each "
          "interval's own `method` says which")


# ---------------------------------------------------------------------------------------------------------
# Formulas
# ---------------------------------------------------------------------------------------------------------

def bootstrap_ratio_ci(numerators: Sequence[float], denominators: Sequence[float], *, resamples: int = RESAMPLES,
                       level: float = LEVEL, seed: int = SEED) -> dict[str, Any]:
    """Point estimate sum(num)/sum(den) and its percentile-bootstrap interval over clusters (one per entry).

    Resamples whose denominator is 0 have no ratio and are dropped. Without any cluster with a positive
    denominator, every number is None.
    """
    num = np.asarray(numerators, dtype=float)
    den = np.asarray(denominators, dtype=float)
    if num.shape != den.shape:
        raise ValueError(f"{len(num)} numerators but {len(den)} denominators")
    clusters = int((den > 0).sum())
    if clusters == 0:
        return {"estimate": None, "low": None, "high": None, "clusters": 0}
    estimate = float(num.sum() / den.sum())
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(num), size=(resamples, len(num)))
    sums_den = den[picks].sum(axis=1)
    kept = sums_den > 0
    ratios = num[picks].sum(axis=1)[kept] / sums_den[kept]
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(ratios, [tail, 100 - tail])
    return {"estimate": round(estimate, 4), "low": round(float(low), 4), "high": round(float(high), 4),
            "clusters": clusters}


def interval(numerators: Sequence[float], denominators: Sequence[float], *, resamples: int = RESAMPLES,
             level: float = LEVEL, seed: int = SEED) -> dict[str, Any]:
    """The interval of sum(num)/sum(den) over tasks (one entry each) by the rule of the module docstring:
    {"estimate", "low", "high", "clusters", "method"}; all None (method too) without a scored unit."""
    clusters = sum(1 for d in denominators if d > 0)
    if clusters == 0:
        return {"estimate": None, "low": None, "high": None, "clusters": 0, "method": None}
    successes, units = float(sum(numerators)), float(sum(denominators))
    if all(d <= 1 for d in denominators):
        low, high = wilson_interval(successes, units, level)
        return {"estimate": round(successes / units, 4), "low": round(low, 4), "high": round(high, 4),
                "clusters": clusters, "method": "wilson"}
    ci = bootstrap_ratio_ci(numerators, denominators, resamples=resamples, level=level, seed=seed)
    if ci["low"] < ci["high"]:
        return {**ci, "method": "cluster_bootstrap"}
    low, high = wilson_interval(successes / units * clusters, clusters, level)
    return {**ci, "low": round(low, 4), "high": round(high, 4), "method": "wilson_over_tasks"}


def pass_hat_k(counts: Iterable[tuple[int, int]]) -> dict[int, dict[str, Any]]:
    """{k: {"value", "tasks"}} for k = 1..max n, from (correct c, scored trials n) per task."""
    counts = [(c, n) for c, n in counts if n > 0]
    for c, n in counts:
        if not 0 <= c <= n:
            raise ValueError(f"correct count {c} is outside 0..{n}")
    result = {}
    for k in range(1, max((n for _, n in counts), default=0) + 1):
        eligible = [(c, n) for c, n in counts if n >= k]
        value = sum(comb(c, k) / comb(n, k) for c, n in eligible) / len(eligible)
        result[k] = {"value": round(value, 4), "tasks": len(eligible)}
    return result


def flip_rate(outcomes_by_task: Iterable[Sequence[bool]]) -> dict[str, Any]:
    """Share of tasks with >= 2 scored trials whose trials do not all agree."""
    repeated = [o for o in outcomes_by_task if len(o) >= 2]
    flipped = sum(1 for o in repeated if len(set(o)) > 1)
    return {"tasks": len(repeated), "flipped": flipped,
            "rate": round(flipped / len(repeated), 4) if repeated else None}


# ---------------------------------------------------------------------------------------------------------
# From episodes
# ---------------------------------------------------------------------------------------------------------

def _by_task(episodes: Iterable[Episode]) -> dict[str, list[Episode]]:
    groups: dict[str, list[Episode]] = {}
    for e in episodes:
        groups.setdefault(e.task.id, []).append(e)
    return {k: groups[k] for k in sorted(groups)}


def accuracy_clusters(groups: dict[str, list[Episode]]) -> tuple[list[int], list[int]]:
    scored = [scored_episodes(g) for g in groups.values()]
    return [sum(e.correct for e in s) for s in scored], [len(s) for s in scored]


def satisfaction_clusters(groups: dict[str, list[Episode]],
                          keep: Callable[[RubricResult], bool] = lambda r: True) -> tuple[list[int], list[int]]:
    rubrics = [[r for e in g if e.evaluated for r in e.rubrics if r.satisfied is not None and keep(r)]
               for g in groups.values()]
    return [sum(r.satisfied for r in rs) for rs in rubrics], [len(rs) for rs in rubrics]


def variance_section(episodes: Sequence[Episode], *, resamples: int = RESAMPLES, level: float = LEVEL,
                     seed: int = SEED) -> dict[str, Any]:
    """CIs (overall, by source, by intent; `interval`), pass^k and the flip rate of a run."""
    def ci(pair: tuple[list[int], list[int]]) -> dict[str, Any]:
        return interval(*pair, resamples=resamples, level=level, seed=seed)

    groups = _by_task(episodes)
    present = {r.source for e in episodes for r in e.rubrics}
    sources = [s for s in INFO_SOURCES if s in present] + sorted(present - set(INFO_SOURCES))
    intents = sorted({e.task.intent_category for e in episodes})
    scored_by_task = [scored_episodes(g) for g in groups.values()]
    trials_per_task = max((len(s) for s in scored_by_task), default=0)
    return {
        "method": METHOD,
        "resamples": resamples, "level": level, "seed": seed,
        "tasks": len(groups),
        "max_scored_trials_per_task": trials_per_task,
        "accuracy": ci(accuracy_clusters(groups)),
        "rubric_satisfaction": ci(satisfaction_clusters(groups)),
        "by_source": {s: ci(satisfaction_clusters(groups, lambda r, s=s: r.source == s)) for s in sources},
        "by_intent": {
            intent: {"accuracy": ci(accuracy_clusters(sub)), "rubric_satisfaction": ci(satisfaction_clusters(sub))}
            for intent in intents
            for sub in [{k: g for k, g in groups.items() if g[0].task.intent_category == intent}]},
        "pass_k": {str(k): v for k, v in
                   pass_hat_k((sum(e.correct for e in s), len(s)) for s in scored_by_task).items()},
        "flips": flip_rate([[e.correct for e in sorted(s, key=lambda e: e.traj.unit.get("trial", 0))]
                            for s in scored_by_task]),
    }

"""The call-budget analyses (docs/architecture.md §9: call-budget sensitivity).

Truncation: cutting a recorded trajectory after k executed tool calls keeps its outcome (outcome.py) only if
`recommend_product` ran within those k calls; otherwise there is no prediction at k, which is wrong.
"""
from __future__ import annotations

from typing import Any, Iterable, Sequence

from ecab.reduce.episodes import Episode, evaluated_episodes
from ecab.reduce.outcome import Outcome, outcome_of, pair_by_unit
from ecab.reduce.rates import rate, round4
from ecab.schema import Judgement, Trajectory

CUT_POINTS = (25, 50, 75, 100)


def correct_within(outcome: Outcome, k: int) -> bool:
    """Correct had the trajectory been cut after k executed calls."""
    index = outcome.recommend_call_index
    return outcome.correct is True and index is not None and index <= k


def scored(outcomes: Iterable[Outcome]) -> list[Outcome]:
    """The accuracy denominator: evaluated (not excluded) and not unscored."""
    return [o for o in outcomes if not o.excluded and o.correct is not None]


def accuracy_within(outcomes: Sequence[Outcome], k: int) -> float:
    base = scored(outcomes)
    return sum(correct_within(o, k) for o in base) / len(base) if base else 0.0


def cut_points_for(budget: int | None, ks: Iterable[int] = CUT_POINTS) -> list[int]:
    """The cut points that fit inside the budget (all of them when the budget is unknown)."""
    return [k for k in ks if budget is None or k <= budget]


def truncated_accuracy_of(outcomes: Sequence[Outcome], ks: Iterable[int]) -> dict[int, float]:
    return {k: accuracy_within(outcomes, k) for k in ks}


def truncated_accuracy(trajectories: Iterable[Trajectory], judgements: Iterable[Judgement],
                       ks: Iterable[int] = CUT_POINTS) -> dict[int, float]:
    """Accuracy if every trajectory had been cut after k executed tool calls, for each k (unrounded)."""
    outcomes = [outcome_of(t, j) for t, j in pair_by_unit(trajectories, judgements)]
    return truncated_accuracy_of(outcomes, ks)


def accuracy_added(accuracy_at: dict[int, float], low: int, high: int) -> float | None:
    """Accuracy gained by the calls in (low, high]; None when either cut point was not computed."""
    if low not in accuracy_at or high not in accuracy_at:
        return None
    return accuracy_at[high] - accuracy_at[low]


def cap_reached(outcomes: Sequence[Outcome]) -> int:
    return sum(1 for o in outcomes if not o.excluded and o.termination == "budget_exhausted")


def budget_section(episodes: Sequence[Episode]) -> dict[str, Any]:
    """summary["budget"]: the run's budget, how many episodes hit it, and accuracy at each cut point inside it."""
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
        "cap_reached_rate": rate(capped, len(evaluated_episodes(episodes))),
        "accuracy_if_cut_at": {str(k): round4(v) for k, v in accuracy_at.items()},
        "accuracy_added_by_calls_76_100": None if added is None else round4(added),
    }

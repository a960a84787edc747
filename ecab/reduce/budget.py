"""The call-budget analyses (docs/architecture.md §9: call-budget sensitivity).

Truncation: cutting a recorded trajectory after k executed tool calls keeps its outcome (outcome.py) only if
`recommend_product` ran within those k calls; otherwise there is no prediction at k, which is wrong.

Cut points come from the run's budget, not a fixed list: the quarters of the budget, rounded half up,
deduplicated, always ending at the budget (100 -> 25, 50, 75, 100; 10 -> 3, 5, 8, 10; 2 -> 1, 2), so a run
at any budget gets a curve and "the last calls" are always the last quarter of its budget.
"""
from __future__ import annotations

import math
from typing import Any, Iterable, Sequence

from ecab.reduce.episodes import Episode, evaluated_episodes
from ecab.reduce.outcome import Outcome, outcome_of, pair_by_unit
from ecab.reduce.rates import rate, round4
from ecab.schema import Judgement, Trajectory

QUARTERS = 4


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


def cut_points_for(budget: int | None) -> list[int]:
    """The quarters of the budget (rounded half up, at least 1, deduplicated), ending at the budget; none when
    the budget is unknown."""
    if budget is None or budget < 1:
        return []
    return sorted({max(1, math.floor(budget * q / QUARTERS + 0.5)) for q in range(1, QUARTERS + 1)})


def truncated_accuracy_of(outcomes: Sequence[Outcome], ks: Iterable[int]) -> dict[int, float]:
    return {k: accuracy_within(outcomes, k) for k in ks}


def truncated_accuracy(trajectories: Iterable[Trajectory], judgements: Iterable[Judgement],
                       ks: Iterable[int]) -> dict[int, float]:
    """Accuracy if every trajectory had been cut after k executed tool calls, for each k (unrounded)."""
    outcomes = [outcome_of(t, j) for t, j in pair_by_unit(trajectories, judgements)]
    return truncated_accuracy_of(outcomes, ks)


def accuracy_added(accuracy_at: dict[int, float], low: int, high: int) -> float | None:
    """Accuracy gained by the calls in (low, high]; None when either cut point was not computed. k = 0 needs
    no computing: without a call there is no recommendation, so accuracy there is 0."""
    at = {0: 0.0, **accuracy_at}
    if low not in at or high not in at:
        return None
    return at[high] - at[low]


def last_calls(accuracy_at: dict[int, float]) -> dict[str, Any]:
    """{"low", "high", "value"}: the accuracy added by calls low+1..high, the last quarter of the budget (from
    0 when the budget has one cut point; low = high = 0 and value None without cut points)."""
    ks = sorted(accuracy_at)
    if not ks:
        return {"low": 0, "high": 0, "value": None}
    low, high = (ks[-2] if len(ks) > 1 else 0), ks[-1]
    added = accuracy_added(accuracy_at, low, high)
    return {"low": low, "high": high, "value": None if added is None else round4(added)}


def cap_reached(outcomes: Sequence[Outcome]) -> int:
    """Episodes cut off by the cap: the budget ran out before a recommendation (termination budget_exhausted)."""
    return sum(1 for o in outcomes if not o.excluded and o.termination == "budget_exhausted")


def used_every_call(episodes: Sequence[Episode]) -> int:
    """Evaluated episodes that spent their whole budget, whether cut off or recommending with the last call.
    Apart from cap_reached because a budget-aware agent (the heuristic) recommends on its last call: it is
    never cut off, yet the budget bound it, which is what a budget study asks about."""
    return sum(1 for e in evaluated_episodes(episodes)
               if isinstance(b := e.traj.unit.get("budget"), int) and e.traj.total_tool_calls >= b)


def budget_section(episodes: Sequence[Episode]) -> dict[str, Any]:
    """summary["budget"]: the run's budget, how many episodes were cut off by it (cap_reached) and how many
    spent all of it (used_every_call), and accuracy at each cut point inside it."""
    budgets = sorted({b for e in episodes if isinstance(b := e.traj.unit.get("budget"), int)})
    budget = max(budgets) if budgets else None
    outcomes = [e.outcome for e in episodes]
    cut_points = cut_points_for(budget)
    accuracy_at = truncated_accuracy_of(outcomes, cut_points)
    capped = cap_reached(outcomes)
    used_all = used_every_call(episodes)
    return {
        "budget": budget,
        "budgets": budgets,
        "cap_reached_count": capped,
        "cap_reached_rate": rate(capped, len(evaluated_episodes(episodes))),
        "used_every_call_count": used_all,
        "used_every_call_rate": rate(used_all, len(evaluated_episodes(episodes))),
        "cut_points": cut_points,
        "accuracy_if_cut_at": {str(k): round4(v) for k, v in accuracy_at.items()},
        "accuracy_added_by_last_calls": last_calls(accuracy_at),
    }

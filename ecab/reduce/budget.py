"""Episode outcomes and the call-budget analyses (docs/architecture.md §9: call-budget sensitivity).

The outcome rules live here, once, because both the budget analysis and every accuracy in metrics.py
use them:

- An episode is *excluded* (a runtime error, never counted in accuracy) when the harness failed it:
  termination `infra_error`, or a judgement marked `runtime_error` (the judge could not run).
  An `agent_error` is the agent's own failure: evaluated and wrong.
- `correct` = exact target match OR all rubrics satisfied (docs/original-harness.md §4.4). It is None ("unscored")
  when no rubric failed but some could not be scored and the target was not matched: such an episode is neither
  right nor wrong and is left out of accuracy denominators.

Truncation: cutting a recorded trajectory after k executed tool calls keeps its outcome only if
`recommend_product` ran within those k calls; otherwise there is no prediction at k, which is wrong.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from ecab.core.unit import UnitKey, describe_unit, unit_key
from ecab.schema import Judgement, Trajectory

CUT_POINTS = (25, 50, 75, 100)


def pair_by_unit(trajectories: Iterable[Trajectory],
                 judgements: Iterable[Judgement]) -> list[tuple[Trajectory, Judgement | None]]:
    """Each trajectory with its judgement, sorted by unit so results do not depend on file order.

    A repeated unit (a resumed run re-ran it) keeps its last record, except that a finished episode is
    never replaced by an infra_error retry of itself, nor a judgement by a runtime_error one. A judgement
    whose unit has no trajectory is an error.
    """
    chosen: dict[UnitKey, Trajectory] = {}
    for traj in trajectories:
        key = unit_key(traj.unit, traj.id)
        previous = chosen.get(key)
        if previous is None or traj.termination != "infra_error" or previous.termination == "infra_error":
            chosen[key] = traj
    judged: dict[UnitKey, Judgement] = {}
    for judgement in judgements:
        key = unit_key(judgement.unit, judgement.id)
        previous = judged.get(key)
        if previous is None or not judgement.runtime_error or previous.runtime_error:
            judged[key] = judgement
    orphans = sorted(set(judged) - set(chosen), key=repr)
    if orphans:
        raise ValueError(f"{len(orphans)} judgement(s) have no trajectory, e.g. {describe_unit(orphans[0])}")
    return [(chosen[key], judged.get(key)) for key in sorted(chosen, key=repr)]


@dataclass(frozen=True)
class Outcome:
    termination: str
    excluded: bool                      # runtime error: left out of accuracy, reported apart
    correct: bool | None                # None = unscored
    recommend_call_index: int | None    # executed calls when recommend_product ran


def recommend_index(traj: Trajectory) -> int | None:
    """Calls used up to and including recommend_product; old records without the field use the total."""
    if traj.recommend_call_index is not None:
        return traj.recommend_call_index
    if traj.termination in ("recommended", "invalid_recommendation"):
        return traj.total_tool_calls
    return None


def is_excluded(traj: Trajectory, judgement: Judgement | None) -> bool:
    return traj.termination == "infra_error" or (judgement is not None and judgement.runtime_error)


def judged_correct(judgement: Judgement) -> bool | None:
    """exact OR all_satisfied, with an unscored all_satisfied (None) kept as None unless exact."""
    if judgement.exact_product_match:
        return True
    return None if judgement.all_satisfied is None else bool(judgement.all_satisfied)


def outcome_of(traj: Trajectory, judgement: Judgement | None) -> Outcome:
    excluded = is_excluded(traj, judgement)
    if excluded:
        correct = None
    elif judgement is None:
        raise ValueError(f"no judgement for {describe_unit(unit_key(traj.unit, traj.id))}: run the judge stage")
    elif traj.termination == "agent_error":
        correct = False             # the agent failed itself: evaluated and wrong
    else:
        correct = judged_correct(judgement)
    return Outcome(traj.termination, excluded, correct, recommend_index(traj))


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

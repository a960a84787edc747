"""Episode outcomes: which record of a unit counts, whether an episode is excluded, and whether it is correct.

The outcome rules live here, once, because every accuracy of the summary (and the call-budget analysis,
and the import of the original's files) uses them:

- An episode is *excluded* (a runtime error, never counted in accuracy) when the harness failed it:
  termination `infra_error`, or a judgement marked `runtime_error` (the judge could not run).
  An `agent_error` is the agent's own failure: evaluated and wrong.
- `correct` = exact target match OR all rubrics satisfied (docs/original-harness.md §4.4). It is None ("unscored")
  when no rubric failed but some could not be scored and the target was not matched: such an episode is neither
  right nor wrong and is left out of accuracy denominators.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from ecab.core.unit import UnitKey, describe_unit, unit_key
from ecab.schema import Judgement, Trajectory


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

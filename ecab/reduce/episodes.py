"""The joined episode every analysis of the summary reads: a task, its trajectory, its judgement and its outcome.

`join_episodes` pairs the records by unit (outcome.py decides which record of a repeated unit counts) and
checks them against the task set; the three filters below are the populations the summary's rates divide
by (docs/architecture.md §9).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from ecab.core.unit import describe_unit, unit_key
from ecab.reduce.outcome import Outcome, outcome_of, pair_by_unit
from ecab.schema import TERMINATIONS, Judgement, Task, Trajectory, Verdict


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


def evaluated_episodes(episodes: Iterable[Episode]) -> list[Episode]:
    """All episodes but runtime errors: the denominator of every per-episode rate."""
    return [e for e in episodes if e.evaluated]


def scored_episodes(episodes: Iterable[Episode]) -> list[Episode]:
    """Evaluated episodes whose correctness is decided: the denominator of every accuracy."""
    return [e for e in episodes if e.evaluated and e.outcome.correct is not None]


def evaluated_rubrics(episodes: Iterable[Episode]) -> list[RubricResult]:
    """The rubric results of evaluated episodes, unscored ones included."""
    return [r for e in episodes if e.evaluated for r in e.rubrics]

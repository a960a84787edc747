"""The unit of work: one episode, `(task_id, model, budget, seed, trial)`, and the key that identifies it.

A trajectory and its judgement carry their unit as a plain dict (`unit`); `unit_key` is the one rule that
reads it back, so resuming a run, keeping the latest record of a unit in the run folder, joining
trajectories with judgements and comparing judges all agree on which records are the same episode.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Mapping

from ecab.core.seeds import episode_seed

UnitKey = tuple[Any, ...]


@dataclass(frozen=True)
class Unit:
    task_id: str
    model: str
    budget: int
    seed: int
    trial: int = 0

    @property
    def key(self) -> UnitKey:
        return (self.task_id, self.model, self.budget, self.seed, self.trial)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def unit_key(unit: Mapping[str, Any], record_id: str | None = None) -> UnitKey:
    """The key of a stored unit dict, equal to `Unit.key` of the unit it was made from. A record whose unit
    lacks the task id (an imported or hand-made one) falls back to the record's own id."""
    return (unit.get("task_id", record_id), unit.get("model"), unit.get("budget"), unit.get("seed"),
            unit.get("trial", 0))


def describe_unit(key: UnitKey) -> str:
    task_id, model, budget, seed, trial = key
    return f"task_id={task_id} model={model} budget={budget} seed={seed} trial={trial}"


def make_units(task_ids: list[str], model: str, budget: int, base_seed: int, trials: int) -> list[Unit]:
    """Every episode of a run: trial-major, tasks in their order; seeds from `episode_seed`."""
    return [Unit(task_id, model, budget, episode_seed(base_seed, task_id, trial), trial)
            for trial in range(trials) for task_id in task_ids]

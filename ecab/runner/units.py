"""Work units and their seeds.

A unit is one episode: (task_id, model, budget, seed, trial). Seeds come from hashlib, never from Python's
salted `hash`, so the same config gives the same episodes on any machine and in any process.
"""
from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass


def derive_seed(*parts: object) -> int:
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") & 0x7FFF_FFFF_FFFF_FFFF


@dataclass(frozen=True)
class Unit:
    task_id: str
    model: str
    budget: int
    seed: int
    trial: int = 0

    @property
    def key(self) -> tuple:
        return (self.task_id, self.model, self.budget, self.seed, self.trial)

    def as_dict(self) -> dict:
        return asdict(self)


def make_units(task_ids: list[str], model: str, budget: int, base_seed: int, trials: int) -> list[Unit]:
    return [Unit(task_id, model, budget, derive_seed(base_seed, task_id, trial), trial)
            for trial in range(trials) for task_id in task_ids]


def unit_key(unit: dict) -> tuple:
    return (unit.get("task_id"), unit.get("model"), unit.get("budget"), unit.get("seed"), unit.get("trial", 0))

"""What a judge is: the rules judge (rules.py) and the LLM judge (llm.py) are two implementations of
`Judge`; dispatch.py builds the configured one, the one place the choice is made.

A judge turns one finished episode (its task and trajectory; the recommended product is read from the
catalog) into the episode's `Judgement`: one verdict per rubric in rubric order, and the outcome of the one
correctness rule (`ecab.judge.episode.outcome`, applied by `episode.make_judgement`). Whichever judge
wrote them, verdict files have one format (`RunFolder.write_verdicts`, ecab/runs/folder.py).
"""
from __future__ import annotations

import asyncio
from typing import Any, Iterable, Protocol, runtime_checkable

from ecab.catalog.base import CatalogReader
from ecab.schema import Judgement, Task, Trajectory


@runtime_checkable
class Judge(Protocol):
    """Decides the verdicts of finished episodes; one instance serves one judging pass."""

    name: str
    """"rules" or "llm": each Judgement's `judge`, its verdict file (verdicts.<name>.jsonl.gz), the manifest's
    `judges` and `active_judge` keys."""

    @property
    def model_name(self) -> str:
        """The summary's `judge_model`: "rules", or "llm:<model id>"."""

    async def judge_episode(self, task: Task, trajectory: Trajectory, catalog: CatalogReader) -> Judgement:
        """The verdicts of one episode and its outcome."""

    def describe(self) -> dict[str, Any]:
        """What judged, for the run manifest; called after the pass (usage, review checker statistics)."""

    async def aclose(self) -> None:
        """Release what the pass held (an LLM judge's HTTP client); the judge is not used after."""


async def judge_episodes(judge: Judge, tasks: dict[str, Task], trajectories: Iterable[Trajectory],
                         catalog: CatalogReader) -> list[Judgement]:
    """One Judgement per trajectory whose task is in `tasks`, in input order. Episodes are judged
    concurrently (an LLM judge's chat client bounds the requests in flight); the judge is closed after."""
    try:
        return list(await asyncio.gather(*(judge.judge_episode(tasks[t.id], t, catalog)
                                           for t in trajectories if t.id in tasks)))
    finally:
        await judge.aclose()

"""runner=local: every episode in one process, many at once on one asyncio loop.

Catalog lookups are blocking LanceDB calls that the tool box runs in threads, so hundreds of episodes can
be in flight while the event loop stays free. Each finished episode is checkpointed at once.
"""
from __future__ import annotations

import asyncio
from typing import Any, Callable

from tqdm import tqdm

from ecab.agents import make_agent
from ecab.env.episode import EpisodeSettings, run_episode
from ecab.env.tools import ToolBox
from ecab.runner.store import RunFolder
from ecab.runner.units import Unit
from ecab.schema import Task, Trajectory


async def run_units(units: list[Unit], tasks: dict[str, Task], catalog, model_cfg: Any,
                    settings: EpisodeSettings, folder: RunFolder, *, concurrency: int = 32,
                    tool_options: dict[str, Any] | None = None, writer: str = "local",
                    progress: bool = True, max_attempts: int = 2,
                    on_done: Callable[[Trajectory], None] | None = None) -> list[Trajectory]:
    """Run the units, appending each finished trajectory to the run folder; returns them in unit order.

    An episode that ends in infra_error is re-run up to `max_attempts` times in all; the last attempt's
    record is kept (and says how many attempts it took).
    """
    gate = asyncio.Semaphore(max(1, concurrency))
    bar = tqdm(total=len(units), desc="episodes", unit="ep", disable=not progress, dynamic_ncols=True)

    async def one(unit: Unit) -> Trajectory:
        async with gate:
            task = tasks[unit.task_id]
            for attempt in range(1, max_attempts + 1):
                toolbox = ToolBox(catalog, task, **(tool_options or {}))
                agent = make_agent(model_cfg, task, unit.seed)
                traj = await run_episode(task, agent, toolbox, settings, unit=unit.as_dict())
                traj.attempts = attempt
                if traj.termination != "infra_error":
                    break
            folder.append_trajectory(writer, traj)
            bar.update(1)
            if on_done:
                on_done(traj)
            return traj

    try:
        return list(await asyncio.gather(*(one(u) for u in units)))
    finally:
        bar.close()

"""runner=local: every episode in one process, many at once on one asyncio loop.

Catalog lookups are blocking LanceDB calls that the tool box runs in threads, so hundreds of episodes can
be in flight while the event loop stays free. Each finished episode is checkpointed at once, from a tool
thread; the objects loaded before the run are frozen out of the collector's full scans (frozen_heap).
`run_unit` is the one-episode body that `runner=ray`'s episode workers run too, so both runners execute
the same episode code.
"""
from __future__ import annotations

import asyncio
import contextlib
import gc
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from tqdm import tqdm

from ecab.agents import make_agent
from ecab.env.agent_protocol import AgentTurn
from ecab.core.unit import Unit
from ecab.env.episode import EpisodeSettings, run_episode
from ecab.env.tools import ToolBox
from ecab.runs import RunFolder
from ecab.schema import Task, Trajectory


class DelayedAgent:
    """Waits `delay_s` before each turn: a test and benchmark aid (`runner.step_delay_s`) that makes
    episodes last long enough to be killed mid-run or to keep many in flight. Never changes a result."""

    def __init__(self, agent, delay_s: float):
        self.agent, self.delay_s = agent, delay_s
        self.name = getattr(agent, "name", "agent")

    async def act(self, messages, tools) -> AgentTurn:
        await asyncio.sleep(self.delay_s)
        return await self.agent.act(messages, tools)


async def run_unit(unit: Unit, task: Task, catalog, model_cfg: Any, settings: EpisodeSettings, *,
                   tool_options: dict[str, Any] | None = None, max_attempts: int = 2,
                   step_delay_s: float = 0.0, chat=None) -> Trajectory:
    """One unit's episode. An infra_error episode is re-run up to `max_attempts` times in all; the last
    attempt's record is kept (and says how many attempts it took). `chat`: the chat client an LLM agent
    uses (the runner's, with the endpoint's limiter, shared by every episode)."""
    for attempt in range(1, max_attempts + 1):
        toolbox = ToolBox(catalog, task, **(tool_options or {}))
        agent = make_agent(model_cfg, task, unit.seed, budget=settings.budget, chat=chat)
        if step_delay_s:
            agent = DelayedAgent(agent, step_delay_s)
        traj = await run_episode(task, agent, toolbox, settings, unit=unit.as_dict())
        traj.attempts = attempt
        if traj.termination != "infra_error":
            break
    return traj


def widen_thread_pool(concurrency: int, catalog=None) -> None:
    """Catalog calls run in the loop's default executor (asyncio.to_thread). A catalog whose calls wait on
    another process (Ray's shard clients, call_threads None) needs a thread per episode that may be waiting, up to 256; one
    whose calls are CPU work in this process says how many threads it can use (`call_threads`)."""
    workers = max(8, min(256, concurrency))
    if getattr(catalog, "call_threads", None):
        workers = min(workers, int(catalog.call_threads))
    asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(workers, thread_name_prefix="ecab-tool"))


@contextlib.contextmanager
def frozen_heap():
    """Keep the collector off the objects loaded before the run (gc.freeze); see docs/decisions.md#gc-freeze."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


async def run_units(units: list[Unit], tasks: dict[str, Task], catalog, model_cfg: Any,
                    settings: EpisodeSettings, folder: RunFolder, *, concurrency: int = 32,
                    tool_options: dict[str, Any] | None = None, writer: str = "local",
                    progress: bool = True, max_attempts: int = 2, step_delay_s: float = 0.0,
                    on_done: Callable[[Trajectory], None] | None = None, chat=None) -> list[Trajectory]:
    """Run the units, appending each finished trajectory to the run folder; returns them in unit order.
    `chat`: the chat client every episode's LLM agent shares (with the endpoint's limiter)."""
    gate = asyncio.Semaphore(max(1, concurrency))
    widen_thread_pool(concurrency, catalog)
    bar = tqdm(total=len(units), desc="episodes", unit="ep", disable=not progress, dynamic_ncols=True)

    async def one(unit: Unit) -> Trajectory:
        async with gate:
            traj = await run_unit(unit, tasks[unit.task_id], catalog, model_cfg, settings,
                                  tool_options=tool_options, max_attempts=max_attempts, step_delay_s=step_delay_s,
                                  chat=chat)
            # Off the event loop (JSON, write, fsync); see docs/decisions.md#checkpoint-writes.
            await asyncio.to_thread(folder.append_trajectory, writer, traj)
            bar.update(1)
            if on_done:
                on_done(traj)
            return traj

    try:
        with frozen_heap():
            jobs = [asyncio.ensure_future(one(u)) for u in units]
            try:
                return list(await asyncio.gather(*jobs))
            except BaseException:
                # A unit raised (EndpointRefused: the endpoint refuses every request): stop the others at
                # once. What finished is already in the run folder; the rest runs on resume.
                for job in jobs:
                    job.cancel()
                await asyncio.gather(*jobs, return_exceptions=True)
                raise
    finally:
        bar.close()


# ------------------------------------------------------------------------------------ from the run config

def runner_setting(cfg: Any, key: str, default: Any) -> Any:
    """runner.<key>, or the default when the runner config does not set it."""
    from omegaconf import OmegaConf

    value = OmegaConf.select(cfg, f"runner.{key}", default=None)
    return default if value is None else value


def tool_options(cfg: Any) -> dict[str, Any]:
    return {"search_mode": cfg.tools.search, "user_matcher": cfg.tools.user}


def limiter_settings(cfg: Any):
    """runner.limits, the settings of the adaptive limiter the runner builds per endpoint (ecab/llm/limits.py)."""
    from omegaconf import OmegaConf

    from ecab.llm.limits import LimiterSettings

    try:
        return LimiterSettings.from_config(OmegaConf.select(cfg, "runner.limits", default=None))
    except ValueError as exc:
        from ecab.config import ConfigError

        raise ConfigError(str(exc)) from None


def run_config(cfg: Any, units: list[Unit], tasks: dict[str, Task], catalog, folder: RunFolder,
               settings: EpisodeSettings, *, on_done: Callable[[Trajectory], None] | None = None) -> dict:
    """runner=local from the resolved config; returns the runner stats recorded in the manifest. An LLM model
    gets one adaptive limiter for its endpoint and one chat client with it, both fresh for this run (the
    limiter's asyncio primitives bind to this run's loop)."""
    from ecab.agents import llm_settings
    from ecab.llm.client import ChatClient
    from ecab.llm.limits import AdaptiveLimiter, endpoint_key

    limits = limiter_settings(cfg)                          # checked whatever the model
    model = llm_settings(cfg.model) if units else None     # no unit left to run: no endpoint to limit
    limiters, chat = {}, None
    if model is not None:
        limiter = limiters[endpoint_key(model)] = AdaptiveLimiter(limits)
        chat = ChatClient(model, limiter=limiter)
    concurrency = int(runner_setting(cfg, "concurrency", 32))
    trajectories = asyncio.run(run_units(
        units, tasks, catalog, cfg.model, settings, folder, concurrency=concurrency,
        progress=bool(cfg.run.progress), tool_options=tool_options(cfg),
        max_attempts=int(runner_setting(cfg, "max_attempts", 2)),
        step_delay_s=float(runner_setting(cfg, "step_delay_s", 0.0)), on_done=on_done, chat=chat))
    return {"runner": "local", "concurrency": concurrency,
            "retried_units": sum(1 for t in trajectories if t.attempts > 1),
            "infra_reruns": sum(t.attempts - 1 for t in trajectories),
            "requeued_units": 0, "catalog_actor_restarts": 0,
            "limiters": {key: limiter.describe() for key, limiter in limiters.items()}}

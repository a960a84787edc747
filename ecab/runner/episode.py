"""One unit's episode as every runner runs it: `run_unit` is the body of runner=local's loop and of
runner=ray's episode workers alike, so both runners execute the same episode code.
"""
from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ecab.agents import make_agent
from ecab.core.unit import Unit
from ecab.env.agent_protocol import AgentTurn
from ecab.env.episode import EpisodeSettings, run_episode
from ecab.env.tools import ToolBox
from ecab.schema import Task, Trajectory


@dataclass
class EpisodeOptions:
    """How each unit's episode is set up, the same for every runner (picklable: Ray workers get a copy)."""

    model_cfg: Any                                             # the model section: which agent, which endpoint
    tool_options: dict[str, Any] = field(default_factory=dict)  # ToolBox keyword arguments (search mode, ...)
    max_attempts: int = 2                                      # attempts in all when an episode ends in infra_error
    step_delay_s: float = 0.0                                  # DelayedAgent's delay (runner.step_delay_s)


class DelayedAgent:
    """Waits `delay_s` before each turn: a test and benchmark aid (`runner.step_delay_s`) that makes
    episodes last long enough to be killed mid-run or to keep many in flight. Never changes a result."""

    def __init__(self, agent, delay_s: float):
        self.agent, self.delay_s = agent, delay_s
        self.name = getattr(agent, "name", "agent")

    async def act(self, messages, tools) -> AgentTurn:
        await asyncio.sleep(self.delay_s)
        return await self.agent.act(messages, tools)

    async def aclose(self) -> None:
        close = getattr(self.agent, "aclose", None)
        if close is not None:
            await close()


async def run_unit(unit: Unit, task: Task, catalog, settings: EpisodeSettings, options: EpisodeOptions, *,
                   chat=None) -> Trajectory:
    """One unit's episode. An infra_error episode is re-run up to `options.max_attempts` times in all; the
    last attempt's record is kept (and says how many attempts it took). `chat`: the chat client an LLM agent
    uses (the runner's, with the endpoint's limiter, shared by every episode)."""
    for attempt in range(1, options.max_attempts + 1):
        toolbox = ToolBox(catalog, task, **options.tool_options)
        agent = make_agent(options.model_cfg, task, unit.seed, budget=settings.budget, chat=chat)
        if options.step_delay_s:
            agent = DelayedAgent(agent, options.step_delay_s)
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

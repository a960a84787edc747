"""One unit's episode as every runner runs it: `run_unit` is the body of runner=local's loop and of
runner=ray's episode workers alike, so both runners execute the same episode code. `TurnCheckpoints` is how a
runner keeps the turns of an episode in flight in the run folder (issue 31), so a stopped run loses none.
"""
from __future__ import annotations

import asyncio
import copy
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable

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
    checkpoint_every_s: float | None = 5.0                     # TurnCheckpoints' interval (None: no checkpoints)


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
                   chat=None, on_turn: Callable[[Trajectory], None] | None = None) -> Trajectory:
    """One unit's episode. An infra_error episode is re-run up to `options.max_attempts` times in all; the
    last attempt's record is kept (and says how many attempts it took). `chat`: the chat client an LLM agent
    uses (the runner's, with the endpoint's limiter, shared by every episode). `on_turn`: run_episode's, for
    every attempt (a `TurnCheckpoints`)."""
    for attempt in range(1, options.max_attempts + 1):
        toolbox = ToolBox(catalog, task, **options.tool_options)
        agent = make_agent(options.model_cfg, task, unit.seed, budget=settings.budget, chat=chat)
        if options.step_delay_s:
            agent = DelayedAgent(agent, options.step_delay_s)
        traj = await run_episode(task, agent, toolbox, settings, unit=unit.as_dict(), on_turn=on_turn)
        traj.attempts = attempt
        if traj.termination != "infra_error":
            break
    return traj


class TurnCheckpoints:
    """The `on_turn` of one episode that checkpoints it while it runs (`write`: RunFolder.write_inflight), so a
    stopped run keeps what its episodes in flight did (issue 31).

    Cheap and off the event loop: a turn's callback only takes a snapshot of the record (its lists copied,
    their items shared: the loop appends to them but never changes an item once appended) and hands it to a
    tool thread, which serialises and writes it; the loop never waits on a file. At most one checkpoint per
    `every_s` seconds of `clock` (time.monotonic; a test passes its own), the first turn's always: against a
    slow model (minutes a turn) that is every turn, against a fast one a few turns' worth at most is lost on a
    kill, and the JSON of long records is not rewritten several times a second. While one checkpoint is still
    being written a turn writes none (two writes of one file never race; the next turn's catches up).
    `settle()` waits for the last write: call it before the final record is appended, which removes the
    checkpoint, so no late write puts it back. A failed write only counts in `failed`: a checkpoint never
    ends an episode."""

    def __init__(self, write: Callable[[Trajectory], Any], every_s: float = 5.0,
                 clock: Callable[[], float] = time.monotonic):
        self.write, self.every_s, self.clock = write, every_s, clock
        self.last: float | None = None          # clock time of the last checkpoint started
        self.pending: asyncio.Future | None = None
        self.written = self.failed = 0

    def __call__(self, traj: Trajectory) -> None:
        if self.pending is not None and not self.pending.done():
            return
        now = self.clock()
        if self.last is not None and now - self.last < self.every_s:
            return
        self.last = now
        self.pending = asyncio.ensure_future(asyncio.to_thread(self._write, snapshot(traj)))

    def _write(self, traj: Trajectory) -> None:
        try:
            self.write(traj)
            self.written += 1
        except Exception:  # noqa: BLE001 - disk full, a record that will not serialise: the episode goes on
            self.failed += 1

    async def settle(self) -> None:
        if self.pending is not None:
            await self.pending


def snapshot(traj: Trajectory) -> Trajectory:
    """A copy of a record being built that the episode's next turns leave alone: the record's lists and dicts
    copied (not their items, which the loop never changes once appended), the per-step totals filled in."""
    snap = copy.copy(traj)
    snap.trajectory, snap.steps = list(traj.trajectory), list(traj.steps)
    snap.reasoning_trace, snap.usage, snap.unit = list(traj.reasoning_trace), dict(traj.usage), dict(traj.unit)
    snap.extras = dict(traj.extras)
    snap.revealed_slots = [s.revealed_slot for s in snap.steps if s.revealed_slot]
    snap.tool_errors = sum(1 for s in snap.steps if s.is_error)
    return snap


def widen_thread_pool(concurrency: int, catalog=None) -> None:
    """Catalog calls run in the loop's default executor (asyncio.to_thread). A catalog whose calls wait on
    another process (Ray's shard clients, call_threads None) needs a thread per episode that may be waiting, up to 256; one
    whose calls are CPU work in this process says how many threads it can use (`call_threads`)."""
    workers = max(8, min(256, concurrency))
    if getattr(catalog, "call_threads", None):
        workers = min(workers, int(catalog.call_threads))
    asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(workers, thread_name_prefix="ecab-tool"))

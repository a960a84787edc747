"""runner=local: every episode in one process, many at once on one asyncio loop.

Catalog lookups are blocking LanceDB calls that the tool box runs in threads, so hundreds of episodes can
be in flight while the event loop stays free. Each finished episode is checkpointed at once, from a tool
thread, and an episode in flight every few turns (`TurnCheckpoints`: trajectories/inflight/, for the report of a
run in progress and of a stopped run; a resumed run re-runs those units from the start); the objects loaded before the run are frozen out of the collector's full scans (frozen_heap).
Each episode is `run_unit` (ecab/runner/episode.py), the body runner=ray's episode workers run too.
While the first episodes make their first LLM calls, a tool thread runs the searches of the shoppers' requests,
which agents search first (docs/decisions.md#first-query-warm-up). Episodes start as the harness keeps up, up to
runner.concurrency in flight (ecab/runner/admission.py). Above one core's worth of episodes, runner=local runs
several of these loops in processes of their own (ecab/runner/local_processes.py).
"""
from __future__ import annotations

import asyncio
import contextlib
import gc
from typing import Mapping

from tqdm import tqdm

from ecab.core.unit import Unit
from ecab.env.episode import EpisodeSettings
from ecab.llm.limits import LimiterSettings
from ecab.runner.admission import Admission, AdmissionSettings
from ecab.runner.episode import EpisodeOptions, TurnCheckpoints, run_unit, widen_thread_pool
from ecab.runner.protocol import OnDone, RunnerStats
from ecab.runs import RunFolder
from ecab.schema import Task, Trajectory


@contextlib.contextmanager
def frozen_heap():
    """Keep the collector off the objects loaded before the run (gc.freeze); see docs/decisions.md#gc-freeze."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


class LocalRunner:
    """The `Runner` (ecab/runner/protocol.py) of runner=local."""

    name = "local"

    def __init__(self, episode: EpisodeOptions, *, concurrency: int = 32, limits: LimiterSettings | None = None,
                 progress: bool = True, writer: str = "local", warm_queries: bool = True,
                 admission: AdmissionSettings | None = None):
        self.episode, self.concurrency = episode, concurrency
        self.limits = limits or LimiterSettings()
        self.progress, self.writer = progress, writer
        self.warm_queries = warm_queries
        self.admission = admission or AdmissionSettings()
        self.admitted: dict | None = None   # the last run's admission figures (Admission.describe)

    def run(self, units: list[Unit], tasks: Mapping[str, Task], catalog, folder: RunFolder,
            settings: EpisodeSettings, *, on_done: OnDone | None = None) -> RunnerStats:
        """An LLM model gets one adaptive limiter for its endpoint and one chat client with it, both fresh for
        this run (the limiter's asyncio primitives bind to this run's loop)."""
        from ecab.agents import llm_settings
        from ecab.llm.client import ChatClient
        from ecab.llm.limits import AdaptiveLimiter, endpoint_key

        model = llm_settings(self.episode.model_cfg) if units else None   # nothing to run: no endpoint to limit
        limiters, chat = {}, None
        if model is not None:
            limiter = limiters[endpoint_key(model)] = AdaptiveLimiter(self.limits)
            chat = ChatClient(model, limiter=limiter)
        # Checkpoints a stopped run left of these units: they run again from the start (others' units, in the
        # processes of runner=local's other loops, keep theirs).
        folder.clear_inflight(u.key for u in units)
        trajectories = asyncio.run(self._run_all(units, tasks, catalog, folder, settings, on_done, chat))
        return RunnerStats(runner="local", concurrency=self.concurrency,
                           retried_units=sum(1 for t in trajectories if t.attempts > 1),
                           infra_reruns=sum(t.attempts - 1 for t in trajectories),
                           limiters={key: limiter.describe() for key, limiter in limiters.items()},
                           admission=self.admitted)

    async def _run_all(self, units: list[Unit], tasks: Mapping[str, Task], catalog, folder: RunFolder,
                       settings: EpisodeSettings, on_done: OnDone | None, chat) -> list[Trajectory]:
        """Run the units, appending each finished trajectory to the run folder; returns them in unit order.
        `chat`: the chat client every episode's LLM agent shares (with the endpoint's limiter)."""
        gate = Admission(self.concurrency, self.admission)
        widen_thread_pool(self.concurrency, catalog)
        bar = tqdm(total=len(units), desc="episodes", unit="ep", disable=not self.progress, dynamic_ncols=True)

        async def one(unit: Unit) -> Trajectory:
            async with gate:
                every = self.episode.checkpoint_every_s
                checkpoints = None if every is None else TurnCheckpoints(folder.write_inflight, every)
                traj = await run_unit(unit, tasks[unit.task_id], catalog, settings, self.episode, chat=chat,
                                      on_turn=checkpoints)
                if checkpoints is not None:
                    await checkpoints.settle()   # no checkpoint write may land after the final record's removes it
                # Off the event loop (JSON, write, fsync); see docs/decisions.md#checkpoint-writes.
                await asyncio.to_thread(folder.append_trajectory, self.writer, traj)
                bar.update(1)
                if on_done:
                    on_done(traj)
                return traj

        if self.warm_queries:
            warm_first_queries(catalog, units, tasks)
        probe = asyncio.ensure_future(gate.run_probe())
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
            probe.cancel()
            await asyncio.gather(probe, return_exceptions=True)
            self.admitted = gate.describe()
            bar.close()


def first_queries(units: list[Unit], tasks: Mapping[str, Task]) -> list[str]:
    """The shoppers' requests of these units' tasks, once each, in the order the units start."""
    return list(dict.fromkeys(tasks[u.task_id].user_query for u in units))


def warm_first_queries(catalog, units: list[Unit], tasks: Mapping[str, Task]) -> None:
    """Run the units' first searches (the shoppers' requests, first page) in a tool thread, in unit order,
    while the episodes start, for a catalog that searches in this process; see
    docs/decisions.md#first-query-warm-up."""
    if getattr(catalog, "path", None) is None:
        return
    asyncio.get_running_loop().run_in_executor(None, _warm, catalog, first_queries(units, tasks))


def _warm(catalog, texts: list[str]) -> None:
    from ecab.env.tools import PAGE_SIZE

    try:
        catalog.warm_searches(texts, PAGE_SIZE)
    except Exception:
        pass   # only a head start: the episode's own search meets the same error and reports it

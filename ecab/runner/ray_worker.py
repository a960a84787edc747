"""runner=ray's episode workers: async actors, each running many units' episodes at once (`run_unit`, the
same body as runner=local) and appending each finished trajectory to its own part file."""
from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import Any

import ray

from ecab.core.machine import resident_mb
from ecab.core.unit import Unit
from ecab.runner.episode import EpisodeOptions, TurnCheckpoints, run_unit, widen_thread_pool
from ecab.runner.ray_catalog import remote_catalog
from ecab.schema import Trajectory


@dataclass
class WorkerSpec:
    """Everything an episode worker needs, as plain picklable values."""

    run_dir: str
    episode: EpisodeOptions             # its model_cfg the typed model section (picklable)
    settings: dict                      # EpisodeSettings fields
    search_mode: str
    concurrency: int = 128              # episodes in flight in this worker
    limiter_settings: dict | None = None


class EpisodeWorkerService:
    """An async actor: many episodes at once on one event loop, each checkpointed to this worker's part."""

    def __init__(self, worker_id: str, spec: WorkerSpec, tasks: dict, meta: dict, catalog_actors: list,
                 limiters: dict[str, Any]):
        from ecab.agents import llm_settings
        from ecab.env.episode import EpisodeSettings
        from ecab.llm.client import ChatClient
        from ecab.llm.limits import LimiterSettings, SyncedLimiter, endpoint_key
        from ecab.runs import RunFolder

        # The catalog's blocking ray.get calls run in the tool threads, never on the event loop; Ray's
        # warning cannot tell the two apart.
        os.environ["RAY_WARN_BLOCKING_GET_INSIDE_ASYNC"] = "0"
        self.worker_id, self.spec, self.tasks = worker_id, spec, tasks
        self.settings = EpisodeSettings(**spec.settings)
        self.catalog = remote_catalog(meta, catalog_actors, mode=spec.search_mode)
        self.folder = RunFolder(spec.run_dir)
        self.rss_start_mb = resident_mb()
        self._started = False
        self.finished = 0
        # This worker's share of each endpoint's window (the limiter actors), injected into the chat client that
        # every episode's LLM agent shares.
        limiter_settings = LimiterSettings(**(spec.limiter_settings or {}))
        self.limiters = {key: SyncedLimiter(handle, worker_id, limiter_settings) for key, handle in limiters.items()}
        model = llm_settings(spec.episode.model_cfg)
        self.chat = None if model is None else ChatClient(model, limiter=self.limiters.get(endpoint_key(model)))

    def ready(self) -> str:
        return ray.get_runtime_context().get_node_id()

    async def run(self, unit: dict) -> Trajectory:
        """One unit's episode, checkpointed here; the trajectory goes back to the driver for its on_done."""
        if not self._started:
            widen_thread_pool(self.spec.concurrency)
            self._started = True
        unit_obj = Unit(**unit)
        every = self.spec.episode.checkpoint_every_s   # the episode in flight, checkpointed as runner=local does
        checkpoints = None if every is None else TurnCheckpoints(self.folder.write_inflight, every)
        traj = await run_unit(unit_obj, self.tasks[unit_obj.task_id], self.catalog, self.settings,
                              self.spec.episode, chat=self.chat, on_turn=checkpoints)
        if checkpoints is not None:
            await checkpoints.settle()   # before the final record's append removes the checkpoint
        await asyncio.to_thread(self.folder.append_trajectory, self.worker_id, traj)
        self.finished += 1
        return traj

    async def stats(self) -> dict:
        import resource

        for limiter in self.limiters.values():   # report the last outcomes before the driver reads the actors
            await limiter.flush()
        return {"catalog_retried_calls": self.catalog.retried_calls, "finished": self.finished,
                "search_cache": self.catalog.search_cache_stats(),
                "rss_start_mb": self.rss_start_mb,
                "rss_peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


EpisodeWorker = ray.remote(EpisodeWorkerService)


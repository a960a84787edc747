"""runner=ray's driver loop over the episode workers (ray_worker.py).

It hands a unit to a worker only when that worker has a free slot (credit-based backpressure: a worker never
holds more than its share of `runner.concurrency`), keeps a task's units on one worker (`TaskAffineQueue`),
requeues the unfinished units of a worker that dies and starts a replacement, and counts what it retried.
"""
from __future__ import annotations

import itertools
import math
import zlib
from collections import Counter, deque
from dataclasses import dataclass
from typing import Any

import ray
from ray.exceptions import GetTimeoutError, RayActorError, RayTaskError

from ecab.core.unit import Unit, unit_key
from ecab.env.agent_protocol import EndpointRefused
from ecab.runner.protocol import ClusterStats, OnDone, RunnerStats
from ecab.runner.ray_catalog import CatalogPool
from ecab.runner.ray_cluster import RayOptions
from ecab.runner.ray_worker import EpisodeWorker, WorkerSpec


@dataclass
class _Worker:
    wid: str
    handle: Any
    in_flight: int = 0
    alive: bool = True


class TaskAffineQueue:
    """The driver's pending units, one queue per worker: a task's units go to one worker (its page cache sees
    the repeats), an idle worker takes from the longest queue; see docs/decisions.md#task-affine."""

    def __init__(self, units: list[dict], slots: int):
        self.queues: list[deque] = [deque() for _ in range(max(1, slots))]
        self.size = 0
        for unit in units:
            self.push(unit)

    def home(self, unit: dict) -> int:
        return zlib.crc32(str(unit["task_id"]).encode()) % len(self.queues)

    def __len__(self) -> int:
        return self.size

    def push(self, unit: dict, *, front: bool = False) -> None:
        queue = self.queues[self.home(unit)]
        queue.appendleft(unit) if front else queue.append(unit)
        self.size += 1

    def pop_for(self, slot: int) -> dict:
        queue = self.queues[slot] or max(self.queues, key=len)
        self.size -= 1
        return queue.popleft()


class RayDriver:
    """The driver loop over episode workers (see the module docstring). Starting it starts the workers."""

    def __init__(self, spec: WorkerSpec, tasks: dict, pool: CatalogPool, options: RayOptions, *,
                 limiters: dict[str, Any] | None = None):
        self.spec, self.pool, self.options = spec, pool, options
        self.limiters = limiters or {}
        self.tasks_ref = ray.put(tasks)
        self.per_worker = max(1, math.ceil(options.concurrency / options.workers))
        self.spec.concurrency = self.per_worker
        self.workers: list[_Worker] = []
        self.generation = itertools.count()
        self.counts: Counter = Counter()
        for index in range(options.workers):
            self.workers.append(self._start_worker(index))
        self.nodes = set(ray.get([w.handle.ready.remote() for w in self.workers]))

    def _start_worker(self, index: int) -> _Worker:
        wid = f"ray-w{index:02d}-g{next(self.generation):02d}"
        handle = EpisodeWorker.options(num_cpus=self.options.worker_cpus, max_restarts=0,
                                       max_concurrency=self.per_worker + 16,
                                       scheduling_strategy="SPREAD").remote(
            wid, self.spec, self.tasks_ref, self.pool.meta, self.pool.actors, self.limiters)
        return _Worker(wid, handle)

    def run(self, units: list[Unit], *, progress: bool = True, on_done: OnDone | None = None) -> RunnerStats:
        from tqdm import tqdm

        queue = TaskAffineQueue([u.as_dict() for u in units], len(self.workers))
        in_flight: dict[Any, tuple[_Worker, dict]] = {}
        handed: Counter = Counter()
        bar = tqdm(total=len(units), desc="episodes", unit="ep", disable=not progress, dynamic_ncols=True)
        try:
            while queue or in_flight:
                self._hand_out(queue, in_flight, handed)
                if not in_flight:
                    raise RuntimeError("no live episode worker left (worker_restarts exhausted)")
                refs = list(in_flight)
                ready, _ = ray.wait(refs, num_returns=1, timeout=1.0)
                if ready:   # then take every other finished one too, without waiting
                    ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
                for ref in ready:
                    worker, unit = in_flight.pop(ref)
                    worker.in_flight -= 1
                    try:
                        traj = ray.get(ref)
                    except RayActorError:
                        self._lost(worker, unit, queue)
                        continue
                    except RayTaskError as exc:   # the endpoint refuses every request: stop the run
                        cause = getattr(exc, "cause", None)
                        if isinstance(cause, EndpointRefused):
                            raise EndpointRefused(str(cause)) from None
                        raise
                    self.counts["infra_reruns"] += traj.attempts - 1
                    if traj.attempts > 1 or handed[unit_key(unit)] > 1:
                        self.counts["retried_units"] += 1
                    bar.update(1)
                    if on_done:
                        on_done(traj)
        finally:
            bar.close()
        return self.stats()

    def _hand_out(self, queue: TaskAffineQueue, in_flight: dict, handed: Counter) -> None:
        """Give each live worker units up to its share; the rest wait here (backpressure)."""
        for slot, worker in enumerate(self.workers):
            while worker.alive and queue and worker.in_flight < self.per_worker:
                unit = queue.pop_for(slot)
                handed[unit_key(unit)] += 1
                in_flight[worker.handle.run.remote(unit)] = (worker, unit)
                worker.in_flight += 1

    def _lost(self, worker: _Worker, unit: dict, queue: TaskAffineQueue) -> None:
        """A worker died: queue its unit again (at the front) and replace the worker once."""
        queue.push(unit, front=True)
        self.counts["requeued_units"] += 1
        if not worker.alive:
            return
        worker.alive = False
        self.counts["worker_deaths"] += 1
        if self.counts["worker_restarts"] < self.options.worker_restarts:
            self.counts["worker_restarts"] += 1
            index = self.workers.index(worker)
            replacement = self._start_worker(index)
            self.workers[index] = replacement

    def stats(self) -> RunnerStats:
        retried_calls, memory, search_cache = 0, [], Counter[str]()
        for worker in self.workers:
            if worker.alive:
                try:
                    worker_stats = ray.get(worker.handle.stats.remote(), timeout=30)
                except (RayActorError, GetTimeoutError):
                    continue
                retried_calls += worker_stats["catalog_retried_calls"]
                search_cache.update(worker_stats["search_cache"])
                memory.append({k: round(worker_stats[k], 1) for k in ("rss_start_mb", "rss_peak_mb")})
        limiters = {}
        for key, handle in self.limiters.items():
            limiters[key] = ray.get(handle.stats.remote())
        cluster = ClusterStats(workers=self.options.workers, nodes=len(self.nodes | self.pool.nodes),
                               catalog_shards=len(self.pool.actors), catalog_replicas=len(self.pool.actors[0]),
                               worker_deaths=self.counts["worker_deaths"],
                               worker_restarts=self.counts["worker_restarts"],
                               catalog_retried_calls=retried_calls, worker_memory_mb=memory,
                               search_cache=dict(search_cache))
        return RunnerStats(runner="ray", concurrency=self.options.concurrency,
                           retried_units=self.counts["retried_units"], infra_reruns=self.counts["infra_reruns"],
                           requeued_units=self.counts["requeued_units"],
                           catalog_actor_restarts=self.pool.restarts(), cluster=cluster, limiters=limiters)

    def shutdown(self) -> None:
        for worker in self.workers:
            ray.kill(worker.handle)

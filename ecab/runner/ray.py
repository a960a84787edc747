"""runner=ray: async episode workers, one limiter per endpoint, and the driver loop.

Topology (docs/architecture.md §7.2):
- `CatalogPool` (ray_catalog.py): `shards x replicas` catalog actors, each opening its shard read-only; episode
  workers read the catalog through the same `Catalog` facade as runner=local, over Ray shard clients
  (`remote_catalog`), so results are identical and no worker loads the embedding model.
- `EpisodeWorker`: an async actor running many episodes at once (`run_unit`, the same code as
  runner=local), appending each finished trajectory to its own part file.
- `RayRunner`: the driver. It hands a unit to a worker only when that worker has a free slot (credit-based
  backpressure: a worker never holds more than its share of `runner.concurrency`), requeues the unfinished
  units of a worker that dies and starts a replacement, and counts what it retried.
"""
from __future__ import annotations

import os

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import asyncio  # noqa: E402
import itertools  # noqa: E402
import math  # noqa: E402
import zlib  # noqa: E402
from collections import Counter, deque  # noqa: E402
from dataclasses import asdict, dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable  # noqa: E402

import ray  # noqa: E402
from ray.exceptions import GetTimeoutError, RayActorError, RayTaskError  # noqa: E402

from ecab.env.agent_protocol import EndpointRefused  # noqa: E402
from ecab.core.unit import unit_key  # noqa: E402
from ecab.runner.ray_catalog import CatalogPool, remote_catalog  # noqa: E402


def ensure_ray(address: str | None = None) -> bool:
    """Connect to Ray (a cluster when `address` is set, e.g. "auto"; else a local one, or the cluster of
    a `ray job submit` through RAY_ADDRESS). Returns True when this call started the connection."""
    if ray.is_initialized():
        return False
    kwargs: dict[str, Any] = {"include_dashboard": False, "logging_level": "warning", "log_to_driver": True}
    ray.init(address=address or None, **kwargs)
    return True


# ------------------------------------------------------------------------------------------- the workers

@dataclass
class WorkerSpec:
    """Everything an episode worker needs, as plain picklable values."""

    run_dir: str
    model_cfg: dict
    settings: dict                      # EpisodeSettings fields
    tool_options: dict
    search_mode: str
    max_attempts: int = 2
    step_delay_s: float = 0.0
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
        self.rss_start_mb = _rss_mb()
        self._started = False
        self.finished = 0
        # This worker's share of each endpoint's window (the limiter actors), injected into the chat client that
        # every episode's LLM agent shares.
        limiter_settings = LimiterSettings(**(spec.limiter_settings or {}))
        self.limiters = {key: SyncedLimiter(handle, worker_id, limiter_settings) for key, handle in limiters.items()}
        model = llm_settings(spec.model_cfg)
        self.chat = None if model is None else ChatClient(model, limiter=self.limiters.get(endpoint_key(model)))

    def ready(self) -> str:
        return ray.get_runtime_context().get_node_id()

    async def run(self, unit: dict) -> dict:
        from ecab.runner.local import run_unit, widen_thread_pool
        from ecab.core.unit import Unit

        if not self._started:
            widen_thread_pool(self.spec.concurrency)
            self._started = True
        unit_obj = Unit(**unit)
        traj = await run_unit(unit_obj, self.tasks[unit_obj.task_id], self.catalog, self.spec.model_cfg,
                              self.settings, tool_options=self.spec.tool_options,
                              max_attempts=self.spec.max_attempts, step_delay_s=self.spec.step_delay_s,
                              chat=self.chat)
        await asyncio.to_thread(self.folder.append_trajectory, self.worker_id, traj)
        self.finished += 1
        return {"key": list(unit_obj.key), "termination": traj.termination, "attempts": traj.attempts}

    async def stats(self) -> dict:
        import resource

        for limiter in self.limiters.values():   # report the last outcomes before the driver reads the actors
            await limiter.flush()
        return {"catalog_retried_calls": self.catalog.retried_calls, "finished": self.finished,
                "search_cache": self.catalog.search_cache_stats(),
                "rss_start_mb": self.rss_start_mb,
                "rss_peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


EpisodeWorker = ray.remote(EpisodeWorkerService)


# -------------------------------------------------------------------------------------------- the driver

@dataclass
class RayOptions:
    workers: int = 2
    concurrency: int = 256            # episodes in flight over all workers
    worker_cpus: float = 0.0          # I/O bound: reserving CPUs could leave actors pending on small nodes
    catalog_cpus: float = 0.0
    catalog_max_concurrency: int = 16
    worker_restarts: int = 3          # dead workers replaced at most this many times per run

    @classmethod
    def from_config(cls, runner_cfg: Any) -> "RayOptions":
        get = runner_cfg.get if hasattr(runner_cfg, "get") else (lambda k, d=None: getattr(runner_cfg, k, d))
        opts = cls(**{f: get(f, default) for f, default in asdict(cls()).items()})
        if opts.workers < 1 or opts.concurrency < 1:
            raise ValueError(f"runner.workers and runner.concurrency must be >= 1 "
                             f"(got {opts.workers}, {opts.concurrency})")
        return opts


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


class RayRunner:
    """The driver loop over episode workers (see the module docstring)."""

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

    def run(self, units: list, *, progress: bool = True,
            on_done: Callable[["RayRunner", dict, int], None] | None = None) -> dict:
        from tqdm import tqdm

        queue = TaskAffineQueue([u.as_dict() for u in units], len(self.workers))
        in_flight: dict[Any, tuple[_Worker, dict]] = {}
        handed: Counter = Counter()
        done = 0
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
                        result = ray.get(ref)
                    except RayActorError:
                        self._lost(worker, unit, queue)
                        continue
                    except RayTaskError as exc:   # the endpoint refuses every request: stop the run
                        cause = getattr(exc, "cause", None)
                        if isinstance(cause, EndpointRefused):
                            raise EndpointRefused(str(cause)) from None
                        raise
                    done += 1
                    self.counts["infra_reruns"] += result["attempts"] - 1
                    if result["attempts"] > 1 or handed[tuple(result["key"])] > 1:
                        self.counts["retried_units"] += 1
                    bar.update(1)
                    if on_done:
                        on_done(self, result, done)
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

    def stats(self) -> dict:
        retried_calls, memory, search_cache = 0, [], Counter()
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
        return {"runner": "ray", "workers": self.options.workers, "concurrency": self.options.concurrency,
                "nodes": len(self.nodes | self.pool.nodes), "catalog_shards": len(self.pool.actors), "catalog_replicas": len(self.pool.actors[0]),
                "retried_units": self.counts["retried_units"], "requeued_units": self.counts["requeued_units"],
                "infra_reruns": self.counts["infra_reruns"], "worker_deaths": self.counts["worker_deaths"],
                "worker_restarts": self.counts["worker_restarts"],
                "catalog_actor_restarts": self.pool.restarts(), "catalog_retried_calls": retried_calls,
                "worker_memory_mb": memory, "search_cache": dict(search_cache),
                "limiters": limiters}

    def shutdown(self) -> None:
        for worker in self.workers:
            ray.kill(worker.handle)


def _rss_mb() -> float:
    """This process's resident memory now (Linux /proc; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return 0.0


def start_limiters(model_cfgs: list[dict], settings: dict) -> dict[str, Any]:
    """One limiter actor (running LimiterService) per distinct LLM endpoint, the OpenAI API's (base_url null)
    included; offline agents have no endpoint and need none."""
    from ecab.agents import llm_settings
    from ecab.llm.limits import LimiterService, endpoint_key

    actor_cls = ray.remote(LimiterService)
    limiters: dict[str, Any] = {}
    for model_cfg in model_cfgs:
        model = llm_settings(model_cfg)
        if model is None:
            continue
        key = endpoint_key(model)
        if key not in limiters:
            # acquire() waits inside the actor, so allow as many concurrent calls as episodes in flight.
            limiters[key] = actor_cls.options(num_cpus=0, max_concurrency=100_000).remote(settings)
    return limiters


def run_units_on_ray(units: list, tasks: dict, catalog_path: str | Path, meta: dict, spec: WorkerSpec,
                     options: RayOptions, *, replicas: int = 1, address: str | None = None,
                     pool: CatalogPool | None = None, progress: bool = True,
                     on_done: Callable[[RayRunner, dict, int], None] | None = None) -> dict:
    """Run `units` on Ray and return the runner stats. A `pool` passed in (a budget study) is reused and
    left running; otherwise one is started for this run and stopped after it."""
    ensure_ray(address)
    own_pool = pool is None
    if own_pool:
        pool = CatalogPool(catalog_path, meta, replicas, num_cpus=options.catalog_cpus,
                           max_concurrency=options.catalog_max_concurrency)
    limiters = start_limiters([spec.model_cfg], spec.limiter_settings or {})
    runner = RayRunner(spec, tasks, pool, options, limiters=limiters)
    try:
        return runner.run(units, progress=progress, on_done=on_done)
    finally:
        runner.shutdown()
        for handle in limiters.values():
            ray.kill(handle)
        if own_pool:
            pool.shutdown()


def run_config(cfg: Any, units: list, tasks: dict, catalog, folder, settings, *, pool: CatalogPool | None = None,
               on_done: Callable[[RayRunner, dict, int], None] | None = None) -> dict:
    """runner=ray from the resolved config (what `ecab.run` calls); returns the runner stats."""
    from omegaconf import OmegaConf

    from ecab.config import ConfigError
    from ecab.runner.local import limiter_settings, runner_setting, tool_options

    try:
        options = RayOptions.from_config(cfg.runner)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"runner: {exc}") from None
    replicas = int(OmegaConf.select(cfg, "catalog.replicas", default=1) or 1)
    if not units:
        return {"runner": "ray", "retried_units": 0, "requeued_units": 0, "infra_reruns": 0,
                "catalog_actor_restarts": 0, "limiters": {}}
    spec = WorkerSpec(run_dir=str(Path(folder.path).resolve()),
                      model_cfg=OmegaConf.to_container(cfg.model, resolve=True),
                      settings=asdict(settings), tool_options=tool_options(cfg),
                      search_mode=getattr(catalog, "mode", "hybrid"),
                      max_attempts=int(runner_setting(cfg, "max_attempts", 2)),
                      step_delay_s=float(runner_setting(cfg, "step_delay_s", 0.0)),
                      limiter_settings=asdict(limiter_settings(cfg)))
    return run_units_on_ray(units, tasks, Path(catalog.path).resolve(), catalog.meta, spec, options,
                            replicas=replicas, address=runner_setting(cfg, "address", None), pool=pool,
                            progress=bool(cfg.run.progress), on_done=on_done)

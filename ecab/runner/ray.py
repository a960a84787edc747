"""runner=ray: catalog actors, async episode workers, one limiter per endpoint, and the driver loop.

Topology (docs/architecture.md §7.2):
- `CatalogPool`: `shards x replicas` catalog actors. Each opens its LanceDB shard read-only inside the
  actor (`open_shard`), so the catalog directory must be readable from every node: the local disk on one
  machine, a shared file system (NFS, EFS, a PVC) on a cluster.
- `RemoteCatalog`: the `CatalogReader` that episode workers use. A search fans out to one replica of every
  shard and merges with the same `fuse` as the local catalog (so results are identical); a point lookup
  goes to the owning shard. Query embeddings are computed on a catalog actor too, so episode workers stay
  light (no embedding model in them). A call to a dead actor is retried on another replica, or - with one replica -
  after Ray restarts the actor (`max_restarts=-1`).
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
import heapq  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402
import zlib  # noqa: E402
from collections import Counter, deque  # noqa: E402
from dataclasses import asdict, dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable, Iterator  # noqa: E402

import ray  # noqa: E402
from ray.exceptions import GetTimeoutError, RayActorError, RayTaskError  # noqa: E402

from ecab.env.agent_protocol import EndpointRefused  # noqa: E402
from ecab.catalog.base import SearchHit, SearchPage  # noqa: E402
from ecab.catalog.store import (HYBRID_DEPTH, MODES, SearchPageCache, ShardCandidates, batched_products, fuse,  # noqa: E402
                                 search_args, shard_of)  # noqa: E402
from ecab.schema import Product, Review  # noqa: E402

SWITCH_REPLICA_AFTER_S = 10.0   # a catalog call stalled this long moves to another replica
SUSPECT_FOR_S = 30.0            # a replica that failed is tried last for this long


def ensure_ray(address: str | None = None) -> bool:
    """Connect to Ray (a cluster when `address` is set, e.g. "auto"; else a local one, or the cluster of
    a `ray job submit` through RAY_ADDRESS). Returns True when this call started the connection."""
    if ray.is_initialized():
        return False
    kwargs: dict[str, Any] = {"include_dashboard": False, "logging_level": "warning", "log_to_driver": True}
    ray.init(address=address or None, **kwargs)
    return True


# -------------------------------------------------------------------------------------------- run stats

@ray.remote(num_cpus=0)
class RunStats:
    """Counters that survive the actors reporting them (a restarted catalog actor reports itself here)."""

    def __init__(self) -> None:
        self.counts: Counter = Counter()

    def add(self, key: str, n: int = 1) -> None:
        self.counts[key] += n

    def get(self) -> dict[str, int]:
        return dict(self.counts)


# ------------------------------------------------------------------------------------------ catalog side

class CatalogShardService:
    """The body of a catalog actor: one shard, opened read-only inside the actor process."""

    def __init__(self, path: str, index: int, stats_name: str | None = None, load_embedder: bool = True):
        from ecab.catalog.store import open_shard

        self.index = index
        self.shard = open_shard(path, index)
        if load_embedder:   # now, not at the first query: a (re)starting actor takes calls only when warm
            self.encode_query("warm up")
        if stats_name is not None and _was_restarted():
            ray.get_actor(stats_name).add.remote("catalog_actor_restarts", 1)

    def ready(self) -> str:
        return ray.get_runtime_context().get_node_id()

    def encode_query(self, query: str):
        """The query embedding, computed here so episode workers never load the embedding model."""
        embedder = self.shard.embedder
        if embedder.model_name != self.shard.meta["embedding_model"]:
            raise ValueError(f"catalog built with {self.shard.meta['embedding_model']}, "
                             f"query embedder is {embedder.model_name}")
        return embedder.encode_query(query)

    def keyword_leg(self, query: str, depth: int, where: str | None) -> list[SearchHit]:
        return self.shard.keyword_leg(query, depth, where)

    def vector_leg(self, vector, depth: int, where: str | None) -> list[SearchHit]:
        return self.shard.vector_leg(vector, depth, where)

    def hybrid_candidates(self, query: str, depth: int, where: str | None) -> ShardCandidates:
        """Both hybrid legs with the query embedded here: on a one-shard catalog a search is one actor call
        instead of three (keyword leg, embedding, vector leg)."""
        return ShardCandidates(fts=self.keyword_leg(query, depth, where),
                               vector=self.vector_leg(self.encode_query(query), depth, where))

    def candidates(self, mode: str, query: str, vector, depth: int, where: str | None) -> ShardCandidates:
        return self.shard.candidates(mode, query, vector, depth=depth, where=where)

    def product_data(self, product_id: str) -> str | None:
        return self.shard.product_data(product_id)

    def products_data(self, product_ids: list[str]) -> dict[str, str]:
        return self.shard.products_data(product_ids)

    def review_rows(self, product_id: str) -> tuple[str, ...]:
        return self.shard.review_rows(product_id)

    def search_reviews(self, product_id: str, query: str, limit: int, mode: str) -> list[str]:
        vector = self.encode_query(query) if mode in ("hybrid", "vector") else None
        return self.shard.search_reviews(product_id, query, vector, limit=limit, mode=mode)

    def store_rows(self, store: str) -> tuple[tuple[int, str, str], ...]:
        return self.shard.store_rows(store)

    def all_rows(self) -> list[tuple[int, str]]:
        return list(self.shard.iter_rows(1024))


CatalogShardActor = ray.remote(CatalogShardService)


def _was_restarted() -> bool:
    import warnings

    with warnings.catch_warnings():   # the property warns about an internal deprecated accessor
        warnings.simplefilter("ignore")
        return bool(ray.get_runtime_context().was_current_actor_reconstructed)


class CatalogPool:
    """`shards x replicas` catalog actors for one built catalog; shareable by many runs (a budget study)."""

    def __init__(self, path: str | Path, meta: dict, replicas: int = 1, *, num_cpus: float = 0,
                 max_concurrency: int = 16, load_embedder: bool = True):
        if replicas < 1:
            raise ValueError(f"catalog.replicas must be >= 1, got {replicas}")
        self.path, self.meta = str(path), meta
        # The actors find the stats actor by name: a restarted actor gets its constructor arguments again,
        # and Ray warns (and a restart can fail) when those include a handle held in the object store.
        stats_name = f"ecab-run-stats-{uuid.uuid4().hex}"
        self.stats = RunStats.options(name=stats_name).remote()
        options = {"num_cpus": num_cpus, "max_restarts": -1, "max_task_retries": 0,
                   "max_concurrency": max_concurrency, "scheduling_strategy": "SPREAD"}
        self.actors: list[list[Any]] = [
            [CatalogShardActor.options(**options).remote(self.path, shard, stats_name, load_embedder)
             for _ in range(replicas)]
            for shard in range(int(meta["shards"]))]
        # Fail fast (a path the actors cannot read, a missing shard) instead of at the first tool call.
        self.nodes = set(ray.get([a.ready.remote() for row in self.actors for a in row]))

    def restarts(self) -> int:
        """Catalog actors Ray has restarted (each reports itself once its constructor ran again)."""
        deadline = time.monotonic() + 120
        for row in self.actors:     # let a restart in progress finish before counting
            for actor in row:
                while time.monotonic() < deadline:
                    try:
                        ray.get(actor.ready.remote(), timeout=30)
                        break
                    except (RayActorError, GetTimeoutError):   # unavailable while it restarts
                        time.sleep(0.5)
        return int(ray.get(self.stats.get.remote()).get("catalog_actor_restarts", 0))

    def shutdown(self) -> None:
        for row in self.actors:
            for actor in row:
                ray.kill(actor)
        ray.kill(self.stats)


class CatalogUnavailable(RuntimeError):
    """Every replica of a shard kept failing past the retry deadline."""


class RemoteCatalog:
    """`CatalogReader` over catalog actors (see the module docstring). Blocking, like LanceCatalog: the tool
    box calls it from worker threads."""

    def __init__(self, meta: dict, actors: list[list[Any]], *, mode: str = "hybrid",
                 call_timeout_s: float = 120.0, retry_deadline_s: float = 300.0):
        if mode not in MODES:
            raise ValueError(f"unknown search mode {mode!r} (expected one of {', '.join(MODES)})")
        self.meta, self.actors, self.mode = meta, actors, mode
        self.fingerprint: str = meta["fingerprint"]
        self.call_timeout_s, self.retry_deadline_s = call_timeout_s, retry_deadline_s
        self._turns = [itertools.count() for _ in actors]
        self._suspect: dict[int, float] = {}     # id(actor handle) -> avoid it until this time
        self._lock = threading.Lock()
        self.retried_calls = 0
        self._pages = SearchPageCache()

    # -- calling actors, with retries ------------------------------------------------------------------

    def _replicas(self, shard: int) -> list[Any]:
        """The shard's replicas, starting at the next one in turn (spreads load), replicas that failed
        recently last (calls sent to a restarting actor would wait for its restart)."""
        row = self.actors[shard]
        start = next(self._turns[shard]) % len(row)
        order = row[start:] + row[:start]
        now = time.monotonic()
        return sorted(order, key=lambda a: self._suspect.get(id(a), 0.0) > now)

    def _timeout(self, shard: int) -> float:
        """With another replica to try, give up on a stalled one sooner."""
        return min(self.call_timeout_s, SWITCH_REPLICA_AFTER_S) if len(self.actors[shard]) > 1 \
            else self.call_timeout_s

    def _note_retry(self, actor=None) -> None:
        with self._lock:
            self.retried_calls += 1
            if actor is not None:
                self._suspect[id(actor)] = time.monotonic() + SUSPECT_FOR_S

    def _call(self, shard: int, method: str, *args) -> Any:
        deadline = time.monotonic() + self.retry_deadline_s
        for attempt in itertools.count():
            for actor in self._replicas(shard):
                try:
                    return ray.get(getattr(actor, method).remote(*args), timeout=self._timeout(shard))
                except (RayActorError, GetTimeoutError) as exc:
                    self._note_retry(actor)
                    error = exc
            if time.monotonic() > deadline:
                raise CatalogUnavailable(f"catalog shard {shard}: every replica failed for "
                                         f"{self.retry_deadline_s:.0f} s ({error})")
            time.sleep(min(2.0, 0.05 * 2 ** attempt))   # a restarting actor needs a moment
        raise AssertionError("unreachable")

    def _fanout(self, method: str, shards: list[int], args_of: Callable[[int], tuple]) -> list[Any]:
        """Call every listed shard at once (one replica each); a failed part is retried on its own."""
        targets = [self._replicas(s)[0] for s in shards]
        refs = [getattr(actor, method).remote(*args_of(s)) for s, actor in zip(shards, targets)]
        return [self._result(shard, actor, ref, method, args_of(shard))
                for shard, actor, ref in zip(shards, targets, refs)]

    def _result(self, shard: int, actor, ref, method: str, args: tuple) -> Any:
        """The answer of a call already sent to `actor`, or - if it died or stalled - of a retry."""
        try:
            return ray.get(ref, timeout=self._timeout(shard))
        except (RayActorError, GetTimeoutError):
            self._note_retry(actor)
            return self._call(shard, method, *args)

    # -- helpers ---------------------------------------------------------------------------------------

    @property
    def n_shards(self) -> int:
        return len(self.actors)

    def _encode(self, query: str):
        """Embed the query on a catalog actor (spread by query) rather than in this process."""
        return self._call(shard_of(query, self.n_shards), "encode_query", query)

    def _owner(self, product_id: str) -> int:
        return shard_of(product_id, self.n_shards)

    # -- CatalogReader ---------------------------------------------------------------------------------

    def count(self) -> int:
        return int(self.meta["counts"]["products"])

    def search_cache_stats(self) -> dict[str, int]:
        return self._pages.stats()

    def search(self, query: str, *, limit: int = 20, offset: int = 0, mode: str | None = None,
               where: str | None = None) -> SearchPage:
        return self._pages.search(query, mode or self.mode, limit, offset, where, self._search)

    def _search(self, query: str, mode: str, limit: int, offset: int, where: str | None) -> SearchPage:
        shards = list(range(self.n_shards))
        if mode == "hybrid" and self.n_shards == 1:
            depth = max(HYBRID_DEPTH, offset + limit)
            parts = [self._call(0, "hybrid_candidates", query, depth, where)]
            return fuse(mode, parts, limit=limit, offset=offset, depth=depth)
        if mode == "hybrid":
            depth = max(HYBRID_DEPTH, offset + limit)
            # The keyword legs run on the actors while the query is embedded on one of them (embedding it
            # on every shard's actor would cost more than the two extra calls).
            targets = [self._replicas(s)[0] for s in shards]
            keyword = [a.keyword_leg.remote(query, depth, where) for a in targets]
            vector = self._encode(query)
            nearest = self._fanout("vector_leg", shards, lambda s: (vector, depth, where))
            fts = [self._result(s, a, ref, "keyword_leg", (query, depth, where))
                   for s, a, ref in zip(shards, targets, keyword)]
            parts = [ShardCandidates(fts=f, vector=v) for f, v in zip(fts, nearest)]
            return fuse(mode, parts, limit=limit, offset=offset, depth=depth)
        vector = self._encode(query) if mode == "vector" else None
        depth = max(offset + limit, 1)
        parts = self._fanout("candidates", shards, lambda s: (mode, query, vector, depth, where))
        return fuse(mode, parts, limit=limit, offset=offset, depth=depth)

    def get_product(self, product_id: str) -> Product | None:
        data = self._call(self._owner(product_id), "product_data", product_id)
        return Product.from_dict(json.loads(data)) if data is not None else None

    def get_products(self, product_ids: list[str]) -> list[Product]:
        by_shard: dict[int, list[str]] = {}
        for pid in product_ids:
            by_shard.setdefault(self._owner(pid), []).append(pid)
        found: dict[str, str] = {}
        for part in self._fanout("products_data", list(by_shard), lambda s: (by_shard[s],)):
            found.update(part)
        return [Product.from_dict(json.loads(found[pid])) for pid in product_ids if pid in found]

    def get_reviews(self, product_id: str, limit: int = 20) -> list[Review]:
        rows = self._call(self._owner(product_id), "review_rows", product_id)
        return [Review.from_dict(json.loads(row)) for row in rows[:max(0, limit)]]

    def search_reviews(self, product_id: str, query: str, limit: int = 5, *,
                       mode: str | None = None) -> list[Review]:
        mode, limit, _ = search_args(query, mode or self.mode, limit, 0)
        if mode is None or limit <= 0:
            return []
        rows = self._call(self._owner(product_id), "search_reviews", product_id, query, limit, mode)
        return [Review.from_dict(json.loads(row)) for row in rows]

    def store_products(self, store: str, *, limit: int = 20, offset: int = 0) -> SearchPage:
        parts = self._fanout("store_rows", list(range(self.n_shards)), lambda s: (store,))
        rows = list(heapq.merge(*parts))
        offset, limit = max(0, offset), max(0, limit)
        return SearchPage(hits=[SearchHit(pid, title, 0.0) for _, pid, title in rows[offset:offset + limit]],
                          total=len(rows))

    def iter_products(self, batch_size: int = 1024) -> Iterator[list[Product]]:
        """Every product in build order (pulls whole shards: for small catalogs and checks only)."""
        parts = self._fanout("all_rows", list(range(self.n_shards)), lambda s: ())
        yield from batched_products(heapq.merge(*parts), batch_size)


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
        from ecab.runner.store import RunFolder

        # The catalog's blocking ray.get calls run in the tool threads, never on the event loop; Ray's
        # warning cannot tell the two apart.
        os.environ["RAY_WARN_BLOCKING_GET_INSIDE_ASYNC"] = "0"
        self.worker_id, self.spec, self.tasks = worker_id, spec, tasks
        self.settings = EpisodeSettings(**spec.settings)
        self.catalog = RemoteCatalog(meta, catalog_actors, mode=spec.search_mode)
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
        from ecab.runner.units import Unit

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
                handed[_key(unit)] += 1
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


def _key(unit: dict) -> tuple:
    return (unit["task_id"], unit["model"], unit["budget"], unit["seed"], unit.get("trial", 0))


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

"""The catalog on Ray: `shards x replicas` catalog actors and the shard client episode workers reach them by.

- `CatalogPool` starts the actors. Each opens its LanceDB shard read-only inside the actor, so the catalog
  directory must be readable from every node: the local disk on one machine, a shared file system (NFS, EFS,
  a PVC) on a cluster. They embed queries too, so episode workers load no embedding model. Ray restarts them
  without limit (`max_restarts=-1`).
- `RayShardClient` is the `ShardClient` (ecab/catalog/shard_client.py) of one shard: it sends each call to a
  replica and, when that replica dies or stalls, retries on another one (or, with one replica, after Ray
  restarts it). `remote_catalog` puts one per shard under the same `Catalog` facade as a local catalog, so
  searches fan out, fuse and cache exactly as they do in one process (docs/architecture.md §7.2).
"""
from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import ray
from ray.exceptions import GetTimeoutError, RayActorError

from ecab.catalog.facade import Catalog
from ecab.catalog.search import ShardCandidates
from ecab.catalog.shard_client import LocalShardClient

SWITCH_REPLICA_AFTER_S = 10.0   # a catalog call stalled this long moves to another replica
SUSPECT_FOR_S = 30.0            # a replica that failed is tried last for this long


@ray.remote(num_cpus=0)
class RunStats:
    """Counters that survive the actors reporting them (a restarted catalog actor reports itself here)."""

    def __init__(self) -> None:
        self.counts: Counter = Counter()

    def add(self, key: str, n: int = 1) -> None:
        self.counts[key] += n

    def get(self) -> dict[str, int]:
        return dict(self.counts)


# ---------------------------------------------------------------------------------------------- the actors

class CatalogShardService:
    """The body of a catalog actor: one shard opened read-only inside the actor process, answering the
    `ShardClient` calls with what a `LocalShardClient` there answers."""

    def __init__(self, path: str, index: int, stats_name: str | None = None, load_embedder: bool = True):
        self.index = index
        self.client = LocalShardClient.open(path, index, overlap_legs=False)
        if load_embedder:   # now, not at the first query: a (re)starting actor takes calls only when warm
            self.encode_query("warm up")
        if stats_name is not None and _was_restarted():
            ray.get_actor(stats_name).add.remote("catalog_actor_restarts", 1)

    def ready(self) -> str:
        return ray.get_runtime_context().get_node_id()

    def encode_query(self, query: str):
        """The query embedding, computed here so episode workers never load the embedding model."""
        return self.client.encode_query(query).result()

    def keyword_leg(self, query: str, depth: int, where: str | None):
        return self.client.keyword_leg(query, depth, where).result()

    def vector_leg(self, vector, depth: int, where: str | None):
        return self.client.vector_leg(vector, depth, where).result()

    def hybrid_candidates(self, query: str, depth: int, where: str | None) -> ShardCandidates:
        """Both hybrid legs with the query embedded here: on a one-shard catalog a search is one actor call
        instead of three (keyword leg, embedding, vector leg)."""
        return self.client.hybrid_candidates(query, depth, where).result()

    def candidates(self, mode: str, query: str, vector, depth: int, where: str | None) -> ShardCandidates:
        return self.client.candidates(mode, query, vector, depth, where).result()

    def product_data(self, product_id: str) -> str | None:
        return self.client.product_data(product_id).result()

    def products_data(self, product_ids: list[str]) -> dict[str, str]:
        return self.client.products_data(product_ids).result()

    def review_rows(self, product_id: str) -> tuple[str, ...]:
        return self.client.review_rows(product_id).result()

    def search_reviews(self, product_id: str, query: str, limit: int, mode: str) -> list[str]:
        return self.client.search_reviews(product_id, query, limit, mode).result()

    def store_rows(self, store: str) -> tuple[tuple[int, str, str], ...]:
        return self.client.store_rows(store).result()

    def rows(self, batch_size: int) -> list[tuple[int, str]]:
        """The whole shard in build order, in one answer."""
        return list(self.client.rows(batch_size).result())


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
        self.stats = RunStats.options(name=stats_name).remote()  # type: ignore[attr-defined]  # @ray.remote is untyped
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


# ---------------------------------------------------------------------------------------------- the client

class CatalogUnavailable(RuntimeError):
    """Every replica of a shard kept failing past the retry deadline."""


class RayShardClient:
    """The `ShardClient` of one shard served by replica actors (`CatalogShardService`). A call goes to the next
    replica in turn; a replica that died or stalled is marked suspect (tried last for a while) and the call is
    retried until `retry_deadline_s`. Blocking in `result()`, like a local catalog: the tool box calls the
    facade from worker threads."""

    call_threads: int | None = None   # its calls wait on actors: a thread per episode in flight (widen_thread_pool)

    def __init__(self, index: int, replicas: list[Any], *, call_timeout_s: float = 120.0,
                 retry_deadline_s: float = 300.0):
        self.index, self.replicas = index, list(replicas)
        self.call_timeout_s, self.retry_deadline_s = call_timeout_s, retry_deadline_s
        self._turns = itertools.count()
        self._suspect: dict[int, float] = {}     # id(actor handle) -> avoid it until this time
        self._lock = threading.Lock()
        self.retried_calls = 0

    # -- calling actors, with retries ------------------------------------------------------------------

    def _ordered(self) -> list[Any]:
        """The replicas, starting at the next one in turn (spreads load), replicas that failed recently last
        (calls sent to a restarting actor would wait for its restart)."""
        start = next(self._turns) % len(self.replicas)
        order = self.replicas[start:] + self.replicas[:start]
        now = time.monotonic()
        return sorted(order, key=lambda a: self._suspect.get(id(a), 0.0) > now)

    def _timeout(self) -> float:
        """With another replica to try, give up on a stalled one sooner."""
        return min(self.call_timeout_s, SWITCH_REPLICA_AFTER_S) if len(self.replicas) > 1 else self.call_timeout_s

    def _note_retry(self, actor=None) -> None:
        with self._lock:
            self.retried_calls += 1
            if actor is not None:
                self._suspect[id(actor)] = time.monotonic() + SUSPECT_FOR_S

    def call(self, method: str, *args) -> Any:
        """`method(*args)` on a live replica, blocking, retried until `retry_deadline_s`."""
        deadline = time.monotonic() + self.retry_deadline_s
        for attempt in itertools.count():
            for actor in self._ordered():
                try:
                    return ray.get(getattr(actor, method).remote(*args), timeout=self._timeout())
                except (RayActorError, GetTimeoutError) as exc:
                    self._note_retry(actor)
                    error = exc
            if time.monotonic() > deadline:
                raise CatalogUnavailable(f"catalog shard {self.index}: every replica failed for "
                                         f"{self.retry_deadline_s:.0f} s ({error})")
            time.sleep(min(2.0, 0.05 * 2 ** attempt))   # a restarting actor needs a moment
        raise AssertionError("unreachable")

    def _send(self, method: str, *args) -> "ActorAnswer":
        """Send the call to the next replica now; the answer is waited for (and retried) in `result()`."""
        actor = self._ordered()[0]
        return ActorAnswer(self, actor, getattr(actor, method).remote(*args), method, args)

    # -- ShardClient -----------------------------------------------------------------------------------

    def encode_query(self, query: str) -> "ActorAnswer":
        return self._send("encode_query", query)

    def keyword_leg(self, query: str, depth: int, where: str | None) -> "ActorAnswer":
        return self._send("keyword_leg", query, depth, where)

    def vector_leg(self, vector, depth: int, where: str | None) -> "ActorAnswer":
        return self._send("vector_leg", vector, depth, where)

    def hybrid_candidates(self, query: str, depth: int, where: str | None) -> "ActorAnswer":
        return self._send("hybrid_candidates", query, depth, where)

    def candidates(self, mode: str, query: str, vector, depth: int, where: str | None) -> "ActorAnswer":
        return self._send("candidates", mode, query, vector, depth, where)

    def product_data(self, product_id: str) -> "ActorAnswer":
        return self._send("product_data", product_id)

    def products_data(self, product_ids: list[str]) -> "ActorAnswer":
        return self._send("products_data", product_ids)

    def review_rows(self, product_id: str) -> "ActorAnswer":
        return self._send("review_rows", product_id)

    def search_reviews(self, product_id: str, query: str, limit: int, mode: str) -> "ActorAnswer":
        return self._send("search_reviews", product_id, query, limit, mode)

    def store_rows(self, store: str) -> "ActorAnswer":
        return self._send("store_rows", store)

    def rows(self, batch_size: int) -> "ActorAnswer":
        return self._send("rows", batch_size)

    def clear_caches(self) -> None:
        """Nothing to do here: the actors keep their caches (every run starts its own actors)."""


class ActorAnswer:
    """A call in flight to one replica; `result()` waits for it, or - if the replica died or stalled - for
    the same call retried on the others."""

    def __init__(self, client: RayShardClient, actor: Any, ref: Any, method: str, args: tuple):
        self.client, self.actor, self.ref, self.method, self.args = client, actor, ref, method, args

    def result(self) -> Any:
        try:
            return ray.get(self.ref, timeout=self.client._timeout())
        except (RayActorError, GetTimeoutError):
            self.client._note_retry(self.actor)
            return self.client.call(self.method, *self.args)


def remote_catalog(meta: dict, actors: list[list[Any]], *, mode: str = "hybrid", call_timeout_s: float = 120.0,
                   retry_deadline_s: float = 300.0) -> Catalog:
    """The catalog facade over a pool's actors (`actors[shard]` = that shard's replicas)."""
    clients = [RayShardClient(index, row, call_timeout_s=call_timeout_s, retry_deadline_s=retry_deadline_s)
               for index, row in enumerate(actors)]
    return Catalog(meta, clients, mode=mode)

"""What the catalog facade asks of one shard (`ShardClient`), and the client for a shard in this process.

The facade (facade.py) holds one client per shard and never knows where the shard lives: in this process
(`LocalShardClient`, over a `CatalogShard`) or in a Ray actor (`ecab.runner.ray_catalog.RayShardClient`,
whose actor hosts a `LocalShardClient`). Every call starts the work and hands back a `Pending` answer, so the
facade can ask all shards at once and then wait: an actor call is in flight meanwhile, a local call is
usually already done (`Done`), and the local keyword leg runs on a thread while the query is embedded.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Generic, Iterator, Protocol, TypeVar

import numpy as np

from ecab.catalog.base import SearchHit
from ecab.catalog.search import EMBEDDING_MODES, ShardCandidates
from ecab.catalog.shard import CatalogShard

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

# Runs hybrid's keyword leg beside the query embedding; LanceDB and torch both release the GIL.
_LEG_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="ecab-keyword-leg")


class Pending(Protocol[T_co]):
    """An answer on its way (a concurrent.futures.Future is one): `result()` waits for it or raises."""

    def result(self) -> T_co: ...


@dataclass(frozen=True)
class Done(Generic[T]):
    """An answer computed at once."""

    value: T

    def result(self) -> T:
        return self.value


class ShardClient(Protocol):
    """One shard of a built catalog, as the facade sees it. Rows are product or review JSON strings (the
    facade parses them); a store's rows are (seq, product_id, title), a shard's rows (seq, product JSON)."""

    call_threads: int | None   # tool threads its calls can use in this process (None: calls wait elsewhere)
    retried_calls: int         # calls retried on another replica or after a restart (Ray)

    def encode_query(self, query: str) -> Pending[np.ndarray]: ...

    def keyword_leg(self, query: str, depth: int, where: str | None) -> Pending[list[SearchHit]]: ...

    def vector_leg(self, vector: np.ndarray, depth: int, where: str | None) -> Pending[list[SearchHit]]: ...

    def hybrid_candidates(self, query: str, depth: int, where: str | None) -> Pending[ShardCandidates]:
        """Both hybrid legs, the query embedded by the shard's side: a one-shard search in one call."""

    def candidates(self, mode: str, query: str, vector: np.ndarray | None, depth: int,
                   where: str | None) -> Pending[ShardCandidates]: ...

    def product_data(self, product_id: str) -> Pending[str | None]: ...

    def products_data(self, product_ids: list[str]) -> Pending[dict[str, str]]: ...

    def review_rows(self, product_id: str) -> Pending[tuple[str, ...]]: ...

    def search_reviews(self, product_id: str, query: str, limit: int, mode: str) -> Pending[list[str]]: ...

    def store_rows(self, store: str) -> Pending[tuple[tuple[int, str, str], ...]]: ...

    def rows(self, batch_size: int) -> Pending[Iterator[tuple[int, str]]]: ...

    def clear_caches(self) -> None:
        """Forget cached query vectors (benchmarks time cold searches)."""


class LocalShardClient:
    """A shard opened read-only in this process; queries are embedded here too (the catalog's embedder)."""

    call_threads = 16   # tool threads for catalog calls; see docs/decisions.md#catalog-threads
    retried_calls = 0   # a call in this process is never retried

    def __init__(self, shard: CatalogShard, *, overlap_legs: bool = True):
        # overlap_legs: run the keyword leg on a thread while the query is embedded. A Ray actor, whose
        # callers are already many threads, computes it inline instead.
        self.shard, self.overlap_legs = shard, overlap_legs

    @classmethod
    def open(cls, path: str | os.PathLike, index: int, meta: dict[str, Any] | None = None, *,
             embedder=None, overlap_legs: bool = True) -> "LocalShardClient":
        """Open shard `index` of the catalog at `path` (inside the process that uses it: never pickle one)."""
        return cls(CatalogShard(path, index, meta, embedder=embedder), overlap_legs=overlap_legs)

    @property
    def embedder(self):
        return self.shard.embedder

    def encode_query(self, query: str) -> Done[np.ndarray]:
        return Done(self.shard.embedder.encode_query(query))

    def keyword_leg(self, query: str, depth: int, where: str | None) -> Pending[list[SearchHit]]:
        if not self.overlap_legs:
            return Done(self.shard.keyword_leg(query, depth, where))
        return _LEG_POOL.submit(self.shard.keyword_leg, query, depth, where)

    def vector_leg(self, vector: np.ndarray, depth: int, where: str | None) -> Done[list[SearchHit]]:
        return Done(self.shard.vector_leg(vector, depth, where))

    def hybrid_candidates(self, query: str, depth: int, where: str | None) -> Done[ShardCandidates]:
        keyword = self.keyword_leg(query, depth, where)   # runs while the query is embedded (~10 ms)
        nearest = self.shard.vector_leg(self.shard.embedder.encode_query(query), depth, where)
        return Done(ShardCandidates(fts=keyword.result(), vector=nearest))

    def candidates(self, mode: str, query: str, vector: np.ndarray | None, depth: int,
                   where: str | None) -> Done[ShardCandidates]:
        return Done(self.shard.candidates(mode, query, vector, depth=depth, where=where))

    def product_data(self, product_id: str) -> Done[str | None]:
        return Done(self.shard.product_data(product_id))

    def products_data(self, product_ids: list[str]) -> Done[dict[str, str]]:
        return Done(self.shard.products_data(product_ids))

    def review_rows(self, product_id: str) -> Done[tuple[str, ...]]:
        return Done(self.shard.review_rows(product_id))

    def search_reviews(self, product_id: str, query: str, limit: int, mode: str) -> Done[list[str]]:
        vector = self.shard.embedder.encode_query(query) if mode in EMBEDDING_MODES else None
        return Done(self.shard.search_reviews(product_id, query, vector, limit=limit, mode=mode))

    def store_rows(self, store: str) -> Done[tuple[tuple[int, str, str], ...]]:
        return Done(self.shard.store_rows(store))

    def rows(self, batch_size: int) -> Done[Iterator[tuple[int, str]]]:
        """Streamed: the shard is read `batch_size` rows at a time as the caller iterates."""
        return Done(self.shard.iter_rows(batch_size))

    def clear_caches(self) -> None:
        self.shard.clear_query_cache()

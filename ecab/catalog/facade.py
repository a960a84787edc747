"""The catalog facade: one `CatalogReader` over the shards of a built catalog, wherever they live.

`Catalog` holds one `ShardClient` per shard (shard_client.py): `Catalog.open(path)` opens every shard in this
process; `ecab.runner.ray_catalog.remote_catalog` gives it clients of Ray actors instead. Either way the same
code fans a call out, fuses the shards' answers (search.fuse) and parses the rows, so the pages are identical
for any shard count and any placement:

- a search asks every shard for its candidates and fuses them once; a hybrid search sends the keyword legs
  first, embeds the query meanwhile (on the shard client that `shard_of(query)` picks, so Ray spreads the
  work) and then asks for the vector legs; on a one-shard catalog a hybrid search is one call;
- a point lookup goes to the product's shard (`shard_of`);
- a store's products and `iter_products` merge the shards' rows in build order.

Search pages are cached per facade (cache.SearchPageCache, docs/decisions.md#page-cache).
"""
from __future__ import annotations

import heapq
import json
import os
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from ecab.catalog.base import SearchHit, SearchPage
from ecab.catalog.cache import SearchPageCache
from ecab.catalog.layout import PRODUCTS, read_meta, shard_of
from ecab.catalog.search import ShardCandidates, check_mode, fuse, hybrid_depth, search_args
from ecab.catalog.shard_client import LocalShardClient, ShardClient
from ecab.schema import Product, Review


def batched_products(rows: Iterable[tuple[int, str]], batch_size: int) -> Iterator[list[Product]]:
    """Products from (build position, product JSON) rows merged across shards, in batches."""
    batch: list[Product] = []
    for _, data in rows:
        batch.append(Product.from_dict(json.loads(data)))
        if len(batch) >= batch_size:
            yield batch
            batch = []
    if batch:
        yield batch


class Catalog:
    """A built catalog opened read-only: implements `ecab.catalog.base.CatalogReader`."""

    def __init__(self, meta: dict[str, Any], shards: Sequence[ShardClient], *, mode: str = "hybrid",
                 path: str | os.PathLike | None = None):
        self.mode = check_mode(mode)
        self.meta = meta
        self.fingerprint: str = meta["fingerprint"]
        self.shards = list(shards)
        self.path = Path(path) if path is not None else None   # None: shards opened elsewhere (Ray actors)
        self._pages = SearchPageCache()
        self._knowledge = None

    @classmethod
    def open(cls, path: str | os.PathLike, *, mode: str = "hybrid", embedder=None) -> "Catalog":
        """Every shard of the catalog at `path`, opened in this process."""
        meta = read_meta(path)
        shards = [LocalShardClient.open(path, i, meta, embedder=embedder) for i in range(meta["shards"])]
        return cls(meta, shards, mode=mode, path=path)

    # -- about the clients -----------------------------------------------------------------------------

    @property
    def call_threads(self) -> int | None:
        """Tool threads the catalog's calls can use (runner/episode.py::widen_thread_pool); None when every
        call waits on another process."""
        limits = [c.call_threads for c in self.shards if c.call_threads]
        return min(limits) if limits else None

    @property
    def retried_calls(self) -> int:
        """Calls the shard clients had to retry (a Ray actor died or stalled)."""
        return sum(c.retried_calls for c in self.shards)

    def search_cache_stats(self) -> dict[str, int]:
        return self._pages.stats()

    def clear_caches(self) -> None:
        """Forget cached search pages and query vectors (benchmarks time cold searches)."""
        self._pages.clear()
        for client in self.shards:
            client.clear_caches()

    def warm_searches(self, texts: Iterable[str], limit: int) -> int:
        """Run these searches (first page, `limit` hits, this catalog's mode) now, one at a time: their pages go
        into the page cache and their query vectors into the vector cache, where a burst of episodes asking
        them later finds them. Returns how many ran. See docs/decisions.md#first-query-warm-up."""
        done = 0
        for text in texts:
            self.search(text, limit=limit)
            done += 1
        return done

    def _owner(self, product_id: str) -> ShardClient:
        return self.shards[shard_of(product_id, len(self.shards))]

    def _encode(self, query: str):
        """The query's embedding, from the client `shard_of(query)` picks (spreads the work over actors)."""
        return self.shards[shard_of(query, len(self.shards))].encode_query(query).result()

    # -- CatalogReader ---------------------------------------------------------------------------------

    def count(self) -> int:
        return int(self.meta["counts"][PRODUCTS])

    def search(self, query: str, *, limit: int = 20, offset: int = 0, mode: str | None = None,
               where: str | None = None) -> SearchPage:
        return self._pages.search(query, mode or self.mode, limit, offset, where, self._search)

    def cached_search(self, query: str, *, limit: int = 20, offset: int = 0, mode: str | None = None,
                      where: str | None = None) -> SearchPage | None:
        """`search`'s page if it is already cached, else None (nothing is searched); see SearchPageCache.cached."""
        return self._pages.cached(query, mode or self.mode, limit, offset, where)

    def _search(self, query: str, mode: str, limit: int, offset: int, where: str | None) -> SearchPage:
        if mode == "hybrid":
            depth = hybrid_depth(limit, offset)
            return fuse(mode, self._hybrid_parts(query, depth, where), limit=limit, offset=offset, depth=depth)
        vector = self._encode(query) if mode == "vector" else None
        depth = max(offset + limit, 1)
        pending = [c.candidates(mode, query, vector, depth, where) for c in self.shards]
        return fuse(mode, [p.result() for p in pending], limit=limit, offset=offset, depth=depth)

    def _hybrid_parts(self, query: str, depth: int, where: str | None) -> list[ShardCandidates]:
        """Both legs of every shard. The keyword legs run while the query is embedded once (embedding it on
        every shard would cost more than the extra round of calls)."""
        if len(self.shards) == 1:
            return [self.shards[0].hybrid_candidates(query, depth, where).result()]
        keyword = [c.keyword_leg(query, depth, where) for c in self.shards]
        vector = self._encode(query)
        nearest = [c.vector_leg(vector, depth, where) for c in self.shards]
        return [ShardCandidates(fts=k.result(), vector=v.result()) for k, v in zip(keyword, nearest)]

    def get_product(self, product_id: str) -> Product | None:
        data = self._owner(product_id).product_data(product_id).result()
        return Product.from_dict(json.loads(data)) if data is not None else None

    def get_products(self, product_ids: list[str]) -> list[Product]:
        by_shard: dict[int, list[str]] = {}
        for pid in product_ids:
            by_shard.setdefault(shard_of(pid, len(self.shards)), []).append(pid)
        pending = [self.shards[index].products_data(pids) for index, pids in by_shard.items()]
        found: dict[str, str] = {}
        for part in pending:
            found.update(part.result())
        return [Product.from_dict(json.loads(found[pid])) for pid in product_ids if pid in found]

    def get_reviews(self, product_id: str, limit: int = 20) -> list[Review]:
        rows = self._owner(product_id).review_rows(product_id).result()
        return [Review.from_dict(json.loads(row)) for row in rows[:max(0, limit)]]

    def search_reviews(self, product_id: str, query: str, limit: int = 5, *,
                       mode: str | None = None) -> list[Review]:
        mode, limit, _ = search_args(query, mode or self.mode, limit, 0)
        if mode is None or limit <= 0:
            return []
        rows = self._owner(product_id).search_reviews(product_id, query, limit, mode).result()
        return [Review.from_dict(json.loads(row)) for row in rows]

    def store_products(self, store: str, *, limit: int = 20, offset: int = 0) -> SearchPage:
        pending = [c.store_rows(store) for c in self.shards]
        rows = list(heapq.merge(*(p.result() for p in pending)))
        offset, limit = max(0, offset), max(0, limit)
        hits = [SearchHit(pid, title, 0.0) for _, pid, title in rows[offset:offset + limit]]
        return SearchPage(hits=hits, total=len(rows))

    def iter_products(self, batch_size: int = 1024) -> Iterator[list[Product]]:
        """Every product once, in build order whatever the shard count (streamed from local shards; a Ray
        actor sends its whole shard: for small catalogs and checks only)."""
        pending = [c.rows(batch_size) for c in self.shards]
        yield from batched_products(heapq.merge(*(p.result() for p in pending)), batch_size)

    # -- beyond CatalogReader --------------------------------------------------------------------------

    def knowledge(self):
        """What construction may know about this catalog, from its rows (ecab/catalog/knowledge.py);
        computed on first use, then kept."""
        if self._knowledge is None:
            from ecab.catalog.knowledge import CatalogKnowledge

            self._knowledge = CatalogKnowledge.from_products(
                lambda: (p for batch in self.iter_products() for p in batch))
        return self._knowledge

    def disk_bytes(self) -> int:
        if self.path is None:
            raise ValueError("a catalog of remote shards has no directory here to measure")
        return sum(p.stat().st_size for p in self.path.rglob("*") if p.is_file())

"""The shard reader: one shard of a built catalog (layout.py), opened read-only in the process that uses it.

It answers what one shard can: the legs of a search (`ShardCandidates`, merged across shards by
search.fuse), point lookups of products and reviews, review search inside one product, a store's products,
and every row in build order. Reads run on lancedb's async API on one event loop per process
(docs/decisions.md#async-lancedb-reads); point lookups are cached (a built catalog never changes).
Review search only ever sees the one product's reviews (a product_id prefilter); review vectors are
computed on the first vector/hybrid review search and cached (docs/decisions.md#review-vectors).
"""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pyarrow as pa

from ecab.catalog.base import SearchHit
from ecab.catalog.cache import LRU, MISSING
from ecab.catalog.layout import (PRODUCTS, REVIEWS, VECTOR_MAX_NPROBES, VECTOR_NPROBES, read_meta,
                                 review_search_text, shard_dir)
from ecab.catalog.search import EMBEDDING_MODES, MODES, ShardCandidates, has_word, original_phrases, rrf_fuse, sql_quote
from ecab.schema import Review


# The listings of a product line can share a title, hence an embedding: exact ties, which LanceDB cuts at
# `limit` in no set order. The vector leg asks for this many more rows and cuts after ordering ties by product
# id, so one shard and several give the same page (search._merge_leg breaks ties the same way).
VECTOR_TIE_SLACK = 32


class _QueryLoop:
    """An event loop thread for lancedb's async API, one per process (made again after a fork), on which every
    per-call read runs; see docs/decisions.md#async-lancedb-reads."""

    _instance: "_QueryLoop | None" = None
    _lock = threading.Lock()

    def __init__(self):
        import asyncio

        self.pid = os.getpid()
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="ecab-lancedb-queries", daemon=True).start()

    @classmethod
    def run(cls, coro):
        """Run `coro` on the process's query loop and wait for its result (from any thread but the loop's)."""
        import asyncio

        with cls._lock:
            if cls._instance is None or cls._instance.pid != os.getpid():
                cls._instance = cls()
            loop = cls._instance.loop
        return asyncio.run_coroutine_threadsafe(coro, loop).result()


class CatalogShard:
    """One shard's `products` and `reviews` tables, pinned to their built versions (hence read-only).

    Open it inside the process that uses it (a Ray actor opens its own); never pickle an open shard.
    """

    def __init__(self, path: str | os.PathLike, index: int, meta: dict[str, Any] | None = None, *,
                 embedder=None):
        import lancedb

        root = Path(path)
        self.meta = meta or read_meta(root)
        self.index = index
        if not 0 <= index < self.meta["shards"]:
            raise ValueError(f"{root}: shard {index} out of range (catalog has {self.meta['shards']})")
        versions = self.meta["versions"][index]
        self.n_products = self.meta["shard_counts"][index][PRODUCTS]
        self.n_reviews = self.meta["shard_counts"][index][REVIEWS]
        db = lancedb.connect(str(shard_dir(root, index)))
        self.products = db.open_table(PRODUCTS, version=versions[PRODUCTS])
        self.reviews = db.open_table(REVIEWS, version=versions[REVIEWS])
        self._count_cache: dict[str | None, int] = {None: self.n_products}
        self.vector_indexed = any(i.columns == ["vector"] for i in self.products.list_indices())
        # Point lookups repeat a lot within an episode (details, then reviews, then details again).
        self._products = LRU(8192)
        self._reviews = LRU(2048)
        self._stores = LRU(512)
        self._review_vector_cache = LRU(1024)
        self._embedder = embedder
        self._path, self._versions = shard_dir(root, index), versions
        self._async_tables: dict[tuple[int, str], Any] = {}   # (pid, name) -> table on lancedb's async API
        self._async_lock = threading.Lock()
        self._labels: HitLabels | None = None   # product_id and title by row id, loaded by the first search
        self._labels_lock = threading.Lock()

    @property
    def embedder(self):
        """The embedder passed in, else the process's own (loaded on first use: it takes seconds); either way
        the model the catalog was built with, since vectors of two models are not comparable."""
        if self._embedder is None:
            from ecab.catalog.embed import get_embedder

            embedder = get_embedder()
            if embedder.model_name != self.meta["embedding_model"]:
                raise ValueError(f"{self._path.parent}: built with {self.meta['embedding_model']}, "
                                 f"query embedder is {embedder.model_name}")
            self._embedder = embedder
        return self._embedder

    def clear_query_cache(self) -> None:
        """Forget cached query vectors (nothing to forget in an embedder never loaded)."""
        if self._embedder is not None:
            self._embedder.clear_cache()

    # -- search ----------------------------------------------------------------------------------------

    def candidates(self, mode: str, query: str, vector: np.ndarray | None, *, depth: int,
                   where: str | None = None) -> ShardCandidates:
        """The top `depth` hits of each leg the mode uses, plus this shard's match count."""
        if self.n_products == 0:
            return ShardCandidates()
        if mode == "original":
            phrases = original_phrases(query)
            return self._keyword(_phrase_and_query(phrases, "title"), depth, where) if phrases \
                else ShardCandidates()
        if mode == "fts":
            from lancedb.query import MatchQuery

            return self._keyword(MatchQuery(query, "search_text", operator="AND"), depth, where)
        if mode == "vector":
            return ShardCandidates(vector=self._nearest(vector, depth, where), total=self.count(where))
        if mode == "hybrid":
            return ShardCandidates(fts=self.keyword_leg(query, depth, where),
                                   vector=self._nearest(vector, depth, where))
        raise ValueError(f"unknown search mode {mode!r} (expected one of {', '.join(MODES)})")

    def keyword_leg(self, query: str, depth: int, where: str | None = None) -> list[SearchHit]:
        """Hybrid's keyword leg: BM25 over search_text of any query term, plus the AND match's BM25 for
        products matching every term, so they rank above partial matches (it needs no query vector).

        That is `hybrid_keyword_query`'s ranking, computed from its two clauses: a product matching every term
        scores the same BM25 in both, so its sum is twice its AND score, and the rest score their OR BM25. The
        AND clause runs first. When it fills `depth`, the leg is its top `depth`, doubled, and the OR clause is
        not run: a partial match would need over twice the BM25 of the `depth`-th full match to enter, which
        no bench query had at 5k, 10k, 100k or 1M products, and the OR clause is the dearer half of the leg's CPU
        (docs/decisions.md#keyword-fallback). Otherwise the union of the two top-`depth` lists holds the sum's
        top `depth` (an AND match outside the AND list has `depth` AND matches above it; any other product
        outside the OR list has `depth` products above it)."""
        if self.n_products == 0:
            return []
        from lancedb.query import MatchQuery

        every = [SearchHit(hit.product_id, hit.title, 2.0 * hit.score)
                 for hit in self._fts_top(MatchQuery(query, "search_text", operator="AND"), depth, where)]
        if len(every) >= depth:
            return every
        best = {hit.product_id: hit for hit in self._fts_top(MatchQuery(query, "search_text", operator="OR"),
                                                             depth, where)}
        best.update((hit.product_id, hit) for hit in every)
        return sorted(best.values(), key=lambda hit: -hit.score)[:depth]

    def vector_leg(self, vector: np.ndarray, depth: int, where: str | None = None) -> list[SearchHit]:
        return self._nearest(vector, depth, where) if self.n_products else []

    def _keyword(self, fts_query, depth: int, where: str | None) -> ShardCandidates:
        hits = self._fts_top(fts_query, depth, where)
        # Hits tied at the cut (a product line's listings often share a title) come back in no particular
        # order, so a deeper page could hold other ones: fetch until the cut's score ends (fuse orders ties
        # by product id), so every page is a slice of the same ranking.
        fetched = depth
        while len(hits) == fetched and depth and hits[depth - 1].score == hits[-1].score:
            fetched *= 2
            hits = self._fts_top(fts_query, fetched, where)
        total = len(hits) if len(hits) < fetched else self._fts_count(fts_query, where)
        return ShardCandidates(fts=hits, total=total)

    def _table(self, name: str):
        """`products` or `reviews` at its built version on lancedb's async API, for the reads every tool
        call makes (searches, lookups; see _QueryLoop). Opened on first use, in the process that uses it."""
        key = (os.getpid(), name)   # a table opened before a fork belongs to the parent's query loop
        with self._async_lock:
            if key not in self._async_tables:
                import lancedb

                async def open_table():
                    db = await lancedb.connect_async(str(self._path))
                    return await db.open_table(name, version=self._versions[name])

                self._async_tables[key] = _QueryLoop.run(open_table())
            return self._async_tables[key]

    def _rows(self, name: str, where: str, columns: list[str], limit: int) -> pa.Table:
        """The rows of `name` matching `where` (the BTree indexes make id and store lookups point reads)."""
        return _QueryLoop.run(self._table(name).query().where(where).select(columns).limit(limit).to_arrow())

    def _fts(self, fts_query, where: str | None, columns: list[str], limit: int) -> pa.Table:
        return _QueryLoop.run(self._fts_query(fts_query, where, columns, limit))

    def _fts_query(self, fts_query, where: str | None, columns: list[str], limit: int):
        """The awaitable Arrow result of one full-text query on the products table."""
        query = self._table(PRODUCTS).query().nearest_to_text(fts_query).select(columns)
        if where:
            query = query.where(where)   # a prefilter, as on the sync builder's where(prefilter=True)
        return query.limit(limit).to_arrow()

    def _fts_top(self, fts_query, depth: int, where: str | None) -> list[SearchHit]:
        """The top `depth` hits of one full-text query."""
        labels = self.hit_labels()
        table = _QueryLoop.run(self._fts_query(fts_query, where, ["_rowid", "_score"], depth))
        return labels.hits(table["_rowid"], table["_score"].to_pylist())

    def _fts_count(self, fts_query, where: str | None) -> int:
        # lancedb's FTS has a default limit (10) when none is given, so ask for every row explicitly.
        return self._fts(fts_query, where, ["_score"], max(1, self.n_products)).num_rows

    def _nearest(self, vector: np.ndarray | None, depth: int, where: str | None) -> list[SearchHit]:
        if vector is None:
            raise ValueError("vector search needs a query vector")
        labels = self.hit_labels()
        query = self._table(PRODUCTS).query().nearest_to(np.asarray(vector, dtype=np.float32)).column("vector") \
            .distance_type("cosine").select(["_rowid", "_distance"]).limit(depth + VECTOR_TIE_SLACK)
        if self.vector_indexed:
            # Every row is indexed (read-only table): no flat scan of unindexed rows. Only a prefiltered search
            # may probe more than VECTOR_NPROBES partitions; see docs/decisions.md#ivf-probes.
            query = query.fast_search().minimum_nprobes(VECTOR_NPROBES)
            query = query.maximum_nprobes(VECTOR_MAX_NPROBES if where else VECTOR_NPROBES)
        if where:
            query = query.where(where)   # a prefilter (the async API's default)
        table = _QueryLoop.run(query.to_arrow())
        hits = labels.hits(table["_rowid"], [1.0 - float(d) for d in table["_distance"].to_pylist()])
        return sorted(hits, key=lambda hit: (-hit.score, hit.product_id))[:depth]

    def hit_labels(self) -> "HitLabels":
        """Every product's id and title by row id, read once per process (docs/decisions.md#hit-labels)."""
        labels = self._labels
        if labels is not None and labels.pid == os.getpid():
            return labels   # every search after the first: no lock on the hot path
        with self._labels_lock:   # one read, however many searches arrive first
            if self._labels is None or self._labels.pid != os.getpid():
                rows = _QueryLoop.run(self._table(PRODUCTS).query().select(["_rowid", "product_id", "title"])
                                      .to_arrow())
                self._labels = HitLabels(rows)
            return self._labels

    def count(self, where: str | None = None) -> int:
        if where not in self._count_cache:
            if len(self._count_cache) > 1024:
                self._count_cache = {None: self.n_products}
            self._count_cache[where] = _QueryLoop.run(self._table(PRODUCTS).count_rows(where))
        return self._count_cache[where]

    # -- point lookups ---------------------------------------------------------------------------------

    def product_data(self, product_id: str) -> str | None:
        """The product JSON, or None when this shard does not hold it."""
        hit = self._products.get(product_id)
        if hit is not MISSING:
            return hit
        table = self._rows(PRODUCTS, f"product_id = {sql_quote(product_id)}", ["data"], 1)
        data = table["data"][0].as_py() if table.num_rows else None
        self._products.put(product_id, data)
        return data

    def products_data(self, product_ids: list[str]) -> dict[str, str]:
        """product_id -> product JSON for the ids this shard holds (one IN query for the uncached ones)."""
        found: dict[str, str] = {}
        missing = []
        for pid in product_ids:
            hit = self._products.get(pid)
            if hit is MISSING:
                missing.append(pid)
            elif hit is not None:
                found[pid] = hit
        if missing:
            where = "product_id IN (" + ", ".join(sql_quote(p) for p in dict.fromkeys(missing)) + ")"
            table = self._rows(PRODUCTS, where, ["product_id", "data"], len(missing))
            fetched = dict(zip(table["product_id"].to_pylist(), table["data"].to_pylist()))
            for pid in dict.fromkeys(missing):
                self._products.put(pid, fetched.get(pid))
            found.update(fetched)
        return found

    def review_rows(self, product_id: str) -> tuple[str, ...]:
        """Every review JSON of a product, in stored order."""
        if self.n_reviews == 0:
            return ()
        hit = self._reviews.get(product_id)
        if hit is not MISSING:
            return hit
        table = self._rows(REVIEWS, f"product_id = {sql_quote(product_id)}", ["seq", "data"], max(1, self.n_reviews))
        order = np.argsort(np.asarray(table["seq"].to_numpy()), kind="stable")
        data = table["data"].to_pylist()
        rows = tuple(data[i] for i in order)
        self._reviews.put(product_id, rows)
        return rows

    def search_reviews(self, product_id: str, query: str, vector: np.ndarray | None, *, limit: int,
                       mode: str) -> list[str]:
        """Review JSONs of one product, best first. The product_id prefilter keeps other products out.

        original: AND of quoted phrases over title + text (docs/original-harness.md §1.4); fts: AND of terms;
        vector: cosine similarity of the query to each review; hybrid: RRF of BM25 (any term) and vector.
        """
        if self.n_reviews == 0:
            return []
        only = f"product_id = {sql_quote(product_id)}"
        if mode == "original":
            phrases = original_phrases(query)
            return self._review_fts(_phrase_and_query(phrases, "search_text"), only, limit) if phrases else []
        from lancedb.query import MatchQuery

        if not has_word(query):
            return []
        if mode == "fts":
            return self._review_fts(MatchQuery(query, "search_text", operator="AND"), only, limit)
        if mode not in EMBEDDING_MODES:
            raise ValueError(f"unknown search mode {mode!r} (expected one of {', '.join(MODES)})")
        rows = self.review_rows(product_id)
        if not rows:
            return []
        similarity = self._review_vectors(product_id, rows) @ np.asarray(vector, dtype=np.float32)
        order = sorted(range(len(rows)), key=lambda i: (-similarity[i], i))
        if mode == "vector":
            return [rows[i] for i in order[:limit]]
        # Hits are keyed by the review JSON itself (unique per review: it carries review_id).
        vec_hits = [SearchHit(rows[i], "", float(similarity[i])) for i in order]
        fts_rows = self._review_fts(MatchQuery(query, "search_text", operator="OR"), only, len(rows))
        fts_hits = [SearchHit(row, "", 0.0) for row in fts_rows]
        return [h.product_id for h in rrf_fuse(fts_hits, vec_hits)[:limit]]

    def _review_vectors(self, product_id: str, rows: tuple[str, ...]) -> np.ndarray:
        """The product's review embeddings (title + text), computed on first use and cached."""
        hit = self._review_vector_cache.get(product_id)
        if hit is not MISSING:
            return hit
        texts = [review_search_text(Review.from_dict(json.loads(row))) for row in rows]
        vectors = self.embedder.encode(texts)
        self._review_vector_cache.put(product_id, vectors)
        return vectors

    def _review_fts(self, fts_query, only: str, limit: int) -> list[str]:
        query = self._table(REVIEWS).query().nearest_to_text(fts_query).where(only)   # a prefilter
        table = _QueryLoop.run(query.select(["data", "_score"]).limit(limit).to_arrow())
        return table["data"].to_pylist()

    def store_rows(self, store: str) -> tuple[tuple[int, str, str], ...]:
        """(seq, product_id, title) of every product of `store`, in build order."""
        if self.n_products == 0:
            return ()
        hit = self._stores.get(store)
        if hit is not MISSING:
            return hit
        table = self._rows(PRODUCTS, f"store = {sql_quote(store)}", ["seq", "product_id", "title"],
                           max(1, self.n_products))
        rows = zip(table["seq"].to_pylist(), table["product_id"].to_pylist(), table["title"].to_pylist())
        rows = tuple(sorted(rows))
        self._stores.put(store, rows)
        return rows

    def iter_rows(self, batch_size: int) -> Iterator[tuple[int, str]]:
        """(seq, product JSON) for every product of the shard, in build order, `batch_size` at a time."""
        if self.n_products == 0:
            return
        seqs = self.products.search().select(["seq"]).limit(self.n_products).to_arrow()["seq"].to_numpy()
        seqs = np.sort(seqs)
        # Range queries on seq: bounded memory, and the order never depends on the scan plan.
        for start in range(0, len(seqs), batch_size):
            low, high = int(seqs[start]), int(seqs[min(start + batch_size, len(seqs)) - 1])
            table = self.products.search().where(f"seq >= {low} AND seq <= {high}") \
                .select(["seq", "data"]).limit(batch_size).to_arrow()
            rows = sorted(zip(table["seq"].to_pylist(), table["data"].to_pylist()))
            yield from rows



class HitLabels:
    """product_id and title of every row of a products table, by lance row id.

    Searches ask lancedb for row ids and scores only: at 1M products, taking the id and title of a leg's 60 hits
    from the table cost more than the search itself (vector leg 19.5 ms with them, 7.3 without; each keyword
    clause ~3 ms), while holding both columns costs ~100 MB per million products and 0.65 s to read once."""

    def __init__(self, rows: pa.Table):
        row_ids = rows["_rowid"].to_numpy()
        order = np.argsort(row_ids, kind="stable")
        self.pid = os.getpid()
        self._row_ids = row_ids[order]
        self._ids = rows["product_id"].take(order).combine_chunks()
        self._titles = rows["title"].take(order).combine_chunks()

    def hits(self, row_ids: pa.ChunkedArray, scores: list[float]) -> list[SearchHit]:
        wanted = row_ids.to_numpy()
        at = np.searchsorted(self._row_ids, wanted)
        if len(at) and (at.max() >= len(self._row_ids) or not np.array_equal(self._row_ids[at], wanted)):
            raise LookupError("a search returned a row id the table's labels do not hold")
        picked = pa.array(at)
        return [SearchHit(pid, title, float(score)) for pid, title, score in
                zip(self._ids.take(picked).to_pylist(), self._titles.take(picked).to_pylist(), scores)]

    @property
    def nbytes(self) -> int:
        return int(self._row_ids.nbytes + self._ids.nbytes + self._titles.nbytes)


def hybrid_keyword_query(query: str):
    """SHOULD(every term) + SHOULD(any term) on search_text: a product matching every term scores both
    (docs/decisions.md#search-fusion). The definition of the keyword leg's ranking, which
    `CatalogShard.keyword_leg` computes faster; the tests compare the two."""
    from lancedb.query import BooleanQuery, MatchQuery, Occur

    return BooleanQuery([(Occur.SHOULD, MatchQuery(query, "search_text", operator="AND")),
                         (Occur.SHOULD, MatchQuery(query, "search_text", operator="OR"))])


def _phrase_and_query(phrases: list[str], column: str):
    """AND of quoted phrases on one column: the original's FTS5 query."""
    from lancedb.query import BooleanQuery, Occur, PhraseQuery

    return BooleanQuery([(Occur.MUST, PhraseQuery(p, column)) for p in phrases])

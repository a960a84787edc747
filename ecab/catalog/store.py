"""The LanceDB catalog: build once from a stream of `CatalogBatch`es, open read-only, search.

Layout of a built catalog directory:

    <dir>/meta.json           fingerprint, counts, shard count, embedding model, table versions, build time
    <dir>/shard-00/           a LanceDB database with tables `products` and `reviews`
    <dir>/shard-01/ ...       (catalog.shards > 1: product -> shard by a stable hash of product_id)

Search modes (SearchPage.total is documented per mode; it is never the original's "ids fetched"):

- ``original``: the original harness exactly (docs/original-harness.md §1.4): the query is split on whitespace, the
  characters ``" * ( ) - + ^ ~ :`` become spaces inside each token, every token is a quoted phrase, all phrases must
  match (AND), titles only, no stemming, BM25 order. The title index is built without stemming or stop
  words so this holds. ``total`` = every title that matches.
- ``fts``: BM25 over ``search_text`` (title + brand + key detail values) with English stemming and stop
  words removed; every remaining query term must match (AND). ``total`` = every product that matches.
- ``vector``: cosine similarity of the query to the title embedding. Every product is a match, so
  ``total`` = the number of products that pass ``where``.
- ``hybrid`` (default): reciprocal-rank fusion (lancedb ``RRFReranker``, K=60) of two legs of fixed depth
  D = max(HYBRID_DEPTH, offset + limit): the top D ``search_text`` BM25 matches of *any* query term, and the
  D nearest titles. Hybrid is a ranking, not a match rule, so ``total`` = the size of the fused candidate
  pool (union of both legs, at most 2·D): exactly the number of results one can page through. The legs have
  a fixed depth so consecutive pages come from the same pool and never repeat or skip a product.

`SearchHit.score` is the BM25 score (fts, original), the cosine similarity (vector) or the RRF score
(hybrid). `where` is a SQL prefilter over the product columns (price, average_rating, rating_number,
main_category, store, brand, review_count, ...), applied before ranking in every mode.

Review search (`search_reviews`) only ever sees the one product's reviews (a product_id prefilter). Review
vectors are computed on the first vector/hybrid review search and cached; see docs/decisions.md#review-vectors.

Sharded search asks every shard for its own candidates (``CatalogShard.candidates``), merges each leg by
its score, then fuses once (``fuse``), so one shard gives the same answer as an unsharded catalog. The Ray
runner can host one ``CatalogShard`` per actor and call ``fuse`` on the driver.
"""
from __future__ import annotations

import hashlib
import heapq
import json
import os
import re
import shutil
import threading
import time
import uuid
import warnings
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import numpy as np
import pyarrow as pa

from ecab.catalog.base import CatalogBatch, SearchHit, SearchPage
from ecab.fields import DETAIL_FIELDS, IMPLICIT_ELIGIBLE_FIELDS, lookup_detail
from ecab.schema import Product, Review

# lancedb warns in every child forked from a process that has it loaded. The children ecab forks (Ray's
# processes, the simulator) exec a new program at once, so the warning is noise, printed once per process
# Ray starts.
warnings.filterwarnings("ignore", message="lancedb fork support is experimental", category=RuntimeWarning)

FORMAT_VERSION = 1
META_FILE = "meta.json"
PRODUCTS, REVIEWS = "products", "reviews"
MODES = ("hybrid", "fts", "vector", "original")
HYBRID_DEPTH = 100
SEARCH_CACHE_SIZE = 4096   # search pages kept per catalog client (SearchPageCache)
RRF_K = 60
# Vector index: flat scan below VECTOR_INDEX_MIN_ROWS rows per shard, else IVF_FLAT probed VECTOR_NPROBES
# partitions; see docs/decisions.md#ivf-probes.
VECTOR_INDEX_MIN_ROWS = 5000
VECTOR_NPROBES = 16
# A selective `where` prefilter can leave fewer than `limit` rows in the probed partitions; lancedb then
# probes further partitions, up to this many (i.e. all of them), so filtered searches never come up short.
VECTOR_MAX_NPROBES = 4096
# The characters the original replaces with spaces inside each query token (docs/original-harness.md §1.4).
_ORIGINAL_SPECIALS = re.compile(r'["*()\-+^~:]')
# An FTS5 phrase with no letter or digit tokenizes to nothing and the original ignores it.
_HAS_WORD = re.compile(r"[^\W_]")


def batched_products(rows: Iterable[tuple[int, str]], batch_size: int) -> Iterator[list[Product]]:
    """Products from (build position, product JSON) rows merged across shards, in batches: the one way
    every catalog client streams the whole catalog."""
    batch: list[Product] = []
    for _, data in rows:
        batch.append(Product.from_dict(json.loads(data)))
        if len(batch) >= batch_size:
            yield batch
            batch = []
    if batch:
        yield batch


def search_args(query: str | None, mode: str, limit: int, offset: int) -> tuple[str | None, int, int]:
    """The checks every catalog client applies before searching: a known mode, non-negative paging, and
    the original's rule that a query with no word left has no results (mode None then)."""
    if mode not in MODES:
        raise ValueError(f"unknown search mode {mode!r} (expected one of {', '.join(MODES)})")
    limit, offset = max(0, int(limit)), max(0, int(offset))
    return (mode if _HAS_WORD.search(query or "") else None), limit, offset


# ---------------------------------------------------------------------------------------------------------
# Small pure helpers
# ---------------------------------------------------------------------------------------------------------

def shard_of(product_id: str, n_shards: int) -> int:
    """The shard owning `product_id`: stable across processes and machines (never Python's salted hash)."""
    if n_shards <= 1:
        return 0
    digest = hashlib.sha256(product_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % n_shards


def original_phrases(query: str) -> list[str]:
    """The phrases of the original's title search (docs/original-harness.md §1.4); [] means "no results"."""
    phrases = []
    for token in query.split():
        phrase = _ORIGINAL_SPECIALS.sub(" ", token).strip()
        if phrase and _HAS_WORD.search(phrase):
            phrases.append(" ".join(phrase.split()))
    return phrases


def sql_quote(value: str) -> str:
    """A SQL string literal for a `where` clause."""
    return "'" + value.replace("'", "''") + "'"


def product_search_text(product: Product) -> str:
    """What `fts` and hybrid keyword search see: title, store, brand and the key detail values."""
    parts = [product.title, product.store]
    seen = {product.title.lower(), product.store.lower()}
    for name in DETAIL_FIELDS:
        value = lookup_detail(product.details, name)
        values = value if isinstance(value, list) else [value]
        for item in values:
            text = str(item).strip() if isinstance(item, (str, int, float)) else ""
            if text and len(text) <= 120 and text.lower() not in seen:
                seen.add(text.lower())
                parts.append(text)
    return " \n".join(p for p in parts if p)


def review_search_text(review: Review) -> str:
    return f"{review.title}\n{review.text}".strip()


def _dumps(record: Product | Review) -> str:
    return json.dumps(record.to_dict(), ensure_ascii=False)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _integer(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


# ---------------------------------------------------------------------------------------------------------
# Arrow schemas and rows
# ---------------------------------------------------------------------------------------------------------

def _vector_type(dim: int) -> pa.DataType:
    return pa.list_(pa.float32(), dim)


def product_schema(dim: int) -> pa.Schema:
    return pa.schema([
        ("seq", pa.int64()),                 # build order: stable order for stores and iteration
        ("product_id", pa.string()),
        ("title", pa.string()),
        ("main_category", pa.string()),
        ("store", pa.string()),
        ("brand", pa.string()),
        ("price", pa.float64()),
        ("average_rating", pa.float64()),
        ("rating_number", pa.int64()),
        ("detail_field_count", pa.int64()),
        ("implicit_eligible_count", pa.int64()),
        ("has_features", pa.bool_()),
        ("has_description", pa.bool_()),
        ("has_price", pa.bool_()),
        ("review_count", pa.int64()),
        ("search_text", pa.string()),
        ("data", pa.string()),               # the full product JSON: what get_product returns
        ("vector", _vector_type(dim)),
    ])


def review_schema() -> pa.Schema:
    # No vector column: embedding every review at build time runs at ~100-400 reviews/s on a small CPU
    # (hours for a 1M-review catalog); review vectors are computed per product on demand instead.
    return pa.schema([
        ("seq", pa.int64()),                 # build order: the stored order of a product's reviews
        ("product_id", pa.string()),
        ("rating", pa.float64()),
        ("search_text", pa.string()),
        ("data", pa.string()),
    ])


def _vectors_array(vectors: np.ndarray, dim: int) -> pa.Array:
    flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1))
    return pa.FixedSizeListArray.from_arrays(flat, dim)


def _product_table(products: list[Product], seqs: list[int], review_counts: dict[str, int],
                   vectors: np.ndarray, dim: int) -> pa.Table:
    columns: dict[str, list] = {name: [] for name in product_schema(dim).names if name != "vector"}
    for product, seq in zip(products, seqs):
        details = product.details
        columns["seq"].append(seq)
        columns["product_id"].append(product.product_id)
        columns["title"].append(product.title or "")
        columns["main_category"].append(product.main_category or "")
        columns["store"].append(product.store or "")
        columns["brand"].append(product.brand)
        columns["price"].append(_number(product.price))
        columns["average_rating"].append(_number(product.average_rating))
        columns["rating_number"].append(_integer(product.rating_number))
        columns["detail_field_count"].append(len(details))
        columns["implicit_eligible_count"].append(sum(1 for k in IMPLICIT_ELIGIBLE_FIELDS if details.get(k)))
        columns["has_features"].append(bool(product.features))
        columns["has_description"].append(bool(product.description))
        columns["has_price"].append(product.price is not None)
        columns["review_count"].append(review_counts.get(product.product_id, 0))
        columns["search_text"].append(product_search_text(product))
        columns["data"].append(_dumps(product))
    arrays = [pa.array(columns[f.name], type=f.type) for f in product_schema(dim) if f.name != "vector"]
    arrays.append(_vectors_array(vectors, dim))
    return pa.Table.from_arrays(arrays, schema=product_schema(dim))


def _review_table(reviews: list[Review], seqs: list[int]) -> pa.Table:
    return pa.Table.from_arrays([
        pa.array(seqs, type=pa.int64()),
        pa.array([r.product_id for r in reviews], type=pa.string()),
        pa.array([_number(r.rating) for r in reviews], type=pa.float64()),
        pa.array([review_search_text(r) for r in reviews], type=pa.string()),
        pa.array([_dumps(r) for r in reviews], type=pa.string()),
    ], schema=review_schema())


# ---------------------------------------------------------------------------------------------------------
# Build
# ---------------------------------------------------------------------------------------------------------

def _title_fts():
    """The original's FTS5 default tokenizer (unicode61): case-folded, diacritics removed, no stemming,
    no stop words, no length cap; positions kept for phrase queries."""
    from lancedb.index import FTS

    return FTS(with_position=True, base_tokenizer="simple", lower_case=True, ascii_folding=True, stem=False,
               remove_stop_words=False, max_token_length=None)


def _search_text_fts():
    """The improved keyword index: English stemming and stop words ("cases" finds "case")."""
    from lancedb.index import FTS

    return FTS(with_position=False, base_tokenizer="simple", language="English", lower_case=True,
               ascii_folding=True, stem=True, remove_stop_words=True, max_token_length=None)


def vector_index_config(n_rows: int):
    """IVF_FLAT with ~sqrt(n) partitions: a query scans VECTOR_NPROBES of them (~5% of 100k titles)."""
    from lancedb.index import IvfFlat

    return IvfFlat(distance_type="cosine", num_partitions=max(1, min(VECTOR_MAX_NPROBES, round(n_rows ** 0.5))))


@dataclass
class _ShardWriter:
    """Appends batches to one shard's tables, creating them on first write."""

    path: Path
    dim: int
    products: Any = None
    reviews: Any = None
    n_products: int = 0
    n_reviews: int = 0

    def __post_init__(self):
        import lancedb

        self.db = lancedb.connect(str(self.path))

    def add(self, name: str, table: pa.Table) -> None:
        if table.num_rows == 0:
            return
        current = getattr(self, name)
        if current is None:
            setattr(self, name, self.db.create_table(name, table))
        else:
            current.add(table)
        if name == PRODUCTS:
            self.n_products += table.num_rows
        else:
            self.n_reviews += table.num_rows

    def finish(self) -> dict[str, int]:
        """Compact, index, and return the table versions to pin at open time."""
        if self.products is None:
            self.products = self.db.create_table(PRODUCTS, schema=product_schema(self.dim))
        if self.reviews is None:
            self.reviews = self.db.create_table(REVIEWS, schema=review_schema())
        with warnings.catch_warnings():
            # cleanup_older_than=0 is safe here: nobody else can see this private temp directory.
            warnings.simplefilter("ignore")
            self.products.optimize(cleanup_older_than=timedelta(0))
            self.reviews.optimize(cleanup_older_than=timedelta(0))
        self._index_products()
        self._index_reviews()
        return {PRODUCTS: self.products.version, REVIEWS: self.reviews.version}

    def _index_products(self) -> None:
        from lancedb.index import BTree

        if self.n_products == 0:
            return
        self.products.create_index("title", config=_title_fts())
        self.products.create_index("search_text", config=_search_text_fts())
        self.products.create_index("product_id", config=BTree())
        self.products.create_index("store", config=BTree())
        self.products.create_index("seq", config=BTree())
        if self.n_products >= VECTOR_INDEX_MIN_ROWS:
            self.products.create_index("vector", config=vector_index_config(self.n_products))

    def _index_reviews(self) -> None:
        from lancedb.index import BTree

        if self.n_reviews == 0:
            return
        # Same analyzer as the title index, so `original` review search keeps the original's semantics.
        self.reviews.create_index("search_text", config=_title_fts())
        self.reviews.create_index("product_id", config=BTree())


def build_catalog(batches: Iterable[CatalogBatch], out_dir: str | os.PathLike, *, shards: int = 1,
                  embedder, fingerprint: str, progress: bool = True, total_products: int | None = None,
                  source: dict[str, Any] | None = None) -> Path:
    """Stream `batches` into a catalog at `out_dir` (which must not exist yet) and return its path.

    Nothing but the current batch is held in memory. The catalog is written to a private temporary
    directory and renamed into place at the end, so a crash never leaves a half catalog that looks complete.
    Duplicate product ids keep the first occurrence (as the original build does); reviews of a product not
    in the catalog are dropped. Both are counted in meta.json.
    """
    out_dir = Path(out_dir)
    if (out_dir / META_FILE).exists():
        raise FileExistsError(f"{out_dir}: a catalog is already built there")
    if shards < 1:
        raise ValueError(f"catalog.shards must be >= 1, got {shards}")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_dir.parent / f".{out_dir.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    started = time.time()
    try:
        writers = [_ShardWriter(tmp / f"shard-{i:02d}", embedder.dim) for i in range(shards)]
        stats = _write_batches(batches, writers, embedder, progress, total_products)
        versions = [w.finish() for w in writers]
        meta = {
            "format": FORMAT_VERSION,
            "fingerprint": fingerprint,
            "shards": shards,
            "counts": {PRODUCTS: sum(w.n_products for w in writers), REVIEWS: sum(w.n_reviews for w in writers)},
            "shard_counts": [{PRODUCTS: w.n_products, REVIEWS: w.n_reviews} for w in writers],
            "versions": versions,
            "skipped": stats,
            "embedding_model": embedder.model_name,
            "embedding_dim": embedder.dim,
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "build_seconds": round(time.time() - started, 2),
            "source": source or {},
        }
        (tmp / META_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        os.rename(tmp, out_dir)   # atomic: the catalog appears complete or not at all
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out_dir


def _write_batches(batches: Iterable[CatalogBatch], writers: list[_ShardWriter], embedder, progress: bool,
                   total_products: int | None) -> dict[str, int]:
    from tqdm import tqdm

    seen: set[str] = set()
    stats = {"duplicate_products": 0, "orphan_reviews": 0}
    next_product_seq = next_review_seq = 0
    bar = tqdm(total=total_products, unit="product", desc="build catalog", disable=not progress)
    try:
        for batch in batches:
            products = []
            for product in batch.products:
                if product.product_id in seen:
                    stats["duplicate_products"] += 1
                    continue
                seen.add(product.product_id)
                products.append(product)
            reviews = [r for r in batch.reviews if r.product_id in seen]
            stats["orphan_reviews"] += len(batch.reviews) - len(reviews)
            review_counts: dict[str, int] = {}
            for review in reviews:
                review_counts[review.product_id] = review_counts.get(review.product_id, 0) + 1

            product_seqs = list(range(next_product_seq, next_product_seq + len(products)))
            review_seqs = list(range(next_review_seq, next_review_seq + len(reviews)))
            next_product_seq += len(products)
            next_review_seq += len(reviews)
            title_vectors = embedder.encode([p.title or "" for p in products])
            _route(writers, products, product_seqs, review_counts, title_vectors, reviews, review_seqs)
            bar.update(len(products))
    finally:
        bar.close()
    return stats


def _route(writers, products, product_seqs, review_counts, title_vectors, reviews, review_seqs) -> None:
    """Split one batch by owning shard and append each part."""
    n = len(writers)
    product_shard = np.array([shard_of(p.product_id, n) for p in products], dtype=np.int64)
    review_shard = np.array([shard_of(r.product_id, n) for r in reviews], dtype=np.int64)
    for i, writer in enumerate(writers):
        rows = np.flatnonzero(product_shard == i)
        if len(rows):
            writer.add(PRODUCTS, _product_table([products[j] for j in rows], [product_seqs[j] for j in rows],
                                                review_counts, title_vectors[rows], writer.dim))
        rows = np.flatnonzero(review_shard == i)
        if len(rows):
            writer.add(REVIEWS, _review_table([reviews[j] for j in rows], [review_seqs[j] for j in rows]))


# ---------------------------------------------------------------------------------------------------------
# One shard, opened read-only
# ---------------------------------------------------------------------------------------------------------

@dataclass
class ShardCandidates:
    """One shard's answer to a search: the legs' top hits (best first) and its share of the total."""

    fts: list[SearchHit] = field(default_factory=list)      # score = BM25
    vector: list[SearchHit] = field(default_factory=list)   # score = cosine similarity
    total: int = 0                                          # fts/original/vector: matches in this shard


def read_meta(path: str | os.PathLike) -> dict[str, Any]:
    meta_path = Path(path) / META_FILE
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"{meta_path}: not a built catalog (meta.json missing)") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{meta_path}: invalid JSON ({exc})") from None
    if meta.get("format") != FORMAT_VERSION:
        raise ValueError(f"{meta_path}: catalog format {meta.get('format')!r}, this ecab reads {FORMAT_VERSION}")
    return meta


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
        db = lancedb.connect(str(root / f"shard-{index:02d}"))
        self.products = db.open_table(PRODUCTS, version=versions[PRODUCTS])
        self.reviews = db.open_table(REVIEWS, version=versions[REVIEWS])
        self._count_cache: dict[str | None, int] = {None: self.n_products}
        self.vector_indexed = any(i.columns == ["vector"] for i in self.products.list_indices())
        # Point lookups repeat a lot within an episode (details, then reviews, then details again).
        self._products = _LRU(8192)
        self._reviews = _LRU(2048)
        self._stores = _LRU(512)
        self._review_vector_cache = _LRU(1024)
        self._embedder = embedder
        self._path, self._versions = root / f"shard-{index:02d}", versions
        self._async_tables: dict[tuple[int, str], Any] = {}   # (pid, name) -> table on lancedb's async API
        self._async_lock = threading.Lock()

    @property
    def embedder(self):
        if self._embedder is None:
            from ecab.catalog.embed import get_embedder

            self._embedder = get_embedder()
        return self._embedder

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
        """Hybrid's keyword leg: BM25 over search_text, any query term (it needs no query vector)."""
        from lancedb.query import MatchQuery

        if self.n_products == 0:
            return []
        return self._fts_top(MatchQuery(query, "search_text", operator="OR"), depth, where)

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
        query = self._table(PRODUCTS).query().nearest_to_text(fts_query).select(columns)
        if where:
            query = query.where(where)   # a prefilter, as on the sync builder's where(prefilter=True)
        return _QueryLoop.run(query.limit(limit).to_arrow())

    def _fts_top(self, fts_query, depth: int, where: str | None) -> list[SearchHit]:
        table = self._fts(fts_query, where, ["product_id", "title", "_score"], depth)
        return [SearchHit(pid, title, float(score)) for pid, title, score in
                zip(table["product_id"].to_pylist(), table["title"].to_pylist(), table["_score"].to_pylist())]

    def _fts_count(self, fts_query, where: str | None) -> int:
        # lancedb's FTS has a default limit (10) when none is given, so ask for every row explicitly.
        return self._fts(fts_query, where, ["_score"], max(1, self.n_products)).num_rows

    def _nearest(self, vector: np.ndarray | None, depth: int, where: str | None) -> list[SearchHit]:
        if vector is None:
            raise ValueError("vector search needs a query vector")
        query = self._table(PRODUCTS).query().nearest_to(np.asarray(vector, dtype=np.float32)).column("vector") \
            .distance_type("cosine").select(["product_id", "title", "_distance"]).limit(depth)
        if self.vector_indexed:
            # Every row is indexed (read-only table): no flat scan of unindexed rows. Only a prefiltered search
            # may probe more than VECTOR_NPROBES partitions; see docs/decisions.md#ivf-probes.
            query = query.fast_search().minimum_nprobes(VECTOR_NPROBES)
            query = query.maximum_nprobes(VECTOR_MAX_NPROBES if where else VECTOR_NPROBES)
        if where:
            query = query.where(where)   # a prefilter (the async API's default)
        table = _QueryLoop.run(query.to_arrow())
        return [SearchHit(pid, title, 1.0 - float(d)) for pid, title, d in
                zip(table["product_id"].to_pylist(), table["title"].to_pylist(), table["_distance"].to_pylist())]

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
        if hit is not _MISSING:
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
            if hit is _MISSING:
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
        if hit is not _MISSING:
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

        if not _HAS_WORD.search(query):
            return []
        if mode == "fts":
            return self._review_fts(MatchQuery(query, "search_text", operator="AND"), only, limit)
        if mode not in ("hybrid", "vector"):
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
        if hit is not _MISSING:
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
        if hit is not _MISSING:
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


_MISSING = object()
# Runs hybrid's keyword leg beside the query embedding; LanceDB and torch both release the GIL.
_LEG_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="ecab-keyword-leg")


class _LRU:
    """A small thread-safe LRU map (functools.lru_cache cannot be peeked or filled in bulk)."""

    def __init__(self, size: int):
        self.size = size
        self._items: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            if key not in self._items:
                return _MISSING
            self._items.move_to_end(key)
            return self._items[key]

    def put(self, key, value) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            if len(self._items) > self.size:
                self._items.popitem(last=False)


class SearchPageCache:
    """Search pages by their arguments (a built catalog is read-only); a search already running is waited for,
    not run again (both count as hits). Callers get a fresh SearchPage (the hits are immutable).
    See docs/decisions.md#page-cache."""

    def __init__(self, size: int = SEARCH_CACHE_SIZE):
        self._pages = _LRU(size)
        self._running: dict[tuple, Future] = {}
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def clear(self) -> None:
        with self._lock:
            self._pages = _LRU(self._pages.size)
            self.hits = self.misses = 0

    def stats(self) -> dict[str, int]:
        return {"hits": self.hits, "misses": self.misses}

    def search(self, query: str, mode: str, limit: int, offset: int, where: str | None,
               run: Callable[[str, str, int, int, str | None], SearchPage]) -> SearchPage:
        """The catalog clients' `search`: normalize the arguments (search_args), then the cached page, the
        page another thread is computing, or `run(query, mode, limit, offset, where)`."""
        mode, limit, offset = search_args(query, mode, limit, offset)
        if mode is None:
            return SearchPage(hits=[], total=0)
        key = (query, mode, limit, offset, where)
        with self._lock:
            page = self._pages.get(key)
            running = self._running.get(key) if page is _MISSING else None
            if page is _MISSING and running is None:
                self.misses += 1
                mine = self._running[key] = Future()
            else:
                self.hits += 1
        if page is _MISSING:
            page = running.result() if running is not None else self._run(key, mine, run)
        return SearchPage(hits=list(page.hits), total=page.total)

    def _run(self, key: tuple, mine: Future, run: Callable) -> SearchPage:
        try:
            page = run(*key)
        except BaseException as exc:
            with self._lock:
                del self._running[key]
            mine.set_exception(exc)   # whoever waited for this search gets the same error
            raise
        with self._lock:   # cached before it stops running: no moment in which neither holds it
            self._pages.put(key, page)
            del self._running[key]
        mine.set_result(page)
        return page


def _phrase_and_query(phrases: list[str], column: str):
    """AND of quoted phrases on one column: the original's FTS5 query."""
    from lancedb.query import BooleanQuery, Occur, PhraseQuery

    return BooleanQuery([(Occur.MUST, PhraseQuery(p, column)) for p in phrases])


# ---------------------------------------------------------------------------------------------------------
# Merging shard answers
# ---------------------------------------------------------------------------------------------------------

def rrf_fuse(fts: list[SearchHit], vector: list[SearchHit], k: int = RRF_K) -> list[SearchHit]:
    """Reciprocal-rank fusion with lancedb's RRFReranker; hits are keyed by product_id."""
    from lancedb.rerankers import RRFReranker

    keys: dict[str, int] = {}
    titles: dict[str, str] = {}
    for hit in vector + fts:
        keys.setdefault(hit.product_id, len(keys))
        titles.setdefault(hit.product_id, hit.title)

    def leg(hits: list[SearchHit], score_column: str) -> pa.Table:
        return pa.table({"product_id": pa.array([h.product_id for h in hits], pa.string()),
                         score_column: pa.array([h.score for h in hits], pa.float32()),
                         "_rowid": pa.array([keys[h.product_id] for h in hits], pa.uint64())})

    fused = RRFReranker(K=k).rerank_hybrid("", leg(vector, "_distance"), leg(fts, "_score"))
    return [SearchHit(pid, titles[pid], float(score)) for pid, score in
            zip(fused["product_id"].to_pylist(), fused["_relevance_score"].to_pylist())]


def _merge_leg(legs: Iterable[list[SearchHit]], depth: int) -> list[SearchHit]:
    """Best `depth` hits over shards (higher score first; product_id breaks ties for a stable order)."""
    return heapq.nsmallest(depth, (h for leg in legs for h in leg), key=lambda h: (-h.score, h.product_id))


def fuse(mode: str, parts: list[ShardCandidates], *, limit: int, offset: int, depth: int) -> SearchPage:
    """Merge shard answers into one page (see the module docstring for `total` per mode)."""
    if mode == "hybrid":
        fts = _merge_leg((p.fts for p in parts), depth)
        vector = _merge_leg((p.vector for p in parts), depth)
        ranked = rrf_fuse(fts, vector)
        return SearchPage(hits=ranked[offset:offset + limit], total=len(ranked))
    leg = "vector" if mode == "vector" else "fts"
    ranked = _merge_leg((getattr(p, leg) for p in parts), offset + limit)
    return SearchPage(hits=ranked[offset:offset + limit], total=sum(p.total for p in parts))


# ---------------------------------------------------------------------------------------------------------
# The catalog
# ---------------------------------------------------------------------------------------------------------

class LanceCatalog:
    """A built catalog opened read-only: implements `ecab.catalog.base.CatalogReader`."""

    call_threads = 16   # tool threads for catalog calls; see docs/decisions.md#catalog-threads

    def __init__(self, path: str | os.PathLike, shards: list[CatalogShard], meta: dict[str, Any], *,
                 mode: str = "hybrid", embedder=None):
        if mode not in MODES:
            raise ValueError(f"unknown search mode {mode!r} (expected one of {', '.join(MODES)})")
        self.path = Path(path)
        self.meta = meta
        self.fingerprint: str = meta["fingerprint"]
        self.shards = shards
        self.mode = mode
        self._embedder = embedder
        self._pages = SearchPageCache()
        self._knowledge = None

    @classmethod
    def open(cls, path: str | os.PathLike, *, mode: str = "hybrid", embedder=None) -> "LanceCatalog":
        meta = read_meta(path)
        shards = [CatalogShard(path, i, meta, embedder=embedder) for i in range(meta["shards"])]
        return cls(path, shards, meta, mode=mode, embedder=embedder)

    # -- helpers ---------------------------------------------------------------------------------------

    @property
    def embedder(self):
        if self._embedder is None:
            from ecab.catalog.embed import get_embedder

            self._embedder = get_embedder()
            if self._embedder.model_name != self.meta["embedding_model"]:
                raise ValueError(f"{self.path}: built with {self.meta['embedding_model']}, "
                                 f"query embedder is {self._embedder.model_name}")
        return self._embedder

    def _owner(self, product_id: str) -> CatalogShard:
        return self.shards[shard_of(product_id, len(self.shards))]

    # -- CatalogReader ---------------------------------------------------------------------------------

    def count(self) -> int:
        return int(self.meta["counts"][PRODUCTS])

    def search(self, query: str, *, limit: int = 20, offset: int = 0, mode: str | None = None,
               where: str | None = None) -> SearchPage:
        return self._pages.search(query, mode or self.mode, limit, offset, where, self._search)

    def _search(self, query: str, mode: str, limit: int, offset: int, where: str | None) -> SearchPage:
        if mode == "hybrid":
            depth = max(HYBRID_DEPTH, offset + limit)
            return fuse(mode, self._hybrid_parts(query, depth, where), limit=limit, offset=offset, depth=depth)
        vector = self.embedder.encode_query(query) if mode == "vector" else None
        depth = max(offset + limit, 1)
        parts = [s.candidates(mode, query, vector, depth=depth, where=where) for s in self.shards]
        return fuse(mode, parts, limit=limit, offset=offset, depth=depth)

    def _hybrid_parts(self, query: str, depth: int, where: str | None) -> list[ShardCandidates]:
        """Both legs of every shard; the keyword legs run while the query is being embedded (~10 ms)."""
        keyword = _LEG_POOL.submit(lambda: [s.keyword_leg(query, depth, where) for s in self.shards])
        vector = self.embedder.encode_query(query)
        nearest = [s.vector_leg(vector, depth, where) for s in self.shards]
        return [ShardCandidates(fts=f, vector=v) for f, v in zip(keyword.result(), nearest)]

    def search_cache_stats(self) -> dict[str, int]:
        return self._pages.stats()

    def clear_caches(self) -> None:
        """Forget cached search pages and query vectors (benchmarks time cold searches)."""
        self._pages.clear()
        if self._embedder is not None:
            self._embedder.clear_cache()

    def get_product(self, product_id: str) -> Product | None:
        data = self._owner(product_id).product_data(product_id)
        return Product.from_dict(json.loads(data)) if data is not None else None

    def get_products(self, product_ids: list[str]) -> list[Product]:
        by_shard: dict[int, list[str]] = {}
        for pid in product_ids:
            by_shard.setdefault(shard_of(pid, len(self.shards)), []).append(pid)
        found: dict[str, str] = {}
        for index, pids in by_shard.items():
            found.update(self.shards[index].products_data(pids))
        return [Product.from_dict(json.loads(found[pid])) for pid in product_ids if pid in found]

    def get_reviews(self, product_id: str, limit: int = 20) -> list[Review]:
        rows = self._owner(product_id).review_rows(product_id)
        return [Review.from_dict(json.loads(row)) for row in rows[:max(0, limit)]]

    def search_reviews(self, product_id: str, query: str, limit: int = 5, *,
                       mode: str | None = None) -> list[Review]:
        mode = mode or self.mode
        if not _HAS_WORD.search(query or "") or limit <= 0:
            return []
        vector = self.embedder.encode_query(query) if mode in ("hybrid", "vector") else None
        rows = self._owner(product_id).search_reviews(product_id, query, vector, limit=limit, mode=mode)
        return [Review.from_dict(json.loads(row)) for row in rows]

    def store_products(self, store: str, *, limit: int = 20, offset: int = 0) -> SearchPage:
        rows = heapq.merge(*(s.store_rows(store) for s in self.shards))
        rows = list(rows)
        offset, limit = max(0, offset), max(0, limit)
        hits = [SearchHit(pid, title, 0.0) for _, pid, title in rows[offset:offset + limit]]
        return SearchPage(hits=hits, total=len(rows))

    def iter_products(self, batch_size: int = 1024) -> Iterator[list[Product]]:
        """Every product once, in build order whatever the shard count."""
        yield from batched_products(heapq.merge(*(s.iter_rows(batch_size) for s in self.shards)), batch_size)

    def knowledge(self):
        """What construction may know about this catalog, from its rows (ecab/catalog/knowledge.py);
        computed on first use, then kept."""
        if self._knowledge is None:
            from ecab.catalog.knowledge import CatalogKnowledge

            self._knowledge = CatalogKnowledge.from_products(
                lambda: (p for batch in self.iter_products() for p in batch))
        return self._knowledge

    def disk_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.path.rglob("*") if p.is_file())


def open_shard(path: str | os.PathLike, index: int, *, embedder=None) -> CatalogShard:
    """Open one shard read-only (for a Ray actor that hosts it)."""
    return CatalogShard(path, index, embedder=embedder)

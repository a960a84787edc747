"""Build a catalog once: stream `CatalogBatch`es into the sharded LanceDB layout of layout.py, then index it.

Nothing but the current batch is held in memory; the catalog appears complete (renamed into place) or not
at all. Indexes: the original's title FTS (no stemming, docs/original-harness.md §1.4), the stemmed
`search_text` FTS, BTree on the lookup columns, and an IVF_FLAT title-vector index on big shards
(docs/decisions.md#ivf-probes).
"""
from __future__ import annotations

import json
import os
import shutil
import time
import warnings
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Iterable, Iterator

import numpy as np
import pyarrow as pa

from ecab.catalog.base import CatalogBatch
from ecab.catalog.embedding_model import DIM
from ecab.catalog.layout import (FORMAT_VERSION, META_FILE, PRODUCTS, REVIEWS, VECTOR_INDEX_MIN_ROWS,
                                 VECTOR_MAX_NPROBES, product_schema, product_search_text, review_schema,
                                 review_search_text, shard_dir, shard_of)
from ecab.core.build_temp import make_temp_dir, sweep
from ecab.fields import IMPLICIT_ELIGIBLE_FIELDS
from ecab.schema import Product, Review


def _dumps(record: Product | Review) -> str:
    return json.dumps(record.to_dict(), ensure_ascii=False)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _integer(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None



# ---------------------------------------------------------------------------------------------------------
# Arrow rows
# ---------------------------------------------------------------------------------------------------------

def _vectors_array(vectors: np.ndarray, dim: int) -> pa.Array:
    flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1))
    return pa.FixedSizeListArray.from_arrays(flat, dim)


def product_row_schema() -> pa.Schema:
    """The products table's columns without the title vector: what a batch is before it is embedded."""
    schema = product_schema(DIM)
    return schema.remove(schema.get_field_index("vector"))


def product_rows(products: list[Product], seqs: list[int], review_counts: dict[str, int]) -> pa.Table:
    """The products' rows, every column but the title vector (product_row_schema)."""
    schema = product_row_schema()
    columns: dict[str, list] = {name: [] for name in schema.names}
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
    return pa.Table.from_arrays([pa.array(columns[f.name], type=f.type) for f in schema], schema=schema)


def with_vectors(rows: pa.Table, vectors: np.ndarray, dim: int) -> pa.Table:
    """`rows` (product_rows) with their title vectors appended: the stored products table."""
    return rows.append_column(product_schema(dim).field("vector"), _vectors_array(vectors, dim))


def _product_table(products: list[Product], seqs: list[int], review_counts: dict[str, int],
                   vectors: np.ndarray, dim: int) -> pa.Table:
    return with_vectors(product_rows(products, seqs, review_counts), vectors, dim)


def review_rows(reviews: list[Review], seqs: list[int]) -> pa.Table:
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
class ShardWriter:
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

    @classmethod
    def resume(cls, path: Path, dim: int, counts: dict[str, int], seq_ends: dict[str, int]) -> "ShardWriter":
        """The shard as a checkpoint left it: its tables reopened with `counts` rows each, and any row at or
        past `seq_ends` (an append that committed after the checkpoint was written) deleted."""
        writer = cls(path, dim, n_products=counts[PRODUCTS], n_reviews=counts[REVIEWS])
        existing = set(writer.db.list_tables().tables)
        for name in (PRODUCTS, REVIEWS):
            if name not in existing:
                continue
            table = writer.db.open_table(name)
            if table.count_rows(f"seq >= {int(seq_ends[name])}"):
                table.delete(f"seq >= {int(seq_ends[name])}")
            setattr(writer, name, table)
        return writer

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
    sweep_killed_builds(out_dir.parent)
    tmp = make_temp_dir(out_dir.parent, f".{out_dir.name}")   # names this process: a later sweep knows it
    started = time.time()
    try:
        writers = [ShardWriter(shard_dir(tmp, i), embedder.dim) for i in range(shards)]
        stats = _write_batches(batches, writers, embedder, progress, total_products)
        versions = [w.finish() for w in writers]
        meta = catalog_meta(fingerprint, writers, versions, stats, embedder.model_name, embedder.dim, started,
                            source)
        (tmp / META_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        os.rename(tmp, out_dir)   # atomic: the catalog appears complete or not at all
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out_dir


def sweep_killed_builds(parent: Path) -> None:
    """Remove what builds killed before their rename left in `parent` (ecab/core/build_temp.py: only folders
    whose owner is certainly dead, never a concurrent build's), and say so: it may be gigabytes."""
    removed = sweep(parent)
    if removed:
        print(f"removed {len(removed)} temporary folder(s) of killed builds from {parent}: "
              f"{', '.join(p.name for p in removed)}")


@dataclass
class PreparedBatch:
    """One source batch after de-duplication, numbered in build order: what both builders embed and write."""

    products: list[Product]
    product_seqs: list[int]
    review_counts: dict[str, int]
    reviews: list[Review]
    review_seqs: list[int]


def prepare_batches(batches: Iterable[CatalogBatch], stats: dict[str, int]) -> Iterator[PreparedBatch]:
    """De-duplicate and number the stream: duplicate product ids keep the first occurrence, reviews of a
    product not seen so far are dropped (both counted into `stats`), `seq`s count up over the whole stream.
    Sequential by nature (it remembers every id), and cheap next to embedding."""
    seen: set[str] = set()
    stats.setdefault("duplicate_products", 0)
    stats.setdefault("orphan_reviews", 0)
    next_product_seq = next_review_seq = 0
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
        yield PreparedBatch(products, product_seqs, review_counts, reviews, review_seqs)


def catalog_meta(fingerprint: str, writers: list[ShardWriter], versions: list[dict[str, int]],
                 stats: dict[str, int], model_name: str, dim: int, started: float,
                 source: dict[str, Any] | None) -> dict[str, Any]:
    """meta.json of a finished build (layout.py)."""
    return {
        "format": FORMAT_VERSION,
        "fingerprint": fingerprint,
        "shards": len(writers),
        "counts": {PRODUCTS: sum(w.n_products for w in writers), REVIEWS: sum(w.n_reviews for w in writers)},
        "shard_counts": [{PRODUCTS: w.n_products, REVIEWS: w.n_reviews} for w in writers],
        "versions": versions,
        "skipped": stats,
        "embedding_model": model_name,
        "embedding_dim": dim,
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "build_seconds": round(time.time() - started, 2),
        "source": source or {},
    }


def _write_batches(batches: Iterable[CatalogBatch], writers: list[ShardWriter], embedder, progress: bool,
                   total_products: int | None) -> dict[str, int]:
    from tqdm import tqdm

    stats = {"duplicate_products": 0, "orphan_reviews": 0}
    bar = tqdm(total=total_products, unit="product", desc="build catalog", disable=not progress)
    try:
        for batch in prepare_batches(batches, stats):
            title_vectors = embedder.encode([p.title or "" for p in batch.products])
            _route(writers, batch.products, batch.product_seqs, batch.review_counts, title_vectors, batch.reviews,
                   batch.review_seqs)
            bar.update(len(batch.products))
    finally:
        bar.close()
    return stats


def add_routed(writers: list[ShardWriter], products: pa.Table, reviews: pa.Table) -> None:
    """Append one embedded batch's tables (with_vectors, review_rows), each row to its product's shard."""
    n = len(writers)
    for name, table in ((PRODUCTS, products), (REVIEWS, reviews)):
        shard = np.array([shard_of(pid, n) for pid in table.column("product_id").to_pylist()], dtype=np.int64)
        for i, writer in enumerate(writers):
            rows = np.flatnonzero(shard == i)
            if len(rows):
                writer.add(name, table if len(rows) == table.num_rows else table.take(rows))


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
            writer.add(REVIEWS, review_rows([reviews[j] for j in rows], [review_seqs[j] for j in rows]))


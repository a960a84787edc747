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
import uuid
import warnings
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pyarrow as pa

from ecab.catalog.base import CatalogBatch
from ecab.catalog.layout import (FORMAT_VERSION, META_FILE, PRODUCTS, REVIEWS, VECTOR_INDEX_MIN_ROWS,
                                 VECTOR_MAX_NPROBES, product_schema, product_search_text, review_schema,
                                 review_search_text, shard_dir, shard_of)
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
        writers = [_ShardWriter(shard_dir(tmp, i), embedder.dim) for i in range(shards)]
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


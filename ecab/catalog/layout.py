"""What a built catalog directory is: files, tables, columns, indexes, and which shard owns a product.

    <dir>/meta.json           fingerprint, counts, shard count, embedding model, table versions, build time
    <dir>/shard-00/           a LanceDB database with tables `products` and `reviews`
    <dir>/shard-01/ ...       (catalog.shards > 1: product -> shard by a stable hash of product_id)

The writer (writer.py) produces this layout and the shard reader (shard.py) opens it; both read the names,
schemas and derived columns from here, so the two never disagree about what is stored.
"""
from __future__ import annotations

import hashlib
import json
import os
import warnings
from pathlib import Path
from typing import Any

import pyarrow as pa

from ecab.fields import DETAIL_FIELDS, lookup_detail
from ecab.schema import Product, Review

# lancedb warns in every child forked from a process that has it loaded. The children ecab forks (Ray's
# processes, the simulator) exec a new program at once, so the warning is noise, printed once per process
# Ray starts.
warnings.filterwarnings("ignore", message="lancedb fork support is experimental", category=RuntimeWarning)

FORMAT_VERSION = 1
META_FILE = "meta.json"
PRODUCTS, REVIEWS = "products", "reviews"
# Vector index: flat scan below VECTOR_INDEX_MIN_ROWS rows per shard, else IVF_FLAT probed VECTOR_NPROBES
# partitions; see docs/decisions.md#ivf-probes.
VECTOR_INDEX_MIN_ROWS = 5000
VECTOR_NPROBES = 16
# A selective `where` prefilter can leave fewer than `limit` rows in the probed partitions; lancedb then
# probes further partitions, up to this many (i.e. all of them), so filtered searches never come up short.
VECTOR_MAX_NPROBES = 4096


def shard_dir(root: str | os.PathLike, index: int) -> Path:
    """The LanceDB database of shard `index`."""
    return Path(root) / f"shard-{index:02d}"


def shard_of(product_id: str, n_shards: int) -> int:
    """The shard owning `product_id`: stable across processes and machines (never Python's salted hash)."""
    if n_shards <= 1:
        return 0
    digest = hashlib.sha256(product_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % n_shards


def read_meta(path: str | os.PathLike) -> dict[str, Any]:
    """The catalog's meta.json, refused when missing, unreadable or of another format version."""
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
    """What review search sees (and review vectors embed): title and text."""
    return f"{review.title}\n{review.text}".strip()


# ---------------------------------------------------------------------------------------------------------
# Arrow schemas
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


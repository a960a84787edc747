"""Amazon Reviews 2023 JSONL as a catalog source: the raw `meta_<Category>.jsonl` / `<Category>.jsonl` files.

`iter_amazon` follows the original build's rules (docs/original-harness.md §1.2-§1.3): `parent_asin` becomes
`product_id`, the first occurrence wins, `bought_together` is dropped, everything else is kept; reviews are kept
only for known products and capped at 20 per product with a seeded, process-independent pick. Like every source
it yields `CatalogBatch`es (products plus the reviews of exactly those products), so a store is built from it in
one streaming pass. The other real sources: product_db.py (the original `product.db`) and targets.py (a task
file's targets, their siblings and distractors).
"""
from __future__ import annotations

import json
import random
import sqlite3
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Iterator

from ecab.catalog.base import CatalogBatch, product_batches
from ecab.schema import FormatError, Product, Review, iter_jsonl


META_PREFIX = "meta_"
# Meta keys the original build removes (docs/original-harness.md §1.2); `parent_asin` is moved to `product_id`.
DROPPED_META_KEYS = ("bought_together",)
# Review keys the original `reviews` table keeps (docs/original-harness.md §1.3); images, asin and user_id are dropped.
REVIEW_COLUMNS = ("review_id", "product_id", "rating", "title", "text", "helpful_vote", "verified_purchase",
                  "timestamp")
# SQLite's bound-parameter limit is 32766 in current builds but 999 in old ones: stay under both.
SQL_IN_CHUNK = 900


# ---------------------------------------------------------------------------------------------------------
# Input discovery
# ---------------------------------------------------------------------------------------------------------

def resolve_inputs(path: Path) -> tuple[list[Path], list[Path]]:
    """(meta files, review files), each in sorted filename order.

    Accepted layouts:
    - a directory holding `meta_<Category>.jsonl` and `<Category>.jsonl` side by side;
    - a directory with `meta_categories/` and `review_categories/` (the Hugging Face `raw/` layout), or with
      `products/` and `reviews/` (what the original download script writes);
    - a single `.jsonl` file, read as metadata with no reviews (like the original's `--input FILE`).
    """
    path = Path(path)
    if path.is_file():
        return [path], []
    if not path.is_dir():
        raise FormatError("no such file or directory", path=path)
    for meta_dir, review_dir in (("meta_categories", "review_categories"), ("products", "reviews"),
                                 ("raw/meta_categories", "raw/review_categories")):
        if (path / meta_dir).is_dir():
            reviews = sorted((path / review_dir).glob("*.jsonl")) if (path / review_dir).is_dir() else []
            return _require_meta(sorted((path / meta_dir).glob("*.jsonl")), path / meta_dir), reviews
    files = sorted(path.glob("*.jsonl"))
    meta = [f for f in files if f.name.startswith(META_PREFIX)]
    reviews = [f for f in files if not f.name.startswith(META_PREFIX)]
    return _require_meta(meta, path), reviews


def _require_meta(meta: list[Path], where: Path) -> list[Path]:
    if not meta:
        raise FormatError(f"no metadata files found (expected {META_PREFIX}<Category>.jsonl)", path=where)
    return meta


# ---------------------------------------------------------------------------------------------------------
# Amazon Reviews 2023 JSONL
# ---------------------------------------------------------------------------------------------------------

def iter_amazon(meta_paths: list[Path], review_paths: list[Path] | None = None, *, max_reviews: int = 20,
                seed: int = 42, batch_size: int = 1000) -> Iterator[CatalogBatch]:
    """Stream products (first `parent_asin` wins) with their capped reviews, in meta file order.

    Files are read in sorted filename order. Passes and memory:
    1. meta pass 1 collects the set of product ids (ids only, never the records);
    2. review pass 1 counts the reviews per known product (a dict of counts);
    3. review pass 2 keeps every review of a product with at most `max_reviews`, and for a larger product
       only the positions `sorted(random.Random(f"{pid}_{seed}").sample(range(count), max_reviews))`
       (positions are the product's reviews in file order, counted over all review files); the kept
       reviews go to a temporary SQLite file, not to memory;
    4. meta pass 2 streams the records again and emits batches of `batch_size` products joined to their
       reviews from the temporary file.
    So memory holds ids and counts (a few hundred MB at the paper's 3.7M products) but no records; the
    temporary file holds at most `max_reviews` reviews per product.

    Why `random.Random(str)`: a string seed is hashed with SHA-512 by `random`, so the pick is the same in
    every process and on every machine, unlike `hash()`, which PYTHONHASHSEED salts. (The paper DB used a
    salted seed, so its subset cannot be reproduced; docs/original-harness.md §1.3.)

    Review ids are 1, 2, ... over the kept reviews in file order, as the original's AUTOINCREMENT gives.
    """
    meta_paths = sorted(Path(p) for p in meta_paths)
    review_paths = sorted(Path(p) for p in review_paths or [])
    if not review_paths:
        yield from product_batches(_iter_meta_products(meta_paths), batch_size, lambda ids: [])
        return
    known = _meta_ids(meta_paths)
    with tempfile.TemporaryDirectory(prefix="ecab-reviews-") as tmp:
        kept = _KeptReviews(Path(tmp) / "reviews.sqlite")
        try:
            counts = _count_reviews(review_paths, known)
            del known  # pass 2 of the meta files keeps its own seen-set; do not hold both
            kept.load(_pick_reviews(review_paths, counts, max_reviews, seed))
            del counts
            yield from product_batches(_iter_meta_products(meta_paths), batch_size, kept.for_products)
        finally:
            kept.close()


def _meta_ids(paths: list[Path]) -> set[str]:
    """Every product id (parent_asin) of the meta files."""
    ids: set[str] = set()
    for path in paths:
        for lineno, obj in iter_jsonl(path):
            ids.add(_parent_asin(obj, path, lineno))
    return ids


def _iter_meta_products(paths: list[Path]) -> Iterator[Product]:
    """Products from meta records, duplicates skipped (first occurrence wins)."""
    seen: set[str] = set()
    for path in paths:
        for lineno, obj in iter_jsonl(path):
            pid = _parent_asin(obj, path, lineno)
            if pid in seen:
                continue
            seen.add(pid)
            yield _meta_to_product(pid, obj, path, lineno)


def _parent_asin(obj: dict[str, Any], path: Path, lineno: int) -> str:
    pid = obj.get("parent_asin")
    if not isinstance(pid, str) or not pid:
        problem = "required field is missing" if "parent_asin" not in obj else f"must be a non-empty string, got {pid!r}"
        raise FormatError(problem, path=path, line=lineno, field="parent_asin")
    return pid


def _meta_to_product(pid: str, obj: dict[str, Any], path: Path, lineno: int) -> Product:
    data: dict[str, Any] = {"product_id": pid}
    data.update((k, v) for k, v in obj.items() if k != "parent_asin" and k not in DROPPED_META_KEYS)
    coerce_numbers(data)
    try:
        return Product.from_dict(data)
    except FormatError as exc:
        raise exc.located(path, lineno) from None


def coerce_numbers(data: dict[str, Any]) -> None:
    """Make `price` / `average_rating` numbers or null; an unreadable raw value is kept as `raw_<key>`.

    The 2023 metadata mostly has numbers or null here, but some records carry strings ("$12.99", "None",
    "from 5.99"); a product must not be lost, nor a price invented, for that.
    """
    for key in ("price", "average_rating"):
        value = data.get(key)
        if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)):
            continue
        number = _parse_number(value)
        if number is None and value not in ("", "None", "null"):
            data[f"raw_{key}"] = value
        data[key] = number


def _parse_number(value: Any) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        number = float(value.strip().lstrip("$").replace(",", ""))
    except ValueError:
        return None
    return number if number == number and abs(number) != float("inf") else None


def _iter_review_records(paths: list[Path], known: set[str] | Counter) -> Iterator[tuple[str, dict, Path, int]]:
    """(product id, raw review, file, line) for reviews of known products, in file order."""
    for path in paths:
        for lineno, obj in iter_jsonl(path):
            pid = _parent_asin(obj, path, lineno)
            if pid in known:
                yield pid, obj, path, lineno


def _count_reviews(paths: list[Path], known: set[str]) -> Counter:
    return Counter(pid for pid, _, _, _ in _iter_review_records(paths, known))


def picked_positions(pid: str, count: int, max_reviews: int = 20, seed: int = 42) -> set[int] | None:
    """The 0-based positions kept of a product's `count` reviews; None when all are kept."""
    if count <= max_reviews:
        return None
    return set(random.Random(f"{pid}_{seed}").sample(range(count), max_reviews))


def _pick_reviews(paths: list[Path], counts: Counter, max_reviews: int, seed: int) -> Iterator[Review]:
    """Second review pass: the kept reviews, numbered 1, 2, ... in file order."""
    seen: Counter = Counter()  # reviews met so far, only for products with reviews still to come
    picks: dict[str, set[int] | None] = {}
    review_id = 0
    for pid, obj, path, lineno in _iter_review_records(paths, counts):
        position = seen[pid]
        if position == 0:
            picks[pid] = picked_positions(pid, counts[pid], max_reviews, seed)
        chosen = picks[pid]
        if position + 1 == counts[pid]:  # the product's last review: forget its state
            del seen[pid], picks[pid]
        else:
            seen[pid] = position + 1
        if chosen is not None and position not in chosen:
            continue
        review_id += 1
        yield _raw_to_review(review_id, pid, obj, path, lineno)


def _raw_to_review(review_id: int, pid: str, obj: dict[str, Any], path: Path, lineno: int) -> Review:
    """The original's kept review columns; nulls become the column defaults."""
    data = {"review_id": review_id, "product_id": pid, "rating": obj.get("rating"),
            "title": obj.get("title") or "", "text": obj.get("text") or "",
            "helpful_vote": obj.get("helpful_vote") or 0, "verified_purchase": bool(obj.get("verified_purchase")),
            "timestamp": obj.get("timestamp")}
    try:
        return Review.from_dict(data)
    except FormatError as exc:
        raise exc.located(path, lineno) from None


class _KeptReviews:
    """The capped reviews in a temporary SQLite file, looked up per product batch in review_id order."""

    def __init__(self, path: Path):
        self.conn = sqlite3.connect(path)
        # A scratch file: durability is not wanted, speed is.
        self.conn.execute("PRAGMA journal_mode=OFF")
        self.conn.execute("PRAGMA synchronous=OFF")
        self.conn.execute("CREATE TABLE reviews (review_id INTEGER PRIMARY KEY, product_id TEXT NOT NULL, "
                          "data TEXT NOT NULL)")

    def load(self, reviews: Iterable[Review]) -> None:
        rows = ((r.review_id, r.product_id, json.dumps(r.to_dict(), ensure_ascii=False)) for r in reviews)
        with self.conn:
            self.conn.executemany("INSERT INTO reviews VALUES (?, ?, ?)", rows)
            # Built after the load: one sort instead of a b-tree update per insert.
            self.conn.execute("CREATE INDEX idx_product ON reviews(product_id)")

    def for_products(self, product_ids: list[str]) -> list[Review]:
        rows: list[tuple[int, str]] = []
        for start in range(0, len(product_ids), SQL_IN_CHUNK):
            chunk = product_ids[start:start + SQL_IN_CHUNK]
            marks = ",".join("?" * len(chunk))
            rows += self.conn.execute(f"SELECT review_id, data FROM reviews WHERE product_id IN ({marks})",
                                      chunk).fetchall()
        return [Review.from_dict(json.loads(data)) for _, data in sorted(rows)]

    def close(self) -> None:
        self.conn.close()



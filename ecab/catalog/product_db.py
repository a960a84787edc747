"""The original harness's prebuilt SQLite `product.db` as a catalog source (docs/original-harness.md §1.2-§1.3).

It was built from the Amazon Reviews 2023 files, so its rows follow amazon.py's columns and number rules."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Iterator

from ecab.catalog.amazon import REVIEW_COLUMNS, SQL_IN_CHUNK, coerce_numbers
from ecab.catalog.base import CatalogBatch, product_batches
from ecab.schema import FormatError, Product, Review


def iter_product_db(sqlite_path: Path, *, batch_size: int = 1000) -> Iterator[CatalogBatch]:
    """Stream the original `product.db` (docs/original-harness.md §1.2-§1.3): products in rowid order, reviews in
    review_id order.

    `product_id` comes from the column; every other key from the `data` JSON. The file is opened read-only.
    """
    sqlite_path = Path(sqlite_path)
    if not sqlite_path.is_file():
        raise FormatError("file not found", path=sqlite_path)
    conn = sqlite3.connect(f"{sqlite_path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        _check_product_db(conn, sqlite_path)
        yield from product_batches(_iter_db_products(conn, sqlite_path, batch_size), batch_size,
                                    lambda ids: _db_reviews(conn, sqlite_path, ids))
    finally:
        conn.close()


def _check_product_db(conn: sqlite3.Connection, path: Path) -> None:
    try:
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.DatabaseError as exc:
        raise FormatError(f"not a SQLite database ({exc})", path=path) from None
    missing = [t for t in ("products", "reviews") if t not in tables]
    if missing:
        raise FormatError(f"not an EComAgentBench product.db: missing table(s) {', '.join(missing)} "
                          "(build products, then reviews, as docs/original-harness.md §1.2-§1.3 describe)", path=path)


def _iter_db_products(conn: sqlite3.Connection, path: Path, page: int) -> Iterator[Product]:
    # Keyset pages instead of one open cursor, so the review queries in between never disturb it.
    last = -1 << 63
    while True:
        rows = conn.execute("SELECT rowid, product_id, data FROM products WHERE rowid > ? ORDER BY rowid LIMIT ?",
                            (last, page)).fetchall()
        if not rows:
            return
        for rowid, pid, data in rows:
            yield _db_product(rowid, pid, data, path)
        last = rows[-1][0]


def _db_product(rowid: int, pid: str, data: str, path: Path) -> Product:
    where = f"products[rowid={rowid}].data"
    try:
        obj = json.loads(data)
    except (TypeError, json.JSONDecodeError) as exc:
        raise FormatError(f"malformed JSON ({exc})", path=path, field=where) from None
    if not isinstance(obj, dict):
        raise FormatError(f"expected a JSON object, got {type(obj).__name__}", path=path, field=where)
    record = {"product_id": pid}
    record.update((k, v) for k, v in obj.items() if k not in ("product_id", "parent_asin"))
    coerce_numbers(record)
    try:
        return Product.from_dict(record, f"products[rowid={rowid}]")
    except FormatError as exc:
        raise FormatError(exc.reason, path=path, field=exc.field) from None


def _db_reviews(conn: sqlite3.Connection, path: Path, product_ids: list[str]) -> list[Review]:
    rows: list[tuple] = []
    columns = ", ".join(REVIEW_COLUMNS)
    for start in range(0, len(product_ids), SQL_IN_CHUNK):
        chunk = product_ids[start:start + SQL_IN_CHUNK]
        marks = ",".join("?" * len(chunk))
        rows += conn.execute(f"SELECT {columns} FROM reviews WHERE product_id IN ({marks})", chunk).fetchall()
    rows.sort(key=lambda row: row[0])
    reviews = []
    for row in rows:
        data = dict(zip(REVIEW_COLUMNS, row))
        data["title"] = data["title"] or ""
        data["text"] = data["text"] or ""
        data["helpful_vote"] = data["helpful_vote"] or 0
        data["verified_purchase"] = bool(data["verified_purchase"])
        try:
            reviews.append(Review.from_dict(data, f"reviews[review_id={data['review_id']}]"))
        except FormatError as exc:
            raise FormatError(exc.reason, path=path, field=exc.field) from None
    return reviews



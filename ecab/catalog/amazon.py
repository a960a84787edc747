"""Real catalog sources: Amazon Reviews 2023 JSONL, the original `product.db`, and a task file's targets.

Every source yields `CatalogBatch`es (products plus the reviews of exactly those products) so a store can
be built from any of them in one streaming pass.

- `iter_amazon`: the raw `meta_<Category>.jsonl` / `<Category>.jsonl` files of Amazon Reviews 2023, with the
  original build's rules (docs/original-harness.md §1.2-§1.3): `parent_asin` becomes `product_id`, the first
  occurrence wins, `bought_together` is dropped, everything else is kept; reviews are kept only for known products and
  capped at 20 per product with a seeded, process-independent pick.
- `iter_product_db`: the prebuilt SQLite `product.db` of the original harness.
- `iter_targets`: the target products of a `benchmark.jsonl`, their hard-negative siblings
  (ecab/catalog/siblings/: per rubric, products that violate exactly that rubric, so every requirement
  matters) and synthetic distractors. Released tasks carry no review text (docs/original-harness.md §9), so
  targets and siblings get synthetic reviews that state their task's review_opinion rubrics, which lets the
  harness run on the real samples without the 25 GB DB.
"""
from __future__ import annotations

import json
import random
import sqlite3
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Iterator

from ecab.catalog.base import CatalogBatch
from ecab.schema import FormatError, Product, Review, Task, iter_jsonl, iter_tasks

META_PREFIX = "meta_"
# Meta keys the original build removes (docs/original-harness.md §1.2); `parent_asin` is moved to `product_id`.
DROPPED_META_KEYS = ("bought_together",)
# Review keys the original `reviews` table keeps (docs/original-harness.md §1.3); images, asin and user_id are dropped.
REVIEW_COLUMNS = ("review_id", "product_id", "rating", "title", "text", "helpful_vote", "verified_purchase",
                  "timestamp")
# SQLite's bound-parameter limit is 32766 in current builds but 999 in old ones: stay under both.
_SQL_IN_CHUNK = 900


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
        yield from _product_batches(_iter_meta_products(meta_paths), batch_size, lambda ids: [])
        return
    known = _meta_ids(meta_paths)
    with tempfile.TemporaryDirectory(prefix="ecab-reviews-") as tmp:
        kept = _KeptReviews(Path(tmp) / "reviews.sqlite")
        try:
            counts = _count_reviews(review_paths, known)
            del known  # pass 2 of the meta files keeps its own seen-set; do not hold both
            kept.load(_pick_reviews(review_paths, counts, max_reviews, seed))
            del counts
            yield from _product_batches(_iter_meta_products(meta_paths), batch_size, kept.for_products)
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
    _coerce_numbers(data)
    try:
        return Product.from_dict(data)
    except FormatError as exc:
        raise exc.located(path, lineno) from None


def _coerce_numbers(data: dict[str, Any]) -> None:
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
        for start in range(0, len(product_ids), _SQL_IN_CHUNK):
            chunk = product_ids[start:start + _SQL_IN_CHUNK]
            marks = ",".join("?" * len(chunk))
            rows += self.conn.execute(f"SELECT review_id, data FROM reviews WHERE product_id IN ({marks})",
                                      chunk).fetchall()
        return [Review.from_dict(json.loads(data)) for _, data in sorted(rows)]

    def close(self) -> None:
        self.conn.close()


def _product_batches(products: Iterable[Product], batch_size: int, reviews_of) -> Iterator[CatalogBatch]:
    """Group products into batches of `batch_size`, each with `reviews_of(ids)` attached."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    batch: list[Product] = []
    for product in products:
        batch.append(product)
        if len(batch) == batch_size:
            yield CatalogBatch(products=batch, reviews=reviews_of([p.product_id for p in batch]))
            batch = []
    if batch:
        yield CatalogBatch(products=batch, reviews=reviews_of([p.product_id for p in batch]))


# ---------------------------------------------------------------------------------------------------------
# The original product.db
# ---------------------------------------------------------------------------------------------------------

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
        yield from _product_batches(_iter_db_products(conn, sqlite_path, batch_size), batch_size,
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
    _coerce_numbers(record)
    try:
        return Product.from_dict(record, f"products[rowid={rowid}]")
    except FormatError as exc:
        raise FormatError(exc.reason, path=path, field=exc.field) from None


def _db_reviews(conn: sqlite3.Connection, path: Path, product_ids: list[str]) -> list[Review]:
    rows: list[tuple] = []
    columns = ", ".join(REVIEW_COLUMNS)
    for start in range(0, len(product_ids), _SQL_IN_CHUNK):
        chunk = product_ids[start:start + _SQL_IN_CHUNK]
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


# ---------------------------------------------------------------------------------------------------------
# A task file's targets plus synthetic distractors
# ---------------------------------------------------------------------------------------------------------

# Sentences that carry a review_opinion verbatim. The opinion is inserted unchanged (only a trailing period
# is trimmed) so that substring, FTS and embedding checks all find it.
_OPINION_TEMPLATES = (
    "Honestly, {opinion}. I compared a few options before buying and this is the one I kept.",
    "After a few weeks of daily use: {opinion}. Exactly what I hoped for.",
    "The main thing for me: {opinion}. Would buy again.",
    "Short version for anyone on the fence: {opinion}.",
)
_OPINION_TITLES = ("Does what it promises", "Happy with this purchase", "Worth it", "Pleasantly surprised")
# Plain reviews that state no specific claim, so they cannot satisfy (or contradict) any rubric.
_FILLER_REVIEWS = (
    (5.0, "Great", "Arrived on time and well packaged. Does the job I bought it for."),
    (4.0, "Good overall", "Works as described. Nothing to complain about so far."),
    (3.0, "It's okay", "Decent for the price, though I expected a little more from the photos."),
    (5.0, "Recommend", "Bought this as a gift and they were happy with it."),
    (4.0, "Solid choice", "Setup was easy and it has held up fine after some use."),
    (2.0, "Not for me", "It works, but it did not quite fit what I needed. Returned it."),
    (5.0, "Five stars", "Exactly as pictured. Would order from this seller again."),
    (4.0, "As expected", "No surprises, good or bad. Fair value."),
    (3.0, "Average", "Does what it says. Shipping took longer than the estimate."),
    (5.0, "Love it", "Second time ordering this. Consistent quality both times."),
    (4.0, "Nice", "Good value for money, would recommend to friends."),
    (1.0, "Arrived damaged", "The box was crushed on arrival; the seller replaced it quickly."),
)
# §5.10 needs at least 10 reviews for a review_driven product; every target gets that many.
_MIN_TARGET_REVIEWS = 10
_BASE_TIMESTAMP_MS = 1_600_000_000_000
_DAY_MS = 86_400_000


def iter_targets(tasks_path: Path, *, n_distractors: int = 2000, seed: int = 0, batch_size: int = 1000,
                 siblings: int = 0, query_only_siblings: int = 0, report=None) -> Iterator[CatalogBatch]:
    """The target product of every task (unchanged, first task wins per id) and its hard-negative siblings
    (`siblings` per rubric and `query_only_siblings` per task, ecab/catalog/siblings/) in one seeded
    order, then `n_distractors` synthetic products from `ecab.catalog.synthetic.iter_synthetic` whose ids
    collide with neither. `catalog=targets` asks for 3 and 3 (conf/catalog/targets.yaml); without siblings the
    targets come first, in file order.

    Every target gets synthetic reviews, deterministic from its task id: one per review_opinion rubric that
    states the opinion verbatim (rating 5, the most helpful votes, so §5.10's selection would pick them),
    plus filler reviews up to 10 (targets without reviews would stand out among reviewed distractors);
    siblings get theirs from the same generator. Review ids are renumbered 1..N over the whole output so no
    two reviews collide. `report(line)`, when given, receives one line about the siblings made.
    """
    real, distractors, line = targets_and_siblings(tasks_path, n_distractors=n_distractors, seed=seed,
                                                   siblings=siblings, query_only_siblings=query_only_siblings)
    if report is not None and line:
        report(line)
    renumber = _Renumber()
    yield from _rebatch(((p, reviews) for p, reviews, _ in real), batch_size, renumber)
    yield from _rebatch(iter(distractors), batch_size, renumber)


def targets_and_siblings(tasks_path: Path, *, n_distractors: int = 2000, seed: int = 0, siblings: int = 3,
                         query_only_siblings: int = 3):
    """(targets and siblings in catalog order as (product, reviews, its siblings.Sibling record or None for
    a target), the distractors as (product, reviews), one line about the siblings) of `iter_targets`."""
    from ecab.catalog.siblings.make import make_siblings
    from ecab.catalog.siblings.pools import ValuePools

    tasks = list(iter_tasks(Path(tasks_path)))
    targets, target_reviews = _targets_with_reviews(Path(tasks_path))
    taken = {p.product_id for p in targets}
    distractors = list(_distractors(n_distractors, seed, taken))
    real = [(p, target_reviews[p.product_id], None) for p in targets]
    line = ""
    if siblings > 0 or query_only_siblings > 0:
        pools = ValuePools.build(targets, tasks, (p for p, _ in distractors))
        made, stats = make_siblings(tasks, per_rubric=siblings, query_only=query_only_siblings, seed=seed,
                                    taken=taken, pools=pools, make_reviews=_sibling_reviews(),
                                    review_checker=_review_checker())
        real += [(s.product, s.reviews, s) for s in made]
        random.Random(f"targets-order|{seed}").shuffle(real)
        line = f"catalog=targets: {len(targets)} targets, {stats.line()}"
    return real, distractors, line


def _review_checker():
    # the checker the rules judge uses by default decides "lacks the opinion"
    from ecab.catalog.review_match import default_review_checker

    return default_review_checker()


def _sibling_reviews():
    """make_reviews for siblings: `opinion_reviews` seeded by the sibling's id; fillers that would state an
    opinion the sibling must lack (by the judge's review checker) are not used."""
    checker = None
    states: dict[tuple[str, int], bool] = {}

    def fillers_without(avoid: list[str]) -> tuple:
        nonlocal checker
        if not avoid:
            return _FILLER_REVIEWS
        checker = checker or _review_checker()
        keep = []
        for n, (rating, title, text) in enumerate(_FILLER_REVIEWS):
            ok = True
            for opinion in avoid:
                if (opinion, n) not in states:
                    review = Review(review_id=0, product_id="filler", rating=rating, title=title, text=text)
                    states[(opinion, n)] = checker.check(opinion, [review], product_id=None).satisfied
                ok = ok and not states[(opinion, n)]
            if ok:
                keep.append((rating, title, text))
        return tuple(keep)

    def make(product_id: str, task_id: str, opinions: list[str], rng: random.Random, avoid=()) -> list[Review]:
        return opinion_reviews(product_id, opinions, random.Random(f"{product_id}_reviews"),
                               fillers=fillers_without(list(avoid)))
    return make


def _targets_with_reviews(tasks_path: Path) -> tuple[list[Product], dict[str, list[Review]]]:
    targets: dict[str, Product] = {}
    reviews: dict[str, list[Review]] = {}
    for task in iter_tasks(tasks_path):
        pid = task.target_product.product_id
        if pid not in targets:
            targets[pid] = task.target_product
            reviews[pid] = []
        reviews[pid].extend(synthetic_target_reviews(task, start=len(reviews[pid])))
    return list(targets.values()), reviews


def synthetic_target_reviews(task: Task, *, start: int = 0) -> list[Review]:
    """Reviews for a task's target: each review_opinion stated verbatim, plus fillers; seeded by task id.

    `review_id`s are placeholders (`start`, `start + 1`, ...); `iter_targets` renumbers them.
    """
    return opinion_reviews(task.target_product.product_id,
                           [r.opinion for r in task.rubrics if r.type == "review_opinion"],
                           random.Random(f"{task.id}_target_reviews"), start=start)


def opinion_reviews(product_id: str, opinions: list[str], rng: random.Random, *, start: int = 0,
                    fillers: tuple = _FILLER_REVIEWS) -> list[Review]:
    """One review stating each opinion verbatim plus filler reviews up to 10, in a shuffled order (the
    generator of targets' and siblings' reviews)."""
    opinions = [op.strip().rstrip(".") for op in opinions]
    rows = [(5.0, rng.choice(_OPINION_TITLES), rng.choice(_OPINION_TEMPLATES).format(opinion=op),
             rng.randint(20, 60)) for op in opinions]
    wanted = max(0, _MIN_TARGET_REVIEWS - start - len(rows))  # `start`: reviews from an earlier task
    fillers = rng.sample(fillers, k=min(len(fillers), wanted))
    rows += [(rating, title, text, rng.randint(0, 5)) for rating, title, text in fillers]
    rng.shuffle(rows)
    return [Review(review_id=start + i, product_id=product_id, rating=rating, title=title,
                   text=text, helpful_vote=votes, verified_purchase=rng.random() < 0.8,
                   timestamp=_BASE_TIMESTAMP_MS + rng.randint(0, 900) * _DAY_MS)
            for i, (rating, title, text, votes) in enumerate(rows)]


class _Renumber:
    """Gives reviews consecutive integer ids in emission order."""

    def __init__(self):
        self.next_id = 1

    def __call__(self, reviews: list[Review]) -> list[Review]:
        for review in reviews:
            review.review_id = self.next_id
            self.next_id += 1
        return reviews


def _distractors(n: int, seed: int, taken: set[str]) -> Iterator[tuple[Product, list[Review]]]:
    """Up to `n` synthetic products (with their reviews) whose ids are not in `taken`."""
    if n <= 0:
        return
    from ecab.catalog.synthetic import iter_synthetic  # lazy: a targets-only catalog needs no generator

    emitted = 0
    # Ask for enough extra products to replace any that collide with a target id.
    for batch in iter_synthetic(n + len(taken), seed):
        by_product: dict[str, list[Review]] = {}
        for review in batch.reviews:
            by_product.setdefault(review.product_id, []).append(review)
        for product in batch.products:
            if product.product_id in taken:
                continue
            taken.add(product.product_id)
            yield product, by_product.get(product.product_id, [])
            emitted += 1
            if emitted == n:
                return


def _rebatch(items: Iterable[tuple[Product, list[Review]]], batch_size: int, renumber) -> Iterator[CatalogBatch]:
    batch = CatalogBatch()
    for product, reviews in items:
        batch.products.append(product)
        batch.reviews.extend(reviews)
        if len(batch.products) == batch_size:
            batch.reviews = renumber(batch.reviews)
            yield batch
            batch = CatalogBatch()
    if batch.products:
        batch.reviews = renumber(batch.reviews)
        yield batch

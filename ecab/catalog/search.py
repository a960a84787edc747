"""The search rules every catalog client shares: modes, argument checks, the original's phrases, and how
shard answers are merged into one page.

Search modes (SearchPage.total is documented per mode; it is never the original's "ids fetched"):

- ``original``: the original harness exactly (docs/original-harness.md §1.4): the query is split on whitespace, the
  characters ``" * ( ) - + ^ ~ :`` become spaces inside each token, every token is a quoted phrase, all phrases must
  match (AND), titles only, no stemming, BM25 order. The title index is built without stemming or stop
  words so this holds. ``total`` = every title that matches.
- ``fts``: BM25 over ``search_text`` (title + brand + key detail values) with English stemming and stop
  words removed; every remaining query term must match (AND). ``total`` = every product that matches.
- ``vector``: cosine similarity of the query to the title embedding. Every product is a match, so
  ``total`` = the number of products that pass ``where``.
- ``hybrid`` (default): a weighted sum of each leg's min-max normalized score (lancedb
  ``LinearCombinationReranker``, vector weight VECTOR_WEIGHT) over two legs of fixed depth D: the top D
  ``search_text`` BM25 matches of *any* query term, products matching *every* term scoring their AND match on
  top (a lancedb ``BooleanQuery`` of the two), and the D nearest titles. Measured on the generated tasks and
  the bench's queries, this never finds fewer targets than either leg alone (RRF did: docs/decisions.md#search-fusion).
  D = HYBRID_DEPTH while the page ends within 2·HYBRID_DEPTH (so the first pages tile one fused pool), else the
  page's end. Hybrid is a ranking, not a match rule, so ``total`` = the size of the fused candidate pool (union
  of both legs, at most 2·D): exactly the number of results one can page through.

`SearchHit.score` is the BM25 score (fts, original), the cosine similarity (vector) or the fused score in
[0, 1] (hybrid). `where` is a SQL prefilter over the product columns (price, average_rating, rating_number,
main_category, store, brand, review_count, ...), applied before ranking in every mode.

Review search (`search_reviews`) only ever sees the one product's reviews (a product_id prefilter); its hybrid
mode fuses the two legs by reciprocal rank (`rrf_fuse`, lancedb ``RRFReranker``).

Sharded search asks every shard for its own candidates (`ShardCandidates`), merges each leg by its score,
then fuses once (`fuse`), so any shard count gives the same page as an unsharded catalog, whether the shards
are in this process or behind Ray actors (facade.py).
"""
from __future__ import annotations

import heapq
import re
from dataclasses import dataclass, field
from typing import Iterable

import pyarrow as pa

from ecab.catalog.base import SearchHit, SearchPage

MODES = ("hybrid", "fts", "vector", "original")
EMBEDDING_MODES = ("hybrid", "vector")   # the modes that embed the query
# Hybrid product search: leg depth and the vector leg's weight in the fused score, chosen by measurement
# (docs/decisions.md#search-fusion): both legs are cut at D and normalized to [0, 1] before they are summed.
HYBRID_DEPTH = 50
VECTOR_WEIGHT = 0.1
RRF_K = 60   # review search's reciprocal-rank fusion
# The characters the original replaces with spaces inside each query token (docs/original-harness.md §1.4).
_ORIGINAL_SPECIALS = re.compile(r'["*()\-+^~:]')
# An FTS5 phrase with no letter or digit tokenizes to nothing and the original ignores it.
_HAS_WORD = re.compile(r"[^\W_]")


def check_mode(mode: str) -> str:
    """`mode`, or a ValueError naming the modes there are."""
    if mode not in MODES:
        raise ValueError(f"unknown search mode {mode!r} (expected one of {', '.join(MODES)})")
    return mode


def has_word(text: str | None) -> bool:
    """False for a query the original answers with nothing: no letter or digit in it."""
    return bool(_HAS_WORD.search(text or ""))


def search_args(query: str | None, mode: str, limit: int, offset: int) -> tuple[str | None, int, int]:
    """The checks every catalog client applies before searching: a known mode, non-negative paging, and
    the original's rule that a query with no word left has no results (mode None then)."""
    check_mode(mode)
    limit, offset = max(0, int(limit)), max(0, int(offset))
    return (mode if has_word(query) else None), limit, offset


def original_phrases(query: str) -> list[str]:
    """The phrases of the original's title search (docs/original-harness.md §1.4); [] means "no results"."""
    phrases = []
    for token in query.split():
        phrase = _ORIGINAL_SPECIALS.sub(" ", token).strip()
        if phrase and has_word(phrase):
            phrases.append(" ".join(phrase.split()))
    return phrases


def sql_quote(value: str) -> str:
    """A SQL string literal for a `where` clause."""
    return "'" + value.replace("'", "''") + "'"



@dataclass
class ShardCandidates:
    """One shard's answer to a search: the legs' top hits (best first) and its share of the total."""

    fts: list[SearchHit] = field(default_factory=list)      # score = BM25
    vector: list[SearchHit] = field(default_factory=list)   # score = cosine similarity
    total: int = 0                                          # fts/original/vector: matches in this shard



def _hit_table(hits: list[SearchHit], score_column: str, scores, keys: dict[str, int]) -> pa.Table:
    """One leg as a lancedb reranker reads it: product_id, its score column and a `_rowid` (the key)."""
    return pa.table({"product_id": pa.array([h.product_id for h in hits], pa.string()),
                     score_column: pa.array(scores, pa.float32()),
                     "_rowid": pa.array([keys.setdefault(h.product_id, len(keys)) for h in hits], pa.uint64())})


def _fused_hits(fused: pa.Table, legs: Iterable[list[SearchHit]]) -> list[SearchHit]:
    titles = {h.product_id: h.title for leg in legs for h in leg}
    return [SearchHit(pid, titles[pid], float(score)) for pid, score in
            zip(fused["product_id"].to_pylist(), fused["_relevance_score"].to_pylist())]


def rrf_fuse(fts: list[SearchHit], vector: list[SearchHit], k: int = RRF_K) -> list[SearchHit]:
    """Reciprocal-rank fusion with lancedb's RRFReranker; hits are keyed by product_id."""
    from lancedb.rerankers import RRFReranker

    keys: dict[str, int] = {}
    vector_table = _hit_table(vector, "_distance", [h.score for h in vector], keys)
    fts_table = _hit_table(fts, "_score", [h.score for h in fts], keys)
    return _fused_hits(RRFReranker(K=k).rerank_hybrid("", vector_table, fts_table), (vector, fts))


def unit_scores(hits: list[SearchHit]) -> list[float]:
    """A leg's scores min-max scaled to [0, 1], best = 1, as lancedb's hybrid query scales each leg before its
    reranker (normalize="score"). One difference: a leg whose scores are all equal (a single hit, or tied hits)
    scales to 1, where lancedb's helper gives 0 - which would rank a lone keyword match like a product the
    keyword leg never found."""
    if not hits:
        return []
    low, high = min(h.score for h in hits), max(h.score for h in hits)
    if high == low:
        return [1.0] * len(hits)
    return [(h.score - low) / (high - low) for h in hits]


def linear_fuse(fts: list[SearchHit], vector: list[SearchHit], vector_weight: float = VECTOR_WEIGHT) -> list[SearchHit]:
    """Hybrid product ranking: lancedb's LinearCombinationReranker over the legs' unit scores,
    vector_weight * vector + (1 - vector_weight) * keyword, a leg that missed a product adding 0 (fill=1).
    Hits are keyed by product_id; equal fused scores keep the vector leg's order, then the keyword leg's."""
    from lancedb.rerankers import LinearCombinationReranker

    keys: dict[str, int] = {}
    # The reranker reads the vector leg as distances (0 = best) and turns them back into 1 - distance.
    vector_table = _hit_table(vector, "_distance", [1.0 - s for s in unit_scores(vector)], keys)
    fts_table = _hit_table(fts, "_score", unit_scores(fts), keys)
    fused = LinearCombinationReranker(weight=vector_weight, fill=1.0).rerank_hybrid("", vector_table, fts_table)
    return _fused_hits(fused, (vector, fts))


def hybrid_depth(limit: int, offset: int) -> int:
    """Leg depth for a hybrid page: HYBRID_DEPTH while the page ends within the pool that depth can give
    (up to 2·HYBRID_DEPTH products), so the first pages are slices of one ranking; deeper, the page's end."""
    end = offset + limit
    return HYBRID_DEPTH if end <= 2 * HYBRID_DEPTH else end


def _merge_leg(legs: Iterable[list[SearchHit]], depth: int) -> list[SearchHit]:
    """Best `depth` hits over shards (higher score first; product_id breaks ties for a stable order)."""
    return heapq.nsmallest(depth, (h for leg in legs for h in leg), key=lambda h: (-h.score, h.product_id))


def fuse(mode: str, parts: list[ShardCandidates], *, limit: int, offset: int, depth: int) -> SearchPage:
    """Merge shard answers into one page (see the module docstring for `total` per mode)."""
    if mode == "hybrid":
        fts = _merge_leg((p.fts for p in parts), depth)
        vector = _merge_leg((p.vector for p in parts), depth)
        ranked = linear_fuse(fts, vector)
        return SearchPage(hits=ranked[offset:offset + limit], total=len(ranked))
    leg = "vector" if mode == "vector" else "fts"
    ranked = _merge_leg((getattr(p, leg) for p in parts), offset + limit)
    return SearchPage(hits=ranked[offset:offset + limit], total=sum(p.total for p in parts))


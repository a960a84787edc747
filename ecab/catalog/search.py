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
- ``hybrid`` (default): reciprocal-rank fusion (lancedb ``RRFReranker``, K=60) of two legs of fixed depth
  D = max(HYBRID_DEPTH, offset + limit): the top D ``search_text`` BM25 matches of *any* query term, and the
  D nearest titles. Hybrid is a ranking, not a match rule, so ``total`` = the size of the fused candidate
  pool (union of both legs, at most 2·D): exactly the number of results one can page through. The legs have
  a fixed depth so consecutive pages come from the same pool and never repeat or skip a product.

`SearchHit.score` is the BM25 score (fts, original), the cosine similarity (vector) or the RRF score
(hybrid). `where` is a SQL prefilter over the product columns (price, average_rating, rating_number,
main_category, store, brand, review_count, ...), applied before ranking in every mode.

Review search (`search_reviews`) only ever sees the one product's reviews (a product_id prefilter). Review

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
HYBRID_DEPTH = 100
RRF_K = 60
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



def rrf_fuse(fts: list[SearchHit], vector: list[SearchHit], k: int = RRF_K) -> list[SearchHit]:
    """Reciprocal-rank fusion with lancedb's RRFReranker; hits are keyed by product_id."""
    from lancedb.rerankers import RRFReranker

    keys: dict[str, int] = {}
    titles: dict[str, str] = {}
    for hit in vector + fts:
        keys.setdefault(hit.product_id, len(keys))
        titles.setdefault(hit.product_id, hit.title)

    def leg(hits: list[SearchHit], score_column: str) -> pa.Table:
        return pa.table({"product_id": pa.array([h.product_id for h in hits], pa.string()),
                         score_column: pa.array([h.score for h in hits], pa.float32()),
                         "_rowid": pa.array([keys[h.product_id] for h in hits], pa.uint64())})

    fused = RRFReranker(K=k).rerank_hybrid("", leg(vector, "_distance"), leg(fts, "_score"))
    return [SearchHit(pid, titles[pid], float(score)) for pid, score in
            zip(fused["product_id"].to_pylist(), fused["_relevance_score"].to_pylist())]


def _merge_leg(legs: Iterable[list[SearchHit]], depth: int) -> list[SearchHit]:
    """Best `depth` hits over shards (higher score first; product_id breaks ties for a stable order)."""
    return heapq.nsmallest(depth, (h for leg in legs for h in leg), key=lambda h: (-h.score, h.product_id))


def fuse(mode: str, parts: list[ShardCandidates], *, limit: int, offset: int, depth: int) -> SearchPage:
    """Merge shard answers into one page (see the module docstring for `total` per mode)."""
    if mode == "hybrid":
        fts = _merge_leg((p.fts for p in parts), depth)
        vector = _merge_leg((p.vector for p in parts), depth)
        ranked = rrf_fuse(fts, vector)
        return SearchPage(hits=ranked[offset:offset + limit], total=len(ranked))
    leg = "vector" if mode == "vector" else "fts"
    ranked = _merge_leg((getattr(p, leg) for p in parts), offset + limit)
    return SearchPage(hits=ranked[offset:offset + limit], total=sum(p.total for p in parts))


"""The attacker's view of one task: what a perfect query-reader faces, with no hidden information (issue 27).

An agent that never calls get_user_profile or ask_user can at best read the query perfectly: it ends among the
CANDIDATES, the products of the target's main category satisfying every QUERY rubric (the audit's own pass,
load_bearing.audit_products with `matches=QueryMatches()`, never re-judged here). Each candidate is labelled
CORRECT by the benchmark's dual-path rule (judge/episode.py::outcome): it is the target, or it satisfies every
rubric (every AUDITED rubric: with include_reviews=False a review_opinion rubric counts as satisfied, so the
labels can only over-count correct candidates, which raises the floor, never an attacker's edge).

Everything else in the view is what the tools give away without profile or ask_user:

- `search_rank`: the candidate's 1-based rank in the catalog's search for the task's user_query (first
  SEARCH_LIMIT hits, the catalog's default mode, as `search_products` pages it), None when absent;
- `reviews`: its first REVIEW_LIMIT stored reviews (get_review_content shows 5 per query; several queries
  show more, so this is at most what a patient agent sees);
- `family`: the listing's context, kept simple: the candidates first, then every other product of the category
  whose title shares at least FAMILY_JACCARD of its tokens (keyword tokens, Jaccard) with some candidate's
  title: the target's siblings and line-mates that fail a query rubric are there too, as a searching agent
  finds them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

from ecab.core.text import keyword_tokens
from ecab.schema import Product, Review

SEARCH_LIMIT = 50
REVIEW_LIMIT = 20
FAMILY_JACCARD = 0.5


@dataclass
class Candidate:
    product: Product
    correct: bool                     # dual path: the target, or it satisfies every (audited) rubric
    is_target: bool
    all_rubrics: bool
    search_rank: int | None = None    # 1-based rank in the search for the user query; None: not in the page
    reviews: list[Review] | None = None

    @property
    def product_id(self) -> str:
        return self.product.product_id


@dataclass
class TaskView:
    task_id: str
    intent: str
    target_id: str
    query: str
    candidates: list[Candidate]
    family: list[Product] = field(default_factory=list)    # candidates first (same order), then the rest
    category_size: int = 0
    searched: bool = False            # search ranks were computed (the catalog could search)

    @property
    def correct(self) -> list[bool]:
        return [c.correct for c in self.candidates]

    def floor(self) -> float:
        """The blind dual-path floor: the chance a uniform pick among the candidates is correct."""
        return sum(self.correct) / len(self.candidates) if self.candidates else 0.0


class TitleTokens:
    """Keyword-token sets of product titles, computed once per product id (shared by one audit's tasks)."""

    def __init__(self):
        self._sets: dict[str, frozenset[str]] = {}

    def __call__(self, product: Product) -> frozenset[str]:
        got = self._sets.get(product.product_id)
        if got is None:
            got = self._sets[product.product_id] = frozenset(keyword_tokens(product.title or ""))
        return got


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def family_of(candidates: Sequence[Product], category: Sequence[Product], tokens: TitleTokens,
              threshold: float = FAMILY_JACCARD) -> list[Product]:
    """The candidates, then the category products whose title is similar to a candidate's (module docstring)."""
    ids = {p.product_id for p in candidates}
    heads = list({tokens(p) for p in candidates})
    rest = []
    for p in category:
        if p.product_id in ids:
            continue
        own = tokens(p)
        if any(jaccard(own, h) >= threshold for h in heads):
            rest.append(p)
            ids.add(p.product_id)
    return [*candidates, *rest]


def search_ranks(search: Callable[..., object] | None, query: str, limit: int = SEARCH_LIMIT
                 ) -> dict[str, int] | None:
    """{product id: 1-based rank} of the search for `query`; None when the catalog cannot search here."""
    if search is None or not query:
        return None
    try:
        page = search(query, limit=limit)
    except (RuntimeError, NotImplementedError):     # e.g. a construction snapshot with no real catalog behind
        return None
    ranks: dict[str, int] = {}
    for n, hit in enumerate(getattr(page, "hits", []), 1):
        ranks.setdefault(hit.product_id, n)
    return ranks


def task_view(*, task_id: str, intent: str, target_id: str, query: str, matches: Sequence[Product],
              all_rubrics: Sequence[bool], category: Sequence[Product] = (), catalog=None,
              tokens: TitleTokens | None = None, reviews: bool = True) -> TaskView:
    """The view of one task from the audit's query matches (QueryMatches) over its category `category`;
    `catalog` (optional) gives search ranks and reviews."""
    tokens = tokens or TitleTokens()
    ranks = search_ranks(getattr(catalog, "search", None), query) if catalog is not None else None
    get_reviews = getattr(catalog, "get_reviews", None) if (catalog is not None and reviews) else None
    candidates = []
    for product, ok in zip(matches, all_rubrics):
        is_target = product.product_id == target_id
        candidates.append(Candidate(
            product=product, correct=bool(is_target or ok), is_target=is_target, all_rubrics=bool(ok),
            search_rank=(ranks or {}).get(product.product_id),
            reviews=list(get_reviews(product.product_id, limit=REVIEW_LIMIT)) if get_reviews else None))
    family = family_of(list(matches), category, tokens) if category else list(matches)
    return TaskView(task_id=task_id, intent=intent, target_id=target_id, query=query, candidates=candidates,
                    family=family, category_size=len(category), searched=ranks is not None)

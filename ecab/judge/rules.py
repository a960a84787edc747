"""The rules judge (`judge=rules`, the default): every rubric decided by the rubric checks of
ecab/core/rubric_checks.py (the rule per type is written there; each type's record in ecab/core/rubric_types.py
names its check), review_opinion by the catalog's embedding review checker (ecab/catalog/review_match.py): the
process-wide one unless the caller injects its own.

`RulesJudge` is its implementation of the judge protocol (protocol.py). Task construction's validation
decides rubrics with the same `check_rubric`, so "the target satisfies every rubric" means what the judge
will decide.
"""
from __future__ import annotations

from typing import Any, Iterable

from ecab.catalog.base import CatalogReader
from ecab.catalog.review_match import ReviewChecker, default_review_checker
from ecab.core.rubric_checks import ReviewMatcher
from ecab.core.rubric_types import reads_reviews, rubric_verdict
from ecab.judge.episode import make_judgement, recommended
from ecab.schema import Judgement, Product, Review, Rubric, Task, Trajectory, Verdict, Voucher

RULES = "rules"
REVIEWS_SHOWN = 20     # the recommended product's reviews a review_opinion rubric is decided over


def check_rubric(rubric: Rubric, product: Product | None, *, voucher: Voucher | None = None,
                 reviews: list[Review] | None = None, review_checker: ReviewMatcher | None = None) -> Verdict:
    """Decide one rubric against one product. Pure except review_opinion, which embeds the given reviews
    (with `review_checker`, or the process-wide default checker when None)."""
    if review_checker is None and reads_reviews(rubric) and reviews and product is not None:
        review_checker = default_review_checker()    # only now: it loads the embedder
    return rubric_verdict(rubric, product, voucher=voucher, reviews=reviews, review_checker=review_checker)


def judge_product(task: Task, product: Product | None, *, reviews: list[Review] | None = None,
                  review_checker: ReviewMatcher | None = None) -> list[Verdict]:
    """One verdict per rubric of `task`, in rubric order; the task's voucher prices budget_match."""
    return [check_rubric(r, product, voucher=task.voucher, reviews=reviews, review_checker=review_checker)
            for r in task.rubrics]


def satisfying_products(task: Task, products: Iterable[Product], *, review_checker: ReviewMatcher | None = None,
                        reviews_by_product: dict[str, list[Review]] | None = None) -> list[str]:
    """IDs of the products that satisfy every rubric of `task` (construction's uniqueness count).

    Cheap rubrics are checked first and a product is dropped at its first failure, so review embeddings
    are computed only for products that pass every mechanical rubric.
    """
    ordered = sorted(task.rubrics, key=reads_reviews)
    hits = []
    for product in products:
        reviews = (reviews_by_product or {}).get(product.product_id)
        if all(check_rubric(r, product, voucher=task.voucher, reviews=reviews,
                            review_checker=review_checker).satisfied is True for r in ordered):
            hits.append(product.product_id)
    return hits


class RulesJudge:
    """The rules judge as a `Judge` (protocol.py): deterministic, no model calls, nothing to close."""

    name = RULES
    model_name = RULES

    def __init__(self, review_checker: ReviewChecker | None = None):
        self.review_checker = review_checker if review_checker is not None else default_review_checker()

    async def judge_episode(self, task: Task, trajectory: Trajectory, catalog: CatalogReader) -> Judgement:
        product, reviews = recommended(task, trajectory, catalog, review_limit=REVIEWS_SHOWN)
        verdicts = judge_product(task, product, reviews=reviews, review_checker=self.review_checker)
        return make_judgement(task, trajectory, verdicts, judge_name=self.name)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "review_checker": self.review_checker.describe()}

    async def aclose(self) -> None:
        return None

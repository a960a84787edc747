"""The test every step of sibling making keeps to: a rubric decided by the rubric checks the rules judge
uses (ecab/core/rubric_checks.py), with the task's voucher and, for review_opinion, the injected review checker."""
from __future__ import annotations

from ecab.core.rubric_checks import ReviewMatcher, rubric_verdict
from ecab.schema import Product, Review, Rubric, Task


def satisfies(rubric: Rubric, product: Product, task: Task, reviews: list[Review] | None = None,
              review_checker: ReviewMatcher | None = None) -> bool:
    """Is `rubric` satisfied (True, not unscored) by `product` under `task`'s voucher?"""
    return rubric_verdict(rubric, product, voucher=task.voucher, reviews=reviews,
                          review_checker=review_checker).satisfied is True

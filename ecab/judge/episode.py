"""One finished episode as every judge sees it: the recommended product and its reviews (`recommended`),
and the one rule that turns verdicts into an outcome (`outcome`, applied by `make_judgement`), used by the
rules judge, the LLM judge and the tests."""
from __future__ import annotations

from typing import Any, Sequence

from ecab.catalog.base import CatalogReader
from ecab.core.rubric_types import reads_reviews
from ecab.schema import Judgement, Product, Review, Task, Trajectory, Verdict


def outcome(task: Task, predicted_id: str | None, verdicts: Sequence[Verdict]) -> tuple[bool, bool | None, bool | None]:
    """(exact, all_satisfied, correct), the paper's accuracy: correct when the exact target was recommended OR
    every rubric is satisfied. all_satisfied is False when any verdict is False or there is none, None when
    some verdict is unscored (an LLM reply that failed to parse) and none is False: such an episode is never
    counted wrong, it is reported apart (correct None)."""
    exact = predicted_id is not None and predicted_id == task.target_product.product_id
    scored = [v.satisfied for v in verdicts]
    if not verdicts or any(s is False for s in scored):
        all_satisfied = False
    elif any(s is None for s in scored):
        all_satisfied = None
    else:
        all_satisfied = True
    return exact, all_satisfied, (True if exact else all_satisfied)


def recommended(task: Task, traj: Trajectory, catalog: CatalogReader, *,
                review_limit: int) -> tuple[Product | None, list[Review] | None]:
    """(the recommended product, None when there is none or the catalog has no such id; its first
    `review_limit` reviews when a rubric of the task reads reviews, else None)."""
    predicted = traj.predicted_product_id
    product = catalog.get_product(predicted) if predicted else None
    reviews = None
    if product is not None and any(reads_reviews(r) for r in task.rubrics):
        reviews = catalog.get_reviews(product.product_id, limit=review_limit)
    return product, reviews


def make_judgement(task: Task, traj: Trajectory, verdicts: list[Verdict], *, judge_name: str,
                   extras: dict[str, Any] | None = None) -> Judgement:
    """The Judgement of one episode: its verdicts and the outcome `outcome` decides; `extras` adds keys
    (the LLM judge's `judge_usage`)."""
    predicted = traj.predicted_product_id
    exact, all_satisfied, correct = outcome(task, predicted, verdicts)
    return Judgement(id=task.id, unit=dict(traj.unit), judge=judge_name, predicted_product_id=predicted,
                     target_product_id=task.target_product.product_id, exact_product_match=exact,
                     all_satisfied=all_satisfied, correct=correct, verdicts=verdicts,
                     runtime_error=traj.termination == "infra_error", error_message=traj.error,
                     extras=dict(extras or {}))

"""Judge one finished episode: the recommended product against every rubric of its task."""
from __future__ import annotations

from ecab.catalog.base import CatalogReader
from ecab.judge.rules import judge_product
from ecab.schema import Judgement, Task, Trajectory


def judge_trajectory(task: Task, traj: Trajectory, catalog: CatalogReader, *, review_checker=None,
                     judge_name: str = "rules") -> Judgement:
    predicted = traj.predicted_product_id
    product = catalog.get_product(predicted) if predicted else None
    needs_reviews = product is not None and any(r.type == "review_opinion" for r in task.rubrics)
    reviews = catalog.get_reviews(product.product_id, limit=20) if needs_reviews else None
    verdicts = judge_product(task, product, reviews=reviews, review_checker=review_checker)
    exact = predicted is not None and predicted == task.target_product.product_id
    scored = [v.satisfied for v in verdicts]
    if not verdicts or any(s is False for s in scored):
        all_satisfied = False
    elif any(s is None for s in scored):
        all_satisfied = None          # unscored: never counted wrong, reported apart
    else:
        all_satisfied = True
    correct = True if exact else all_satisfied
    return Judgement(id=task.id, unit=dict(traj.unit), judge=judge_name, predicted_product_id=predicted,
                     target_product_id=task.target_product.product_id, exact_product_match=exact,
                     all_satisfied=all_satisfied, correct=correct, verdicts=verdicts,
                     runtime_error=traj.termination == "infra_error", error_message=traj.error)

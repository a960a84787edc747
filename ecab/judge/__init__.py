"""The judge: one verdict per rubric, decided mechanically (rules.py) or by review embeddings (review.py).

Shared by evaluation and by task construction's validation, so it is deterministic and cheap.
"""
from ecab.judge.review import REVIEW_MATCH_THRESHOLD, ReviewChecker, calibrate_threshold, default_review_checker
from ecab.judge.rules import (
    NO_PRODUCT_REASON,
    check_rubric,
    judge_product,
    no_product_verdict,
    satisfying_products,
)

__all__ = ["check_rubric", "judge_product", "no_product_verdict",
           "satisfying_products", "NO_PRODUCT_REASON", "ReviewChecker", "calibrate_threshold",
           "default_review_checker", "REVIEW_MATCH_THRESHOLD"]

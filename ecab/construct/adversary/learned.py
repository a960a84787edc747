"""The learned attacker: a classifier over every form feature, trained on half the tasks (issue 27).

Each candidate of each task is one example (features.py: its values relative to its candidate set and family,
price digits, title/store/id sharing, ratings, reviews, search rank, text statistics), labelled 1 when it is
correct by the dual-path rule. For every feature the model sees the raw value, its z-score within the task's
candidate set and its rank within the set (0 = lowest, 1 = highest), and whether it is the set's max / min:
what matters is how a listing stands among the ones it competes with, not the feature's scale in the world.

Two-fold by task: the tasks are shuffled with `seed` and split in halves; a model trained on one half picks,
in every task of the other half, the candidate of highest predicted probability (ties at random: the expected
hit), then the halves swap. The figure is the mean hit over all held-out tasks. Two models, both deterministic
(fixed random_state, one thread): gradient boosting (sklearn's HistGradientBoostingClassifier, NaN handled
natively) and a logistic regression on the set-relative columns (NaN -> 0). The attacker's figure is the better
of the two: an attacker keeps whichever wins, so does the audit (an optimistic choice, on the safe side).
"""
from __future__ import annotations

import math
import random
from bisect import bisect_left, bisect_right
from typing import Any, Sequence

from ecab.construct.adversary.cues import expected_hit
from ecab.construct.adversary.features import features
from ecab.construct.adversary.view import TaskView

MODELS = ("gbdt", "logistic")


def _set_relative(values: list[float]) -> tuple[list[float], list[float], list[float], list[float]]:
    """(z-score, rank in [0, 1], is max, is min) within the set; NaN stays NaN in z and rank."""
    known = [v for v in values if not math.isnan(v)]
    n = len(values)
    if not known:
        nan = [math.nan] * n
        return nan, nan, [0.0] * n, [0.0] * n
    mean = sum(known) / len(known)
    sd = math.sqrt(sum((v - mean) ** 2 for v in known) / len(known))
    lo, hi = min(known), max(known)
    order = sorted(known)
    z, rank, is_max, is_min = [], [], [], []
    for v in values:
        if math.isnan(v):
            z.append(math.nan)
            rank.append(math.nan)
            is_max.append(0.0)
            is_min.append(0.0)
            continue
        z.append((v - mean) / sd if sd > 0 else 0.0)
        below = bisect_left(order, v)
        equal = bisect_right(order, v) - below
        rank.append((below + (equal - 1) / 2) / (len(order) - 1) if len(order) > 1 else 0.5)
        is_max.append(float(v == hi and lo < hi))
        is_min.append(float(v == lo and lo < hi))
    return z, rank, is_max, is_min


def design(views: Sequence[TaskView], names: Sequence[str] | None = None
           ) -> tuple[list[str], list[list[list[float]]], list[str]]:
    """(column names, per view its rows (one per candidate), the raw feature names used)."""
    per_view = [features(v) for v in views]
    if names is None:
        names = sorted({name for f in per_view for name in f})
    columns = [f"{n}{suffix}" for n in names for suffix in ("", "~z", "~rank", "~max", "~min")]
    matrices = []
    for view, feats in zip(views, per_view):
        k = len(view.candidates)
        cols: list[list[float]] = []
        for name in names:
            values = feats.get(name, [math.nan] * k)
            z, rank, is_max, is_min = _set_relative(values)
            cols += [values, z, rank, is_max, is_min]
        matrices.append([[col[i] for col in cols] for i in range(k)])
    return columns, matrices, list(names)


def _model(kind: str, seed: int):
    if kind == "gbdt":
        from sklearn.ensemble import HistGradientBoostingClassifier

        return HistGradientBoostingClassifier(max_iter=150, learning_rate=0.08, max_leaf_nodes=15,
                                              min_samples_leaf=10, l2_regularization=1.0, early_stopping=False,
                                              random_state=seed)
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(C=0.5, max_iter=2000, random_state=seed))


def _columns_for(kind: str, columns: Sequence[str]) -> list[int]:
    """gbdt: every column; logistic: the set-relative ones (raw scales differ across worlds and tasks)."""
    return [i for i, c in enumerate(columns) if kind == "gbdt" or "~" in c]


def folds(n: int, seed: int) -> list[list[int]]:
    order = list(range(n))
    random.Random(seed).shuffle(order)
    half = (n + 1) // 2
    return [sorted(order[:half]), sorted(order[half:])]


def learned_attack(views: Sequence[TaskView], *, seed: int = 0) -> dict[str, Any]:
    """The two-fold learned attacker (module docstring): {"accuracy": the better model's mean held-out hit,
    "model": which, "models": {model: {"accuracy", "folds"}}, "floor": the same tasks' blind floor, "tasks"}."""
    import numpy as np
    from threadpoolctl import threadpool_limits

    views = list(views)
    columns, matrices, _ = design(views)
    labels = [[1 if c.correct else 0 for c in v.candidates] for v in views]
    split = folds(len(views), seed)
    models: dict[str, Any] = {}
    with threadpool_limits(1):
        for kind in MODELS:
            cols = _columns_for(kind, columns)
            hits: list[float] = [0.0] * len(views)
            per_fold = []
            for held, train in ((split[0], split[1]), (split[1], split[0])):
                X = np.asarray([[row[j] for j in cols] for t in train for row in matrices[t]], dtype=float)
                y = [lab for t in train for lab in labels[t]]
                fit = None
                if len(X) and len(set(y)) == 2:
                    # a column without any value in the training half tells nothing (and breaks binning)
                    keep = [j for j, ok in zip(cols, ~np.isnan(X).all(axis=0)) if ok]
                    Xa = X[:, ~np.isnan(X).all(axis=0)]
                    if kind != "gbdt":
                        Xa = np.nan_to_num(Xa, nan=0.0)
                    fit = _model(kind, seed).fit(Xa, np.asarray(y))
                fold_hits = []
                for t in held:
                    if not matrices[t]:
                        hit = 0.0
                    elif fit is None:       # nothing to learn from: a blind pick
                        hit = sum(labels[t]) / len(labels[t])
                    else:
                        Xt = np.asarray([[row[j] for j in keep] for row in matrices[t]], dtype=float)
                        if kind != "gbdt":
                            Xt = np.nan_to_num(Xt, nan=0.0)
                        p = [round(float(x), 9) for x in fit.predict_proba(Xt)[:, 1]]
                        hit = expected_hit(p, [bool(x) for x in labels[t]])
                    hits[t] = hit
                    fold_hits.append(hit)
                per_fold.append(sum(fold_hits) / len(fold_hits) if fold_hits else None)
            models[kind] = {"accuracy": sum(hits) / len(hits) if hits else None, "folds": per_fold}
    best = max(MODELS, key=lambda k: (models[k]["accuracy"] or 0.0))
    floor = sum(v.floor() for v in views) / len(views) if views else None
    return {"accuracy": models[best]["accuracy"], "model": best, "models": models, "floor": floor,
            "tasks": len(views), "features": len(columns), "seed": seed}

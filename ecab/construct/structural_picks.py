"""Structural picks: what a script scores without asking about hidden intent (issue 15).

A script that reads the query, lists the products matching its rubrics and never asks about hidden intent
picks among them (a) at random, (b) the most TYPICAL listing (the one whose detail values are the most common
among the matches) or (c) the most CENTRAL one (the one with the most listings at most one detail value
away), ties going to the best rated, then the most rated. A catalog whose hard negatives are all one-value
variants of the target makes the target both the most typical and the most central match: hidden intent then
matters to the rubrics but not to a script (docs/decisions.md#validity-audit). The validity audit
(load_bearing.py) reports their expected accuracy for every task.
"""
from __future__ import annotations

from typing import Sequence

from ecab.core.text import normalize, value_text
from ecab.schema import Product


def _detail_values(product: Product) -> dict[str, str]:
    """The listing's detail values, keys and values normalized."""
    return {normalize(str(k)): normalize(value_text(v)) for k, v in (product.details or {}).items()}


def _expected_hit(scores: Sequence, target_index: int | None) -> float:
    """The chance that a pick of the best score (ties broken at random) is the target."""
    if target_index is None or not scores:
        return 0.0
    best = max(scores)
    return 1.0 / sum(1 for s in scores if s == best) if scores[target_index] == best else 0.0


def structural_picks(matches: Sequence[Product], target_id: str) -> tuple[float, float, float]:
    """(random, typical, central) expected accuracy of a pick among the query's `matches` (see the module
    docstring). Missing fields count as an empty value, so every listing is scored on the same fields."""
    if not matches:
        return 0.0, 0.0, 0.0
    target_index = next((i for i, p in enumerate(matches) if p.product_id == target_id), None)
    rows = [_detail_values(p) for p in matches]
    # A field whose value differs in every listing (a model number, a sales rank, a date) carries no
    # structure and would put every listing more than one value from every other: left out.
    fields = [f for f in sorted({f for row in rows for f in row})
              if len(matches) == 1 or len({row.get(f, "") for row in rows}) < len(rows)]
    table = [tuple(row.get(f, "") for f in fields) for row in rows]
    counts = [{} for _ in fields]
    for values in table:
        for j, v in enumerate(values):
            counts[j][v] = counts[j].get(v, 0) + 1
    # Among listings of equal score a script takes the best rated, then the most rated (re-listings of one
    # configuration differ only in such numbers).
    standing = [(p.average_rating or 0.0, p.rating_number or 0) for p in matches]
    typical = [(sum(counts[j][v] for j, v in enumerate(values)), standing[i]) for i, values in enumerate(table)]
    # Listings at most one value away, counted with one bucket per masked field (linear, not quadratic).
    exact: dict[tuple, int] = {}
    for values in table:
        exact[values] = exact.get(values, 0) + 1
    masked = [dict() for _ in fields]
    for values in table:
        for j in range(len(fields)):
            key = values[:j] + values[j + 1:]
            masked[j][key] = masked[j].get(key, 0) + 1
    central = [(exact[values] - 1 + sum(masked[j][values[:j] + values[j + 1:]] - exact[values]
                                        for j in range(len(fields))), standing[i])
               for i, values in enumerate(table)]
    rand = 1.0 / len(matches) if target_index is not None else 0.0
    return rand, _expected_hit(typical, target_index), _expected_hit(central, target_index)


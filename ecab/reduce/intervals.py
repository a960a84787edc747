"""Interval formulas for proportions, in one place (docs/architecture.md §9: intervals).

- Wilson score interval: for a share of independent units (accuracy with one trial per task). Unlike a
  bootstrap or the normal approximation it never collapses at 0% or 100%: 0 of 20 gives [0, 0.161].
- Newcombe's paired interval (1998, method 10, built from two Wilson intervals): for the difference of two
  accuracies measured on the same tasks. A task with several trials enters with its share of correct trials,
  which treats it as one paired unit (conservative: a share varies less than one Bernoulli outcome).

The cluster bootstrap for ratio statistics (several trials per task) stays in variance.py.
"""
from __future__ import annotations

from math import sqrt
from typing import Sequence

from scipy.stats import norm

LEVEL = 0.95


def z_of(level: float) -> float:
    """The two-sided standard-normal quantile of a confidence level (1.96 for 0.95)."""
    if not 0 < level < 1:
        raise ValueError(f"confidence level {level} is outside (0, 1)")
    return float(norm.ppf(1 - (1 - level) / 2))


def wilson_interval(successes: float, n: float, level: float = LEVEL) -> tuple[float, float]:
    """The Wilson score interval (low, high) of the proportion successes / n.

    `successes` may be fractional (an estimate times an effective sample size, variance.py's fallback).
    """
    if n <= 0:
        raise ValueError(f"a proportion needs n > 0 units, got n={n}")
    if not 0 <= successes <= n:
        raise ValueError(f"successes {successes} is outside 0..{n}")
    z = z_of(level)
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z / denominator * sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    # p = 0 and p = 1 make centre -+ half exactly 0 and 1 in exact arithmetic; clamp the float noise
    return (0.0 if successes == 0 else max(0.0, centre - half)), (1.0 if successes == n else min(1.0, centre + half))


def newcombe_paired_difference(first: Sequence[float], second: Sequence[float],
                               level: float = LEVEL) -> dict[str, float | int]:
    """Difference mean(first) - mean(second) of paired shares in [0, 1] (one pair per task) and Newcombe's
    method-10 interval: {"value", "low", "high", "pairs"}."""
    if len(first) != len(second):
        raise ValueError(f"{len(first)} first values but {len(second)} second values")
    if not first:
        raise ValueError("a paired difference needs at least one shared task")
    if any(not 0 <= x <= 1 for x in (*first, *second)):
        raise ValueError("paired values must be shares in [0, 1]")
    n = len(first)
    # the 2x2 table of the pairs (both, only first, only second, neither); binary outcomes give the counts
    both = sum(x * y for x, y in zip(first, second))
    only_first = sum(x * (1 - y) for x, y in zip(first, second))
    only_second = sum((1 - x) * y for x, y in zip(first, second))
    neither = n - both - only_first - only_second
    p1, p2 = (both + only_first) / n, (both + only_second) / n
    l1, u1 = wilson_interval(p1 * n, n, level)
    l2, u2 = wilson_interval(p2 * n, n, level)
    margins = (both + only_first) * (only_second + neither) * (both + only_second) * (only_first + neither)
    # Newcombe's correlation estimate: a positive association is shrunk by n/2 (to 0 when smaller), as he
    # defines method 10; a negative one is taken as is
    association = both * neither - only_first * only_second
    association = max(association - n / 2, 0.0) if association > 0 else association
    phi = association / sqrt(margins) if margins > 0 else 0.0
    below = sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    above = sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    value = p1 - p2
    return {"value": round(value, 4), "low": round(max(-1.0, value - below), 4),
            "high": round(min(1.0, value + above), 4), "pairs": n}

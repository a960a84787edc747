"""How the summary writes numbers: rates and means rounded to 4 decimals, 0 for an empty denominator,
medians and percentiles of possibly empty samples."""
from __future__ import annotations

import math
import statistics
from typing import Sequence


def round4(x: float) -> float:
    return round(x, 4)


def rate(numerator: float, denominator: float) -> float:
    return round4(numerator / denominator) if denominator else 0.0


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if values else 0.0


def percentile(values: Sequence[float], q: float) -> float:
    """The q-quantile (0..1) with linear interpolation between closest ranks; 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def spread(values: Sequence[float]) -> dict[str, float]:
    mean = sum(values) / len(values) if values else 0.0
    return {"mean": round4(mean), "p50": round4(percentile(values, 0.5)), "p95": round4(percentile(values, 0.95))}

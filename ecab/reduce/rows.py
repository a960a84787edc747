"""One run as one row of a table of runs: the headline numbers every multi-run table shows (compare's
Table 3, the sweep table, the budget study), read from the run's summary dict only."""
from __future__ import annotations

from typing import Any

from ecab.reduce.intervals import wilson_interval
from ecab.reduce.rates import rate


def termination_shares(summary: dict[str, Any]) -> dict[str, float]:
    """{termination: share of all episodes}, every termination the summary counts (zeros included)."""
    total = summary.get("total_samples") or 0
    return {name: rate(count, total) for name, count in (summary.get("terminations") or {}).items()}


def accuracy_ci(summary: dict[str, Any]) -> dict[str, Any]:
    """{"low", "high", "method"} of the accuracy: the summary's interval (variance.py: Wilson with one trial per
    task); a summary written before intervals named their method gets the Wilson interval of its counts."""
    ci = (summary.get("variance") or {}).get("accuracy") or {}
    if ci.get("method") and ci.get("low") is not None:
        return {"low": ci["low"], "high": ci["high"], "method": ci["method"]}
    scored = summary.get("scored_samples") or 0
    if not scored:
        return {"low": None, "high": None, "method": None}
    low, high = wilson_interval(min(summary.get("total_correct") or 0, scored), scored)
    return {"low": round(low, 4), "high": round(high, 4), "method": "wilson"}


def run_row(summary: dict[str, Any]) -> dict[str, Any]:
    """The headline numbers of one run (rates as fractions, 4 dp)."""
    budget = summary.get("budget") or {}
    return {
        "model": summary.get("model"),
        "accuracy": summary.get("overall_accuracy"),
        "accuracy_ci": accuracy_ci(summary),
        "rubric_satisfaction": summary.get("overall_rubric_satisfaction"),
        "avg_tool_calls": summary.get("avg_tool_calls"),
        "cap_reached_rate": budget.get("cap_reached_rate"),            # cut off: budget_exhausted
        "used_every_call_rate": budget.get("used_every_call_rate"),    # spent the whole budget (None: old summary)
        "termination_shares": termination_shares(summary),
        "episodes": summary.get("total_samples"),
        "evaluated": summary.get("evaluated_samples"),
    }


def shown_terminations(rows: list[dict[str, Any]]) -> list[str]:
    """The terminations some row has (a column per termination that happened, in the summary's order)."""
    names = dict.fromkeys(name for row in rows for name in row["termination_shares"])
    return [name for name in names if any(row["termination_shares"].get(name) for row in rows)]

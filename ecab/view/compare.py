"""The compare page: two or more runs on the same tasks.

- The paper's tables over the runs are reduce's own (`ecab.reduce.compare.TABLES`, the same rows
  `python -m ecab.reduce compare` writes), and so are its charts (`render_compare_plots`).
- Each later run is paired with the first (the baseline) episode by episode: same task, same trial. The
  deltas (later minus baseline) of accuracy, of rubric satisfaction overall and per source, and of accuracy
  per intent get a paired bootstrap interval: each task contributes the sum of its pairs' differences and its
  number of pairs, and reduce's task-resampling bootstrap (`ecab.reduce.variance.bootstrap_ratio_ci`, same
  resamples, level and seed as the run summaries) resamples those tasks. Only pairs scored in both runs count.
- Flipped tasks: tasks whose share of correct trials differs between the two runs.
"""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Callable, Sequence

from ecab.reduce.compare import TABLES, row_labels
from ecab.reduce.episodes import Episode, RubricResult, scored_episodes
from ecab.reduce.variance import bootstrap_ratio_ci
from ecab.schema import INFO_SOURCES

Pair = tuple[int, int]   # (baseline episode index, other episode index) in each run's episode list


def _scored(e: Episode) -> bool:
    """reduce's rule: evaluated, and its correctness decided."""
    return bool(scored_episodes([e]))


def _by_unit(episodes: Sequence[Episode]) -> dict[tuple[str, int], int]:
    return {(e.task.id, int(e.traj.unit.get("trial", 0) or 0)): i for i, e in enumerate(episodes)}


def _delta(clusters: dict[str, list[float]]) -> dict[str, Any]:
    """Paired bootstrap over tasks of the mean difference: num = sum of a task's differences, den = its pairs."""
    tasks = sorted(k for k, diffs in clusters.items() if diffs)
    result = bootstrap_ratio_ci([sum(clusters[t]) for t in tasks], [len(clusters[t]) for t in tasks])
    return {"delta": result["estimate"], "low": result["low"], "high": result["high"], "tasks": result["clusters"],
            "pairs": sum(len(clusters[t]) for t in tasks)}


def _accuracy_delta(pairs: list[Pair], a: Sequence[Episode], b: Sequence[Episode],
                    keep: Callable[[Episode], bool] = lambda e: True) -> dict[str, Any]:
    clusters: dict[str, list[float]] = {}
    for i, j in pairs:
        if _scored(a[i]) and _scored(b[j]) and keep(a[i]):
            clusters.setdefault(a[i].task.id, []).append(float(b[j].correct) - float(a[i].correct))
    return _delta(clusters)


def _satisfaction_delta(pairs: list[Pair], a: Sequence[Episode], b: Sequence[Episode],
                        keep: Callable[[RubricResult], bool] = lambda r: True) -> dict[str, Any]:
    clusters: dict[str, list[float]] = {}
    for i, j in pairs:
        if not (a[i].evaluated and b[j].evaluated):
            continue
        theirs = {r.rubric_id: r for r in b[j].rubrics}
        for mine in a[i].rubrics:
            other = theirs.get(mine.rubric_id)
            if other is not None and mine.satisfied is not None and other.satisfied is not None and keep(mine):
                clusters.setdefault(a[i].task.id, []).append(float(other.satisfied) - float(mine.satisfied))
    return _delta(clusters)


def flipped_tasks(pairs: list[Pair], a: Sequence[Episode], b: Sequence[Episode]) -> list[dict[str, Any]]:
    """Tasks whose correct share differs, biggest change first: per run (correct, scored, episode indices)."""
    per_task: dict[str, dict[str, Any]] = {}
    for i, j in pairs:
        task = a[i].task
        row = per_task.setdefault(task.id, {"task": task.id, "intent": task.intent_category,
                                            "a": [0, 0, []], "b": [0, 0, []]})
        for side, episodes, k in (("a", a, i), ("b", b, j)):
            row[side][2].append(k)
            if _scored(episodes[k]):
                row[side][0] += int(episodes[k].correct)
                row[side][1] += 1
    flips = []
    for row in per_task.values():
        (ca, na, _), (cb, nb, _) = row["a"], row["b"]
        if na and nb and ca * nb != cb * na:
            row["change"] = round(cb / nb - ca / na, 4)
            flips.append(row)
    return sorted(flips, key=lambda r: (-abs(r["change"]), r["task"]))


def paired(a: Sequence[Episode], b: Sequence[Episode]) -> dict[str, Any]:
    """Run b against baseline a, on the units both ran."""
    units_a, units_b = _by_unit(a), _by_unit(b)
    common = sorted(set(units_a) & set(units_b))
    pairs = [(units_a[u], units_b[u]) for u in common]
    present = {r.source for e in a for r in e.rubrics}
    sources = [s for s in INFO_SOURCES if s in present] + sorted(present - set(INFO_SOURCES))
    intents = sorted({e.task.intent_category for e in a})
    return {
        "pairs": len(pairs), "only_baseline": len(set(units_a) - set(units_b)),
        "only_other": len(set(units_b) - set(units_a)),
        "accuracy": _accuracy_delta(pairs, a, b),
        "rubric_satisfaction": _satisfaction_delta(pairs, a, b),
        "by_source": {s: _satisfaction_delta(pairs, a, b, lambda r, s=s: r.source == s) for s in sources},
        "by_intent": {i: _accuracy_delta(pairs, a, b, lambda e, i=i: e.task.intent_category == i) for i in intents},
        "flips": flipped_tasks(pairs, a, b),
    }


def _table_view(table) -> dict[str, Any]:
    return {"title": table.title, "headers": list(table.headers), "rows": [[str(c) for c in row]
                                                                            for row in table.md_rows]}


def compare_section(run_dirs: Sequence[Path], summaries: Sequence[dict[str, Any]],
                    episodes: Sequence[Sequence[Episode]], plots: Callable[[Path], list[dict[str, str]]] | None
                    = None) -> dict[str, Any]:
    """The compare page's data: labels, reduce's tables (and charts, when `plots` turns a folder of PNGs
    into embedded images), and every later run paired with the first."""
    labels = row_labels(list(run_dirs), list(summaries))
    runs = list(zip(labels, summaries))
    section: dict[str, Any] = {"labels": labels, "tables": [_table_view(make(runs)) for make in TABLES],
                               "paired": [{"baseline": 0, "other": k, **paired(episodes[0], episodes[k])}
                                          for k in range(1, len(episodes))]}
    if plots is not None:
        from ecab.reduce.plots import render_compare_plots
        with tempfile.TemporaryDirectory(prefix="ecab-view-") as tmp:
            render_compare_plots(runs, Path(tmp))
            section["plots"] = plots(Path(tmp))
    return section

"""PNG charts of a run (runs/<name>/plots/) and of a comparison of runs, drawn from summaries only.

Every chart reads summary dicts, never trajectories, so `python -m ecab.reduce runs/<name>` rebuilds them
from summary data it has just recomputed, and `compare` from the runs' summary.json files. Rates are shown
as percentages; error bars are the 95% intervals of summary["variance"] (variance.py: Wilson or a bootstrap
over tasks). `plot_accuracy_lines` draws accuracy against a numeric setting for the budget study
(ecab/study.py) and the sweep table (sweep.py); `plot_accuracy_per_run` a sweep with no numeric setting.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import matplotlib
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import PercentFormatter

DPI = 120
SOURCE_COLORS = {"query": "#4C72B0", "persona": "#DD8452", "clarification": "#55A868"}
RUN_PLOTS = ("satisfaction_by_source.png", "accuracy_by_intent.png", "accuracy_vs_budget.png",
             "first_ask_vs_accuracy.png")       # summary.md links these names (report.py)
COMPARE_PLOTS = ("accuracy.png", "satisfaction_by_source.png", "accuracy_by_intent.png",
                 "accuracy_vs_budget.png", "first_ask_vs_accuracy.png")


# ---------------------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------------------

def pretty(name: str) -> str:
    return name.replace("_", " ")


def _ci(summary: dict[str, Any], *path: str) -> dict[str, Any] | None:
    node: Any = summary.get("variance")
    for key in path:
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, dict) and node.get("estimate") is not None else None


def _err(values: Sequence[float], cis: Sequence[dict | None]) -> np.ndarray:
    """asymmetric yerr rows (below, above); 0 where no interval is known."""
    below = [max(0.0, v - c["low"]) if c else 0.0 for v, c in zip(values, cis)]
    above = [max(0.0, c["high"] - v) if c else 0.0 for v, c in zip(values, cis)]
    return np.array([below, above])


def _percent_axis(axis) -> None:
    axis.set_major_formatter(PercentFormatter(xmax=1.0, decimals=0))


def _finish_share_chart(fig, ax, path: Path, *, top: float, ylabel: str, title: str,
                        xlabel: str | None = None) -> Path:
    """The common ending of a bar chart of shares: 0..top in percent, labels, title, light grid, saved."""
    ax.set_ylim(0, top)
    _percent_axis(ax.yaxis)
    ax.set_ylabel(ylabel)
    if xlabel:
        ax.set_xlabel(xlabel)
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)


def _figure(figsize: tuple[float, float]) -> tuple[Figure, Any]:
    """A figure with one axes. Built without pyplot: no global figure registry and no GUI backend to pick,
    savefig draws it with Agg (PNG), so it works headless on workers and in CI."""
    fig = Figure(figsize=figsize)
    return fig, fig.subplots()


def _save(fig: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    return path


def _empty(path: Path, title: str, message: str) -> Path:
    fig, ax = _figure((6, 3))
    ax.set_title(title)
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes, color="0.4")
    ax.set_axis_off()
    return _save(fig, path)


def _label_bars(ax, bars, values: Sequence[float], tops: Sequence[float], horizontal: bool = False) -> None:
    """Write each bar's percentage just past its error bar, so labels never sit on the whisker."""
    for bar, value, top in zip(bars, values, tops):
        if horizontal:
            ax.text(top + 0.01, bar.get_y() + bar.get_height() / 2, f"{value:.1%}", va="center", fontsize=8)
        else:
            ax.text(bar.get_x() + bar.get_width() / 2, top + 0.015, f"{value:.1%}", ha="center", va="bottom",
                    fontsize=8)


def _model_label(summary: dict[str, Any]) -> str:
    return str(summary.get("model") or "run")


# ---------------------------------------------------------------------------------------------------------
# One run
# ---------------------------------------------------------------------------------------------------------

def plot_satisfaction_by_source(summary: dict[str, Any], path: Path) -> Path:
    title = f"Rubric satisfaction by requirement source ({_model_label(summary)})"
    groups = {s: g for s, g in summary["by_source"].items() if g["count"]}
    if not groups:
        return _empty(path, title, "no scored rubrics")
    names = list(groups)
    values = [groups[s]["satisfaction"] for s in names]
    cis = [_ci(summary, "by_source", s) for s in names]
    err = _err(values, cis)
    fig, ax = _figure((6.4, 4.2))
    bars = ax.bar(names, values, yerr=err, capsize=5, color=[SOURCE_COLORS.get(s, "0.6") for s in names])
    _label_bars(ax, bars, values, [v + e for v, e in zip(values, err[1])])
    ax.set_xticks(range(len(names)), [f"{s}\n(n={groups[s]['count']} rubrics)" for s in names])
    return _finish_share_chart(fig, ax, path, top=1.12, ylabel="Rubrics satisfied (%)", title=title,
                               xlabel="Requirement source")


def plot_accuracy_by_intent(summary: dict[str, Any], path: Path) -> Path:
    title = f"Accuracy by intent ({_model_label(summary)}), 95% CI"
    groups = {i: g for i, g in summary["by_intent"].items() if g["evaluated_samples"]}
    if not groups:
        return _empty(path, title, "no evaluated episodes")
    names = sorted(groups, key=lambda i: groups[i]["accuracy"])
    values = [groups[i]["accuracy"] for i in names]
    cis = [_ci(summary, "by_intent", i, "accuracy") for i in names]
    err = _err(values, cis)
    fig, ax = _figure((7.5, 0.45 * len(names) + 1.6))
    bars = ax.barh(range(len(names)), values, xerr=err, capsize=4, color="#4C72B0")
    _label_bars(ax, bars, values, [v + e for v, e in zip(values, err[1])], horizontal=True)
    ax.set_yticks(range(len(names)), [f"{pretty(i)} (n={groups[i]['evaluated_samples']})" for i in names])
    ax.set_xlim(0, 1.15)
    _percent_axis(ax.xaxis)
    ax.set_xlabel("Accuracy (% of scored episodes correct)")
    ax.set_title(title)
    ax.grid(axis="x", alpha=0.3)
    return _save(fig, path)


def _cut_curve(summary: dict[str, Any]) -> tuple[list[int], list[float]]:
    cuts = summary["budget"]["accuracy_if_cut_at"]
    ks = sorted(int(k) for k in cuts)
    return ks, [cuts[str(k)] for k in ks]


def plot_accuracy_vs_budget(summary: dict[str, Any], path: Path) -> Path:
    title = f"Accuracy vs tool-call budget ({_model_label(summary)})"
    ks, values = _cut_curve(summary)
    if not ks:
        return _empty(path, title, "no cut points inside the budget")
    budget = summary["budget"]
    fig, ax = _figure((6.4, 4.2))
    # k = 0 is 0% by definition (no call, no recommendation): it anchors the curve
    ax.plot([0, *ks], [0.0, *values], marker="o", color="#4C72B0", label="trajectories cut after k calls")
    for k, v in zip(ks, values):
        at_line = k == budget.get("budget")
        ax.annotate(f"{v:.1%}", (k, v), textcoords="offset points", xytext=(-5 if at_line else 0, 8),
                    ha="right" if at_line else "center", fontsize=8)
    if budget.get("budget") is not None:
        ax.axvline(budget["budget"], color="0.5", linestyle="--", linewidth=1,
                   label=f"run budget = {budget['budget']} calls "
                         f"({budget['cap_reached_rate']:.1%} of episodes cut off by it)")
    ax.set_xlim(0, max(ks + [budget.get("budget") or 0]) * 1.08)
    ax.set_ylim(0, min(1.05, max(values) * 1.3 + 0.05))
    _percent_axis(ax.yaxis)
    ax.set_xlabel("Tool-call budget k (calls)")
    ax.set_ylabel("Accuracy (%)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    return _save(fig, path)


def plot_first_ask_bins(summary: dict[str, Any], path: Path) -> Path:
    """Accuracy per bin of the first ask_user's position; every bin keeps its slot, empty ones read n=0."""
    title = f"First ask_user position vs accuracy ({_model_label(summary)})"
    rows = summary["interaction"].get("first_ask_vs_accuracy", [])
    if not any(r["scored"] for r in rows):
        return _empty(path, title, "no scored episodes")
    fig, ax = _figure((7.2, 4.2))
    colors = ["0.65" if r["bin"] == "never asked" else "#8172B2" for r in rows]
    values = [r["accuracy"] or 0.0 for r in rows]
    bars = ax.bar(range(len(rows)), values, color=colors, width=0.7)
    for bar, r, v in zip(bars, rows, values):
        text = f"{v:.1%}\nn={r['scored']}" if r["scored"] else "n=0"
        ax.text(bar.get_x() + bar.get_width() / 2, v + 0.015, text, ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(rows)), [r["bin"].replace("never asked", "never\nasked") for r in rows])
    return _finish_share_chart(fig, ax, path, top=1.2, ylabel="Accuracy (%)", title=title,
                               xlabel="Position of the first ask_user in the episode (0 = first call, 1 = last call)")


def render_run_plots(summary: dict[str, Any], out_dir: str | Path) -> list[Path]:
    """Write the four per-run charts into out_dir; returns their paths."""
    out = Path(out_dir)
    names = dict(zip(("source", "intent", "budget", "ask"), RUN_PLOTS))
    return [plot_satisfaction_by_source(summary, out / names["source"]),
            plot_accuracy_by_intent(summary, out / names["intent"]),
            plot_accuracy_vs_budget(summary, out / names["budget"]),
            plot_first_ask_bins(summary, out / names["ask"])]


# ---------------------------------------------------------------------------------------------------------
# Many runs
# ---------------------------------------------------------------------------------------------------------

Labeled = Sequence[tuple[str, dict[str, Any]]]


def plot_compare_accuracy(runs: Labeled, path: Path) -> Path:
    labels = [label for label, _ in runs]
    values = [s["overall_accuracy"] for _, s in runs]
    cis = [_ci(s, "accuracy") for _, s in runs]
    err = _err(values, cis)
    fig, ax = _figure((max(5.0, 1.2 * len(runs) + 2), 4.2))
    bars = ax.bar(range(len(runs)), values, yerr=err, capsize=5, color="#4C72B0")
    _label_bars(ax, bars, values, [v + e for v, e in zip(values, err[1])])
    ax.set_xticks(range(len(runs)), labels, rotation=20 if len(runs) > 4 else 0, ha="right" if len(runs) > 4
                  else "center")
    return _finish_share_chart(fig, ax, path, top=1.12, ylabel="Accuracy (%)",
                               title="Accuracy per run (95% CI)")


def plot_accuracy_per_run(runs: Sequence[tuple[str, float, dict[str, Any] | None]], path: Path) -> Path:
    """Horizontal bars, one per (label, accuracy, interval {"low", "high"} or None), top to bottom in order:
    runs named by long folder names read better down the side than slanted under bars."""
    labels, values = [r[0] for r in runs], [r[1] for r in runs]
    cis = [r[2] if r[2] and r[2].get("low") is not None else None for r in runs]
    err = _err(values, cis)
    fig, ax = _figure((8.0, 1.0 + 0.45 * len(runs)))
    bars = ax.barh(range(len(runs)), values, xerr=err, capsize=4, color="#4C72B0")
    _label_bars(ax, bars, values, [v + e for v, e in zip(values, err[1])], horizontal=True)
    ax.set_yticks(range(len(runs)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 1.15)
    _percent_axis(ax.xaxis)
    ax.set_xlabel("Accuracy (%)")
    ax.set_title("Accuracy per run (95% CI)")
    ax.grid(axis="x", alpha=0.3)
    return _save(fig, path)


def plot_compare_sources(runs: Labeled, path: Path) -> Path:
    sources = [s for s in SOURCE_COLORS if any(r["by_source"].get(s, {}).get("count") for _, r in runs)]
    if not sources:
        return _empty(path, "Rubric satisfaction by source", "no scored rubrics")
    width = 0.8 / len(sources)
    fig, ax = _figure((max(6.0, 1.6 * len(runs) + 2), 4.4))
    for i, source in enumerate(sources):
        values = [r["by_source"].get(source, {}).get("satisfaction", 0.0) for _, r in runs]
        err = _err(values, [_ci(r, "by_source", source) for _, r in runs])
        x = np.arange(len(runs)) + (i - (len(sources) - 1) / 2) * width
        ax.bar(x, values, width, yerr=err, capsize=3, label=source, color=SOURCE_COLORS[source])
        for xi, v, top in zip(x, values, np.array(values) + err[1]):
            ax.text(xi, top + 0.01, f"{v:.0%}", ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(runs)), [label for label, _ in runs], rotation=20 if len(runs) > 4 else 0,
                  ha="right" if len(runs) > 4 else "center")
    ax.legend(title="source", fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _finish_share_chart(fig, ax, path, top=1.15, ylabel="Rubrics satisfied (%)",
                               title="Rubric satisfaction by requirement source (95% CI)")


def plot_compare_intents(runs: Labeled, path: Path) -> Path:
    """The paper's Table 9 as a heat map: one row per intent, one column per run."""
    intents = sorted({i for _, s in runs for i, g in s["by_intent"].items() if g["evaluated_samples"]})
    if not intents:
        return _empty(path, "Accuracy by intent", "no evaluated episodes")
    grid = np.array([[s["by_intent"].get(i, {}).get("accuracy", np.nan)
                      if s["by_intent"].get(i, {}).get("evaluated_samples") else np.nan for _, s in runs]
                     for i in intents], dtype=float)
    fig, ax = _figure((max(5.5, 1.3 * len(runs) + 3), 0.5 * len(intents) + 1.8))
    image = ax.imshow(grid, cmap="Blues", vmin=0, vmax=1, aspect="auto")
    for (row, col), value in np.ndenumerate(grid):
        text = "n/a" if np.isnan(value) else f"{value:.1%}"
        ax.text(col, row, text, ha="center", va="center", fontsize=8,
                color="white" if not np.isnan(value) and value > 0.6 else "black")
    ax.set_xticks(range(len(runs)), [label for label, _ in runs], rotation=20 if len(runs) > 4 else 0,
                  ha="right" if len(runs) > 4 else "center")
    ax.set_yticks(range(len(intents)), [pretty(i) for i in intents])
    bar = fig.colorbar(image, ax=ax, format=PercentFormatter(xmax=1.0, decimals=0))
    bar.set_label("Accuracy (%)")
    ax.set_title("Accuracy by intent and run")
    return _save(fig, path)


def plot_compare_budget(runs: Labeled, path: Path) -> Path:
    """Per model: the real budgets of its runs (solid) and the truncation curve of its largest run (dashed)."""
    by_model: dict[str, list[dict[str, Any]]] = {}
    for _, s in runs:
        by_model.setdefault(_model_label(s), []).append(s)
    fig, ax = _figure((7.0, 4.4))
    colors = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (model, summaries) in enumerate(sorted(by_model.items())):
        color = colors[i % len(colors)]
        real = sorted((s["budget"]["budget"], s["overall_accuracy"]) for s in summaries
                      if s["budget"].get("budget") is not None)
        if real:
            ax.plot(*zip(*real), marker="o", color=color, linewidth=2, label=f"{model}: run at its budget")
        largest = max(summaries, key=lambda s: s["budget"].get("budget") or 0)
        ks, values = _cut_curve(largest)
        if ks:
            ax.plot(ks, values, linestyle="--", marker="x", color=color, alpha=0.7,
                    label=f"{model}: cut after k calls")
    ax.set_ylim(0, 1.05)
    ax.set_xlim(left=0)
    _percent_axis(ax.yaxis)
    ax.set_xlabel("Tool-call budget (calls)")
    ax.set_ylabel("Accuracy (%)")
    ax.set_title("Accuracy vs tool-call budget")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _save(fig, path)


def plot_compare_first_ask(runs: Labeled, path: Path) -> Path:
    """The paper's Figure 4: first ask_user position vs accuracy, marker area by searches per episode."""
    points = [(label, s["interaction"].get("first_ask_user_position_mean"), s["overall_accuracy"],
               s["interaction"].get("searches_mean", 0.0)) for label, s in runs]
    shown = [p for p in points if p[1] is not None]
    never = [p[0] for p in points if p[1] is None]
    fig, ax = _figure((8.4, 4.8))
    colors = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
    if shown:
        # Each run gets a colour and a legend entry instead of a text label next to its marker: runs of
        # similar style sit close together and text labels would overlap.
        depth = np.array([p[3] for p in shown], dtype=float)
        sizes = 60 + 540 * depth / depth.max() if depth.max() > 0 else np.full(len(shown), 60.0)
        for i, ((label, x, y, d), size) in enumerate(zip(shown, sizes)):
            ax.scatter([x], [y], s=size, alpha=0.65, color=colors[i % len(colors)], edgecolor="black",
                       label=f"{label}: {y:.1%}, {d:.1f} searches/episode")
        legend = ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0), title="run (marker area ~ searches)",
                           title_fontsize=8)
        for handle in legend.legend_handles:
            handle.set_sizes([50])
    ax.set_xlim(-0.05, 1.05)
    ax.set_ylim(0, 1.1)
    _percent_axis(ax.yaxis)
    ax.set_xlabel("Mean position of the first ask_user (0 = start of episode, 1 = end)")
    ax.set_ylabel("Accuracy (%)")
    ax.set_title("Interaction style vs accuracy (marker size = searches per episode)")
    ax.grid(alpha=0.3)
    if never:
        ax.text(0.99, 0.02, "never asked (not shown): " + ", ".join(never), transform=ax.transAxes, ha="right",
                va="bottom", fontsize=7, color="0.4")
    return _save(fig, path)


def render_compare_plots(runs: Labeled, out_dir: str | Path) -> list[Path]:
    """Write the comparison charts for [(row label, summary)] into out_dir; returns their paths."""
    out = Path(out_dir)
    return [plot_compare_accuracy(runs, out / COMPARE_PLOTS[0]),
            plot_compare_sources(runs, out / COMPARE_PLOTS[1]),
            plot_compare_intents(runs, out / COMPARE_PLOTS[2]),
            plot_compare_budget(runs, out / COMPARE_PLOTS[3]),
            plot_compare_first_ask(runs, out / COMPARE_PLOTS[4])]


# ---------------------------------------------------------------------------------------------------------
# Accuracy against a numeric setting (budget study, sweep table)
# ---------------------------------------------------------------------------------------------------------

def plot_accuracy_lines(lines: Sequence[dict[str, Any]], path: Path, *, xlabel: str, title: str) -> Path:
    """One line per entry of `lines`: {"label", "x": [...], "y": [...], and optionally "low"/"high" (error
    bars; None where unknown) and "dashed" (a derived curve, e.g. truncation)}."""
    drawn = [line for line in lines if line["x"]]
    if not drawn:
        return _empty(path, title, "no finished runs")
    fig, ax = _figure((7.6, 4.4))
    colors = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, line in enumerate(drawn):
        x, y = np.asarray(line["x"], dtype=float), np.asarray(line["y"], dtype=float)
        lows, highs = line.get("low"), line.get("high")
        err = None
        if lows is not None and highs is not None:
            err = np.array([[max(0.0, v - lo) if lo is not None else 0.0 for v, lo in zip(y, lows)],
                            [max(0.0, hi - v) if hi is not None else 0.0 for v, hi in zip(y, highs)]])
        ax.errorbar(x, y, yerr=err, capsize=4, marker="x" if line.get("dashed") else "o",
                    linestyle="--" if line.get("dashed") else "-", color=colors[i % len(colors)],
                    alpha=0.75 if line.get("dashed") else 1.0, label=line["label"])
    ax.set_ylim(0, 1.05)
    ax.set_xlim(left=0)
    _percent_axis(ax.yaxis)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("Accuracy (%)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _save(fig, path)

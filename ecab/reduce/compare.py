"""`python -m ecab.reduce compare runs/a runs/b ...`: the paper's tables for many runs, as Markdown and CSV.

- Table 3: accuracy (95% CI), rubric satisfaction (95% CI), finish rate, average tool calls, the share of
  episodes that used every call and the share of each termination that occurred (budget_exhausted: cut off at
  the cap).
- Table 4: rubric satisfaction by requirement source (95% CI).
- Table 7: accuracy by number of implicit query requirements (0-1, 2, 3+).
- Table 8: interaction behaviour (calls to key tools, first ask_user position, ask share, profile reads).
- Table 9: accuracy by intent.

Rows come in the order the runs were given. A row is named by the run's model; runs of one model at
several budgets get "model @<budget>", and any remaining clash the run folder's name. Each run's
summary.json is read as is; a run without one (or with one from before the variance analysis) is reduced
first. Markdown shows rates as percentages; CSV keeps fractions (4 dp) with the interval in extra columns.

Runs of different task sets (manifest task_set_hash, or the tasks themselves) are flagged by a warning line
at the top and in compare.json (`task_sets`), and the paired accuracy deltas against the first run use only
the tasks both ran (paired.py: Newcombe's paired interval).
"""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any, Callable, Sequence

from ecab.reduce import reduce_run
from ecab.reduce.paired import paired_delta, task_accuracies, task_sets
from ecab.reduce.plots import COMPARE_PLOTS, render_compare_plots
from ecab.reduce.report import num, pct, table
from ecab.reduce.rows import run_row, shown_terminations
from ecab.runs import RunFolder
from ecab.schema import INFO_SOURCES

DEFAULT_OUT = Path("runs") / "compare"
KEY_TOOLS = ("search_products", "get_product_details", "get_review_content", "get_user_profile", "ask_user")
IMPLICIT_BUCKETS = ("0-1", "2", "3+")
Labeled = Sequence[tuple[str, dict[str, Any]]]


# ---------------------------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------------------------

def load_summary(run_dir: str | Path, *, rebuild: bool = False, plots: bool = True) -> dict[str, Any]:
    """The run's summary.json; reduced first (its plots too, unless plots=False) when missing or outdated."""
    run_dir = Path(run_dir)
    summary = None if rebuild else RunFolder(run_dir).read_summary()
    if summary is None:
        return reduce_run(run_dir, plots=plots)
    return summary if "variance" in summary else reduce_run(run_dir, plots=plots)


def row_labels(run_dirs: Sequence[Path], summaries: Sequence[dict[str, Any]]) -> list[str]:
    labels = [str(s.get("model") or Path(d).name) for d, s in zip(run_dirs, summaries)]
    if len(set(labels)) < len(labels):
        labels = [f"{label} @{s['budget']['budget']}" if labels.count(label) > 1 and s["budget"].get("budget")
                  else label for label, s in zip(labels, summaries)]
    if len(set(labels)) < len(labels):
        labels = [f"{label} ({Path(d).name})" if labels.count(label) > 1 else label
                  for label, d in zip(labels, run_dirs)]
    return labels


# ---------------------------------------------------------------------------------------------------------
# Tables: each is (markdown headers, markdown rows, csv rows as dicts)
# ---------------------------------------------------------------------------------------------------------

def _ci(summary: dict[str, Any], *path: str) -> dict[str, Any]:
    node: Any = summary.get("variance", {})
    for key in path:
        node = node.get(key, {}) if isinstance(node, dict) else {}
    return node if isinstance(node, dict) else {}


def _with_ci(value: float | None, ci: dict[str, Any]) -> str:
    if value is None:
        return "n/a"
    if ci.get("low") is None:
        return pct(value)
    return f"{pct(value)} [{ci['low'] * 100:.1f}, {ci['high'] * 100:.1f}]"


def _csv_ci(prefix: str, value: float | None, ci: dict[str, Any]) -> dict[str, Any]:
    return {prefix: value, f"{prefix}_ci_low": ci.get("low"), f"{prefix}_ci_high": ci.get("high")}


class Table:
    def __init__(self, name: str, title: str, headers: Sequence[str]):
        self.name, self.title, self.headers = name, title, list(headers)
        self.md_rows: list[list[Any]] = []
        self.csv_rows: list[dict[str, Any]] = []

    def add(self, md_row: list[Any], csv_row: dict[str, Any]) -> None:
        self.md_rows.append(md_row)
        self.csv_rows.append(csv_row)

    def markdown(self) -> str:
        return "\n".join([f"## {self.title}", "", *table(self.headers, self.md_rows), ""])

    def csv(self) -> str:
        fields = list(dict.fromkeys(k for row in self.csv_rows for k in row))
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: "" if v is None else v for k, v in row.items()} for row in self.csv_rows)
        return buffer.getvalue()


def table3(runs: Labeled) -> Table:
    rows = [run_row(s) for _, s in runs]
    ends = shown_terminations(rows)          # a column per termination that occurred in some run
    t = Table("table3", "Table 3: main results (95% CI over tasks; summary.md names each interval's method)",
              ("model", "evaluated", "accuracy", "rubric satisfaction", "finish rate", "avg tool calls",
               "used every call", *[f"ended {pretty(e)}" for e in ends]))
    for (label, s), row in zip(runs, rows):
        acc, sat = _ci(s, "accuracy"), _ci(s, "rubric_satisfaction")
        shares = row["termination_shares"]
        t.add([label, s["evaluated_samples"], _with_ci(s["overall_accuracy"], acc),
               _with_ci(s["overall_rubric_satisfaction"], sat), pct(s["prediction_finished_rate"]),
               num(s["avg_tool_calls"], 1), pct(row["used_every_call_rate"]), *[pct(shares.get(e)) for e in ends]],
              {"model": label, "evaluated": s["evaluated_samples"],
               **_csv_ci("accuracy", s["overall_accuracy"], acc),
               **_csv_ci("rubric_satisfaction", s["overall_rubric_satisfaction"], sat),
               "finish_rate": s["prediction_finished_rate"], "avg_tool_calls": s["avg_tool_calls"],
               "used_every_call_rate": row["used_every_call_rate"], "cap_reached_rate": row["cap_reached_rate"],
               **{f"ended_{e}": shares.get(e) for e in ends}})
    return t


def pretty(name: str) -> str:
    return name.replace("_", " ")


def delta_table(labels: Sequence[str], deltas: Sequence[dict[str, Any]]) -> Table:
    """Each run's accuracy minus the first run's, on the tasks both ran."""
    t = Table("deltas", f"Paired accuracy deltas vs {labels[0]} (shared tasks; Newcombe 95% CI)",
              ("model", "shared tasks", "accuracy delta"))
    for label, d in zip(labels[1:], deltas):
        text = "n/a" if d["value"] is None else \
            f"{d['value'] * 100:+.1f} pts [{d['low'] * 100:+.1f}, {d['high'] * 100:+.1f}]"
        t.add([label, d["shared_tasks"], text],
              {"model": label, "shared_tasks": d["shared_tasks"], "accuracy_delta": d["value"],
               "accuracy_delta_ci_low": d["low"], "accuracy_delta_ci_high": d["high"]})
    return t


def table4(runs: Labeled) -> Table:
    t = Table("table4", "Table 4: rubric satisfaction by source (95% CI)", ("model", *INFO_SOURCES))
    for label, s in runs:
        values = {src: (s["by_source"].get(src, {}).get("satisfaction") if s["by_source"].get(src, {}).get("count")
                        else None) for src in INFO_SOURCES}
        t.add([label, *[_with_ci(values[src], _ci(s, "by_source", src)) for src in INFO_SOURCES]],
              {"model": label, **{k: v for src in INFO_SOURCES
                                  for k, v in _csv_ci(src, values[src], _ci(s, "by_source", src)).items()}})
    return t


def table7(runs: Labeled) -> Table:
    t = Table("table7", "Table 7: accuracy by implicit query requirements",
              ("model", *[f"{b} implicit" for b in IMPLICIT_BUCKETS]))
    for label, s in runs:
        groups = s.get("by_implicit_count", {})
        values = {b: groups[b]["accuracy"] if groups.get(b, {}).get("evaluated_samples") else None
                  for b in IMPLICIT_BUCKETS}
        t.add([label, *[f"{pct(values[b])} (n={groups.get(b, {}).get('evaluated_samples', 0)})"
                        for b in IMPLICIT_BUCKETS]],
              {"model": label, **{f"implicit_{b}": values[b] for b in IMPLICIT_BUCKETS},
               **{f"implicit_{b}_n": groups.get(b, {}).get("evaluated_samples", 0) for b in IMPLICIT_BUCKETS}})
    return t


def table8(runs: Labeled) -> Table:
    t = Table("table8", "Table 8: interaction behaviour (mean calls per episode)",
              ("model", *KEY_TOOLS, "first ask position", "asked share", "profile read", "finish rate"))
    for label, s in runs:
        inter = s["interaction"]
        calls = {tool: inter["calls_per_tool_mean"].get(tool, 0.0) for tool in KEY_TOOLS}
        profile = inter.get("profile_read_rate", s["persona_utilization"]["profile_called_rate"])
        finish = inter.get("finish_rate", s["prediction_finished_rate"])
        t.add([label, *[num(calls[tool], 1) for tool in KEY_TOOLS], num(inter["first_ask_user_position_mean"]),
               pct(inter["ask_user_episode_rate"]), pct(profile), pct(finish)],
              {"model": label, **calls, "first_ask_position": inter["first_ask_user_position_mean"],
               "asked_share": inter["ask_user_episode_rate"], "profile_read_rate": profile, "finish_rate": finish})
    return t


def table9(runs: Labeled) -> Table:
    intents = sorted({i for _, s in runs for i in s["by_intent"]})
    t = Table("table9", "Table 9: accuracy by intent", ("model", *intents))
    for label, s in runs:
        values = {i: s["by_intent"][i]["accuracy"] if s["by_intent"].get(i, {}).get("evaluated_samples") else None
                  for i in intents}
        t.add([label, *[_with_ci(values[i], _ci(s, "by_intent", i, "accuracy")) for i in intents]],
              {"model": label, **values})
    return t


TABLES: tuple[Callable[[Labeled], Table], ...] = (table3, table4, table7, table8, table9)


# ---------------------------------------------------------------------------------------------------------
# The command
# ---------------------------------------------------------------------------------------------------------

def compare_runs(run_dirs: Sequence[str | Path], out_dir: str | Path = DEFAULT_OUT, *, rebuild: bool = False,
                 plots: bool = True) -> dict[str, Any]:
    """Write table{3,4,7,8,9}.md/.csv, deltas.md/.csv (two or more runs), compare.md, compare.json and (unless
    plots=False) plots/*.png into out_dir.

    Returns {"labels", "tables": {name: Table}, "markdown", "plots": [paths], "task_sets", "paired_deltas"}.
    """
    if not run_dirs:
        raise ValueError("compare needs at least one run folder")
    run_dirs = [Path(d) for d in run_dirs]
    summaries = [load_summary(d, rebuild=rebuild, plots=plots) for d in run_dirs]
    runs = list(zip(row_labels(run_dirs, summaries), summaries))
    labels = [label for label, _ in runs]
    sets = task_sets(run_dirs)
    baseline = task_accuracies(run_dirs[0])
    deltas = [{"model": label, **paired_delta(task_accuracies(d), baseline)}
              for label, d in zip(labels[1:], run_dirs[1:])]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tables = {t.name: t for t in (make(runs) for make in TABLES)}
    if deltas:
        tables["deltas"] = delta_table(labels, deltas)
    for t in tables.values():
        (out / f"{t.name}.md").write_text(t.markdown(), encoding="utf-8")
        (out / f"{t.name}.csv").write_text(t.csv(), encoding="utf-8")
    sources = "\n".join(f"- {label}: `{d}`" for (label, _), d in zip(runs, run_dirs))
    warning = [f"**{sets['warning']}**", ""] if sets["warning"] else []
    markdown = "\n".join(["# Run comparison", "", *warning, sources, "", *(t.markdown() for t in tables.values())])
    (out / "compare.json").write_text(json.dumps(
        {"labels": labels, "runs": [str(d) for d in run_dirs], "task_sets": sets,
         "paired_deltas_baseline": labels[0], "paired_deltas": deltas}, indent=2) + "\n", encoding="utf-8")
    paths: list[Path] = []
    if plots:
        paths = render_compare_plots(runs, out / "plots")
        markdown += "\n## Plots\n" + "\n".join(f"![{p[:-4]}](plots/{p})" for p in COMPARE_PLOTS) + "\n"
    (out / "compare.md").write_text(markdown, encoding="utf-8")
    return {"labels": labels, "tables": tables, "markdown": markdown, "plots": paths, "task_sets": sets,
            "paired_deltas": deltas}

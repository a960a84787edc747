"""The sweep table: the runs of one sweep side by side (`write_sweep_table`, called at the end of a Hydra
multirun and usable on any list of run folders).

Per run: its folder, the settings that vary across the sweep (its config.yaml against the others'), the
headline numbers (rows.py: accuracy with its 95% interval, rubric satisfaction, average tool calls, the shares
that used every call and that were cut off at the cap, episodes) and the paired accuracy delta against a
baseline. The baseline is the first finished run in the order given (a sweep lists its jobs in launch order,
so the first value of every swept setting), on the tasks both ran, with Newcombe's paired interval
(paired.py). When the sweep varies the task set (a seed with benchmark.shuffle, benchmark.limit), each run is
paired with the first run of its own task set instead (baseline_index). A run folder without summary.json (a
failed or unfinished job) is listed as "failed/unfinished" and never stops the table.

Writes sweep.json, sweep.md and sweep.png: accuracy against the numeric setting that varies (budget first;
never a seed, whose values are labels, not a scale), one line per combination of the other varying settings;
with no such setting, accuracy per run.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

import yaml

from ecab.reduce.paired import DELTA_METHOD, paired_delta, task_accuracies, task_sets
from ecab.reduce.plots import plot_accuracy_lines, plot_accuracy_per_run
from ecab.reduce.report import num, pct, table
from ecab.reduce.rows import run_row
from ecab.runs import RunFolder
from ecab.schema import FormatError

FAILED = "failed/unfinished"
PLOT = "sweep.png"
# run.* names and places a run (name, dir, resume, progress): never a setting that changes a result
IGNORED_PREFIXES = ("run.",)


# ---------------------------------------------------------------------------------------------------------
# Reading the run folders
# ---------------------------------------------------------------------------------------------------------

def flatten(node: Any, prefix: str = "") -> dict[str, Any]:
    """{"a.b.c": leaf} of a nested dict (lists are leaves)."""
    if not isinstance(node, dict):
        return {prefix: node} if prefix else {}
    flat: dict[str, Any] = {}
    for key, value in node.items():
        flat.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    return flat


def read_config(run_dir: Path) -> dict[str, Any]:
    """The run's config.yaml, flattened; {} when it is missing or unreadable (a job that failed early)."""
    try:
        loaded = yaml.safe_load((run_dir / "config.yaml").read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return {}
    return flatten(loaded) if isinstance(loaded, dict) else {}


def read_summary(run_dir: Path) -> dict[str, Any] | None:
    """summary.json, or None for a failed or unfinished run (missing or unreadable)."""
    try:
        summary = RunFolder(run_dir).read_summary()
    except (FormatError, OSError):
        return None
    return summary if isinstance(summary, dict) else None


def varying_settings(configs: Sequence[dict[str, Any]]) -> list[str]:
    """The config keys whose values differ between runs. A config group whose `name` differs (model=a,b) is
    one setting named after the group, standing for all its keys."""
    keys = [k for k in dict.fromkeys(k for c in configs for k in c) if not k.startswith(IGNORED_PREFIXES)]
    differ = [k for k in keys if len({json.dumps(c.get(k), sort_keys=True, default=str) for c in configs}) > 1]
    groups = [k[: -len(".name")] for k in differ if k.endswith(".name") and "." not in k[: -len(".name")]]
    return groups + [k for k in differ if k.split(".")[0] not in groups]


def setting_value(config: dict[str, Any], key: str) -> Any:
    """A setting's value in one run's config: a config group's name, or the key's value."""
    return config.get(f"{key}.name") if f"{key}.name" in config else config.get(key)


# ---------------------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------------------

def failed_job_row(overrides: str, varying: list[str]) -> dict[str, Any]:
    """The row of a job that failed before writing a run folder (one error line, e.g. its file's targets missing
    from the catalog): named by its overrides, its swept settings read from them."""
    given = dict(item.lstrip("+~").split("=", 1) for item in overrides.split() if "=" in item)
    return {"name": overrides, "run": None, "status": FAILED, "settings": {k: given.get(k) for k in varying}}


def sweep_rows(run_dirs: Sequence[Path]) -> tuple[list[str], list[dict[str, Any]]]:
    """(the varying settings, one row per run in the order given)."""
    configs = [read_config(d) for d in run_dirs]
    varying = varying_settings([c for c in configs if c])   # a job that failed before writing one has none
    rows = []
    for run_dir, config in zip(run_dirs, configs):
        summary = read_summary(run_dir)
        row: dict[str, Any] = {"name": run_dir.name, "run": str(run_dir), "status": "ok" if summary else FAILED,
                               "settings": {k: setting_value(config, k) for k in varying}}
        rows.append({**row, **run_row(summary)} if summary else row)
    return varying, rows


def baseline_index(i: int, keys: list[set[str] | None]) -> int:
    """The row (an index into the finished rows) that row i's delta is paired against: the first earlier row
    that ran the same tasks, else the first earlier one sharing any, else row i itself (the first of its task
    set: its own baseline). With one task set that is always the sweep's first run; a sweep that varies the
    task set (seed=1,2 benchmark.shuffle=true) gets its deltas inside each task set instead of n/a."""
    mine = keys[i]
    if mine is None:
        return i
    earlier = [j for j in range(i) if keys[j] is not None]
    same = [j for j in earlier if keys[j] == mine]
    overlapping = [j for j in earlier if keys[j] & mine]      # type: ignore[operator]
    return (same or overlapping or [i])[0]


def add_deltas(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Each finished row's paired accuracy delta against its baseline (baseline_index), naming it; returns the
    first finished row (None when no run finished). A folder that cannot be read gets the reason instead."""
    finished = [r for r in rows if r["status"] == "ok"]
    if not finished:
        return None
    accuracies: list[dict[str, float] | None] = []
    for r in finished:
        try:
            accuracies.append(task_accuracies(r["run"]))
        except (FormatError, OSError) as exc:
            accuracies.append(None)
            r["accuracy_delta"] = {"error": str(exc)}
    keys = [set(a) if a is not None else None for a in accuracies]
    for i, r in enumerate(finished):
        own = accuracies[i]
        if own is None:
            continue
        b = baseline_index(i, keys)
        base = accuracies[b]
        assert base is not None      # baseline_index never picks an unreadable row
        r["accuracy_delta"] = {**paired_delta(own, base), "baseline": finished[b]["run"], "is_baseline": b == i}
    return finished[0]


def is_seed(key: str) -> bool:
    return key == "seed" or key.endswith(".seed")


def numeric_setting(varying: list[str], rows: list[dict[str, Any]]) -> str | None:
    """The setting to plot accuracy against: budget if it varies, else the first numeric one that is not a
    seed; None if none."""
    def numeric(key: str) -> bool:
        if is_seed(key):
            return False
        values = {r["settings"].get(key) for r in rows if r["status"] == "ok"}
        return len(values) > 1 and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
    candidates = [k for k in varying if numeric(k)]
    return "budget" if "budget" in candidates else (candidates[0] if candidates else None)


def plot_sweep(path: Path, x_key: str, varying: list[str], rows: list[dict[str, Any]]) -> Path:
    """Accuracy against `x_key`, one line per combination of the other varying settings (e.g. per model)."""
    others = [k for k in varying if k != x_key]
    lines: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if r["status"] == "ok" and r["accuracy"] is not None:
            label = ", ".join(f"{k}={r['settings'].get(k)}" for k in others) or "accuracy"
            lines.setdefault(label, []).append(r)
    series = []
    for label, members in lines.items():
        members = sorted(members, key=lambda r: r["settings"][x_key])
        series.append({"label": label, "x": [r["settings"][x_key] for r in members],
                       "y": [r["accuracy"] for r in members],
                       "low": [r["accuracy_ci"]["low"] for r in members],
                       "high": [r["accuracy_ci"]["high"] for r in members]})
    return plot_accuracy_lines(series, path, xlabel=x_key, title=f"Accuracy vs {x_key} (95% CI)")


def plot_runs(path: Path, rows: list[dict[str, Any]]) -> Path | None:
    """Accuracy per finished run with its interval (no numeric setting to put on an axis); None if none
    finished."""
    done = [r for r in rows if r["status"] == "ok" and r["accuracy"] is not None]
    if not done:
        return None
    return plot_accuracy_per_run([(r["name"], r["accuracy"], r["accuracy_ci"]) for r in done], path)


def _ci_text(value: float | None, low: float | None, high: float | None) -> str:
    if value is None:
        return "n/a"
    if low is None or high is None:
        return pct(value)
    return f"{pct(value)} [{low * 100:.1f}, {high * 100:.1f}]"


def _delta_text(delta: dict[str, Any] | None, name_baseline: bool) -> str:
    if not delta:
        return ""
    if delta.get("is_baseline"):
        return "baseline"
    if "error" in delta or delta.get("value") is None:
        return "n/a"
    against = f", vs {Path(delta['baseline']).name}" if name_baseline and delta.get("baseline") else ""
    return (f"{delta['value'] * 100:+.1f} pts [{delta['low'] * 100:+.1f}, {delta['high'] * 100:+.1f}] "
            f"(n={delta['shared_tasks']}{against})")


def sweep_markdown(result: dict[str, Any]) -> str:
    varying, rows = result["varying_settings"], result["rows"]
    baselines = result.get("baselines") or []
    body = []
    for r in rows:
        settings = [str(r["settings"].get(k)) for k in varying]
        if r["status"] != "ok":
            body.append([r["name"], *settings, FAILED, *[""] * 7])
            continue
        ci = r["accuracy_ci"]
        body.append([r["name"], *settings, "ok", _ci_text(r["accuracy"], ci["low"], ci["high"]),
                     pct(r["rubric_satisfaction"]), num(r["avg_tool_calls"], 1), pct(r["used_every_call_rate"]),
                     pct(r["cap_reached_rate"]),
                     r["episodes"], _delta_text(r.get("accuracy_delta"), len(baselines) > 1)])
    lines = ["# Sweep", ""]
    if result["task_sets"] and result["task_sets"]["warning"]:
        lines += [f"**{result['task_sets']['warning']}**", ""]
    lines += table(("run", *varying, "status", "accuracy [95% CI]", "rubric satisfaction", "avg tool calls",
                    "used every call", "cut off at the cap", "episodes", "accuracy delta vs baseline [95% CI]"), body)
    where = (f"Baseline: {result['baseline']}" if len(baselines) == 1 else
             f"Baselines, one per task set (each delta names its own): {', '.join(baselines)}" if baselines else
             "Baseline: none (no run finished)")
    lines += ["", f"{where}; deltas are paired on the tasks both runs ran ({DELTA_METHOD}). Accuracy intervals: "
                  f"each run's summary (Wilson with one trial per task)."]
    if result["plot"]:
        what = f"accuracy vs {result['plot_setting']}" if result["plot_setting"] else "accuracy per run"
        lines += ["", f"![{what}]({PLOT})"]
    return "\n".join(lines) + "\n"


def write_sweep_table(sweep_dir: Path, run_dirs: list[Path], failed_jobs: Sequence[str] = ()) -> dict:
    """Write sweep.json, sweep.md and sweep.png (when a run finished) into sweep_dir; returns the JSON
    object: {"runs", "varying_settings", "baseline", "baselines", "delta_method", "task_sets", "plot", "plot_setting",
    "rows"}."""
    sweep_dir, run_dirs = Path(sweep_dir), [Path(d) for d in run_dirs]
    sweep_dir.mkdir(parents=True, exist_ok=True)
    varying, rows = sweep_rows(run_dirs)
    rows += [failed_job_row(job, varying) for job in failed_jobs]
    baseline = add_deltas(rows)
    finished = [Path(r["run"]) for r in rows if r["status"] == "ok"]
    try:
        sets = task_sets(finished) if finished else None
    except (FormatError, OSError) as exc:
        sets = {"same": None, "warning": f"warning: task sets not compared ({exc})"}
    x_key = numeric_setting(varying, rows)
    plot = plot_sweep(sweep_dir / PLOT, x_key, varying, rows) if x_key else plot_runs(sweep_dir / PLOT, rows)
    result = {"runs": [str(d) for d in run_dirs], "failed_jobs": list(failed_jobs), "varying_settings": varying,
              "baseline": baseline["run"] if baseline else None,
              "baselines": list(dict.fromkeys(r["accuracy_delta"]["baseline"] for r in rows
                                              if "baseline" in r.get("accuracy_delta", {}))),
              "delta_method": DELTA_METHOD,
              "task_sets": sets, "plot": plot.name if plot else None, "plot_setting": x_key, "rows": rows}
    (sweep_dir / "sweep.json").write_text(json.dumps(result, indent=2, default=str) + "\n", encoding="utf-8")
    (sweep_dir / "sweep.md").write_text(sweep_markdown(result), encoding="utf-8")
    return result

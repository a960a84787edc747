"""`python -m ecab.study --budgets 10,25,50,100 [overrides]`: the call-budget study as one command.

Every budget is a normal run of `python -m ecab.run` with `budget=<b>`: its own run folder (named by
`ecab.run.run_name`, resumable like any run, locked while it runs, with its report.html), on one catalog and
one task set loaded once. Then `runs/<study>/` (default: the run name with the budgets in the budget's place, e.g.
`heuristic-b10,25,50-generated-limit20-budget-study`, so studies never overwrite each other; `--study` to name it) gets:

- budget_study.json: per budget the accuracy with its 95% interval (the run summary's: Wilson with one trial
  per task), rubric satisfaction, average tool calls, the share that used every call (cut off or recommending
  with the last one), the share of every termination (budget_exhausted: cut off at the cap), episodes; and the truncation view: the largest budget's run cut after b calls
  (reduce/budget.py), beside the accuracy the run at budget b actually reached;
- budget_study.md: the same as a table; budget_study.png: accuracy vs budget with the intervals as error bars
  and the truncation curve dashed.

Runs on runner=local by default (no Ray needed); runner=ray runs every budget on Ray against one set of
catalog actors started once (jobs/budget_study.py is this command with runner=ray). Other overrides are Hydra
overrides, exactly as `python -m ecab.run` takes them; the budgets are set with --budgets, never budget=.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Sequence

from ecab.config import ConfigError, EcabConfig, die, load_config, naming, preflight
from ecab.env.agent_protocol import EndpointRefused
from ecab.reduce.budget import truncated_accuracy
from ecab.reduce.plots import plot_accuracy_lines
from ecab.reduce.report import num, pct, table
from ecab.reduce.rows import run_row, shown_terminations
from ecab.run import (EXIT_INFRA_ERRORS, infra_errors, judge_and_reduce, prepare_folder, tasks_and_catalog,
                      run_episodes, run_name, validate)
from ecab.runner.protocol import RunnerFailed
from ecab.runs import RunFolder
from ecab.schema import FormatError, Task
from ecab.view import report_after_run

DEFAULT_BUDGETS = "25,50,75,100"
STUDY_FILES = ("budget_study.json", "budget_study.md", "budget_study.png")


# ---------------------------------------------------------------------------------------------------------
# The command line
# ---------------------------------------------------------------------------------------------------------

def parse_args(argv: Sequence[str], default_runner: str = "local") -> tuple[list[int], str | None, list[str]]:
    """(budgets ascending, study name or None, Hydra overrides with a runner= first unless one is given)."""
    parser = argparse.ArgumentParser(
        prog="python -m ecab.study", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        usage="%(prog)s [--budgets B1,B2,...] [--study NAME] [hydra overrides, e.g. model=heuristic "
              "benchmark.limit=50]")
    parser.add_argument("--budgets", default=DEFAULT_BUDGETS,
                        help=f"comma-separated call budgets (default {DEFAULT_BUDGETS})")
    parser.add_argument("--study", default=None, help="study folder name under run.dir (default: the run name "
                                                      "with the budgets in the budget's place, then -budget-study)")
    known, overrides = parser.parse_known_args(list(argv))
    try:
        budgets = sorted({int(b) for b in known.budgets.split(",") if b.strip()})
    except ValueError:
        parser.error(f"--budgets: expected integers like 25,50,100, got {known.budgets!r}")
    if not budgets:
        parser.error("--budgets: give at least one positive budget")
    if budgets[0] < 1:
        parser.error(f"--budgets: every budget must be a positive number of calls, got {budgets[0]}")
    if known.study is not None and (not known.study.strip() or known.study in (".", "..")
                                    or any(sep in known.study for sep in ("/", "\\"))):
        parser.error(f"--study: a folder name under run.dir, without / or .., got {known.study!r}")
    unknown = [o for o in overrides if o.startswith("-")]
    if unknown:
        parser.error(f"unknown option {unknown[0]} (Hydra overrides are key=value)")
    if any(o.startswith("budget=") for o in overrides):
        parser.error("set the budgets with --budgets, not budget=")
    if not any(o.startswith("runner=") for o in overrides):
        overrides = [f"runner={default_runner}", *overrides]
    return budgets, known.study, overrides


# ---------------------------------------------------------------------------------------------------------
# Running the budgets
# ---------------------------------------------------------------------------------------------------------

def budget_configs(overrides: list[str], budgets: list[int]) -> list[EcabConfig]:
    """One checked config per budget, each naming its own run folder: a given run.name gets `-b<budget>`
    added when the budgets would otherwise share it."""
    configs = [validate(load_config([*overrides, f"budget={b}"])) for b in budgets]
    names = [run_name(c) for c in configs]
    if len(set(names)) < len(names) and configs[0].run.name:
        configs = [validate(load_config([*overrides, f"budget={b}", f"run.name={configs[0].run.name}-b{b}"]))
                   for b in budgets]
        names = [run_name(c) for c in configs]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise ConfigError(f"budgets {budgets[names.index(name)]} and {budgets[i]} would share the run folder "
                              f"{name}; leave run.name unset or give each budget its own")
    return configs


def open_pool(cfg: EcabConfig, catalog) -> Any:
    """runner=ray: the catalog actors every budget's run shares, placed as runner=ray places its own
    (conf/runner/ray.yaml), so the catalog is loaded once for the whole study. None on runner=local."""
    if cfg.runner.name != "ray":
        return None
    from ecab.core.ray_connect import ensure_ray
    from ecab.runner.ray_catalog import CatalogPool
    ensure_ray(cfg.runner.address)
    return CatalogPool(Path(catalog.path).resolve(), catalog.meta, cfg.catalog.replicas,
                       num_cpus=cfg.runner.catalog_cpus, max_concurrency=cfg.runner.catalog_max_concurrency)


def run_budget(cfg: EcabConfig, tasks: list[Task], catalog, pool) -> tuple[Path, dict[str, Any], int]:
    """Run (or resume) one budget's run folder, judge and reduce it, write its report: (folder, summary,
    units left in infra_error)."""
    folder = prepare_folder(cfg, tasks, catalog)   # locked, like any run folder
    try:
        print(f"budget {cfg.budget}: {len(tasks)} tasks x {cfg.trials} trial(s) -> {folder.path}")
        run_episodes(cfg, tasks, catalog, folder, catalog_pool=pool)
        summary = judge_and_reduce(cfg, tasks, catalog, folder)
        infra = len(infra_errors(folder, tasks))
    finally:
        folder.release()
    report_after_run(folder.path)
    return folder.path, summary, infra


# ---------------------------------------------------------------------------------------------------------
# The study table
# ---------------------------------------------------------------------------------------------------------

def truncation_view(largest_run: Path, budgets: list[int]) -> dict[int, float]:
    """Accuracy of the largest budget's run had every trajectory been cut after b calls, for each budget b."""
    _, _, trajectories, judgements = RunFolder(largest_run).load()
    return {b: round(v, 4) for b, v in truncated_accuracy(trajectories, judgements, budgets).items()}


def study_row(budget: int, run_dir: Path, summary: dict[str, Any], infra: int, truncated: float) -> dict[str, Any]:
    return {"budget": budget, "run": str(run_dir), "run_name": run_dir.name, **run_row(summary),
            "accuracy_if_largest_cut_here": truncated, "cut_points": (summary.get("budget") or {}).get("cut_points"),
            "infra_error_units": infra}


def study_markdown(study: dict[str, Any]) -> str:
    rows, largest = study["rows"], study["largest_budget"]
    ends = shown_terminations(rows)
    body = [[r["budget"], f"{pct(r['accuracy'])} [{pct(r['accuracy_ci']['low'])}, {pct(r['accuracy_ci']['high'])}]",
             pct(r["accuracy_if_largest_cut_here"]), pct(r["rubric_satisfaction"]), num(r["avg_tool_calls"], 1),
             pct(r["used_every_call_rate"]), *[pct(r["termination_shares"].get(e)) for e in ends], r["episodes"],
             f"`{r['run_name']}`"] for r in rows]
    lines = [f"# Budget study: {study['model']}", "",
             *table(("budget", "accuracy [95% CI]", f"b{largest} run cut here", "rubric satisfaction",
                     "avg tool calls", "used every call", *[f"ended {e.replace('_', ' ')}" for e in ends],
                     "episodes", "run"), body), "",
             f"Intervals: {study['interval_method']}. \"b{largest} run cut here\": the budget-{largest} run's "
             "trajectories cut after that many calls (a recommendation after the cut does not count), beside "
             "the accuracy the run at that budget reached.", "", "![accuracy vs budget](budget_study.png)"]
    return "\n".join(lines) + "\n"


def write_study(out: Path, study: dict[str, Any]) -> list[Path]:
    """budget_study.json, budget_study.md and budget_study.png in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    rows = study["rows"]
    (out / STUDY_FILES[0]).write_text(json.dumps(study, indent=2) + "\n", encoding="utf-8")
    (out / STUDY_FILES[1]).write_text(study_markdown(study), encoding="utf-8")
    lines = [{"label": "run at each budget (95% CI)", "x": [r["budget"] for r in rows],
              "y": [r["accuracy"] for r in rows], "low": [r["accuracy_ci"]["low"] for r in rows],
              "high": [r["accuracy_ci"]["high"] for r in rows]},
             {"label": f"budget-{study['largest_budget']} run cut after k calls", "dashed": True,
              "x": [r["budget"] for r in rows], "y": [r["accuracy_if_largest_cut_here"] for r in rows]}]
    plot_accuracy_lines(lines, out / STUDY_FILES[2], xlabel="Tool-call budget (calls)",
                        title=f"Accuracy vs tool-call budget ({study['model']})")
    return [out / name for name in STUDY_FILES]


def run_study(budgets: list[int], overrides: list[str], study: str | None = None) -> dict[str, Any]:
    """Run every budget, then write the study folder; returns the budget_study.json object."""
    configs = budget_configs(overrides, budgets)
    base = configs[0]
    tasks, catalog = tasks_and_catalog(base)      # the checks ecab.run makes (a file's targets in the catalog)
    pool = open_pool(base, catalog)
    done = []
    try:
        for cfg in configs:
            done.append((cfg.budget, *run_budget(cfg, tasks, catalog, pool)))
    finally:
        if pool is not None:
            pool.shutdown()
    largest_budget, largest_run = done[-1][0], done[-1][1]
    truncated = truncation_view(largest_run, budgets)
    result = {
        "study": study or naming.study_name(validate(load_config(overrides)), budgets), "model": base.model.name, "budgets": budgets,
        "largest_budget": largest_budget, "runs": [str(run_dir) for _, run_dir, _, _ in done],
        "interval_method": (done[0][2].get("variance") or {}).get("method"),
        "rows": [study_row(b, run_dir, summary, infra, truncated[b]) for b, run_dir, summary, infra in done],
    }
    out = Path(base.run.dir) / result["study"]
    write_study(out, result)
    print((out / STUDY_FILES[1]).read_text(encoding="utf-8"))
    print(f"study: {out}/ ({', '.join(STUDY_FILES)})")
    return result


def main(argv: Sequence[str] | None = None, default_runner: str = "local") -> int:
    """The command; returns the exit code (3 when some units are left in infra_error: re-run to retry)."""
    from ecab.core.process_env import configure_process_env
    configure_process_env()   # first: before anything imports Ray, Hugging Face or tokenizers
    budgets, study, overrides = parse_args(sys.argv[1:] if argv is None else argv, default_runner)
    try:
        preflight(overrides)
        result = run_study(budgets, overrides, study)
    except (ConfigError, FormatError, EndpointRefused, RunnerFailed) as exc:
        die(str(exc))
    except KeyboardInterrupt:
        die("interrupted; finished episodes are saved, re-run the same command to resume", code=130)
    left = sum(r["infra_error_units"] for r in result["rows"])
    if left:
        print(f"ecab.study: error: {left} episode(s) ended in infra_error; re-run the same command to retry them",
              file=sys.stderr)
        return EXIT_INFRA_ERRORS
    return 0


if __name__ == "__main__":
    sys.exit(main())

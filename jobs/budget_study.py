"""`ray job submit` entrypoint for a call-budget study as one Ray job: every budget runs against the same
catalog actors (started once), and a table of accuracy vs budget is written at the end.

    ray job submit --address http://<head>:8265 --working-dir . -- \
        python jobs/budget_study.py --budgets 25,50,75,100 model=heuristic benchmark.limit=200

Each budget is a normal run folder (runs/<model>-b<budget>-<source>/, resumable like any run); the study
table goes to runs/<study>/budget_study.json and .md. Locally it starts a local Ray.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ecab.runner.protocol import RunnerStats


def parse_args(argv: list[str]) -> tuple[list[int], str | None, list[str]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budgets", default="25,50,75,100", help="comma-separated call budgets")
    parser.add_argument("--study", default=None, help="study folder name under run.dir (default: "
                                                      "<model>-budget-study)")
    known, overrides = parser.parse_known_args(argv)
    try:
        budgets = [int(b) for b in known.budgets.split(",") if b.strip()]
    except ValueError:
        parser.error(f"--budgets: expected integers like 25,50,100, got {known.budgets!r}")
    if not budgets or min(budgets) < 1:
        parser.error("--budgets: give at least one positive budget")
    if any(o.startswith("budget=") for o in overrides):
        parser.error("set the budgets with --budgets, not budget=")
    return budgets, known.study, overrides


def study_row(budget: int, summary: dict, stats: RunnerStats) -> dict:
    return {"budget": budget, "accuracy": summary.get("overall_accuracy"),
            "rubric_satisfaction": summary.get("overall_rubric_satisfaction"),
            "avg_tool_calls": summary.get("avg_tool_calls"),
            "cap_reached_rate": (summary.get("budget") or {}).get("cap_reached_rate"),
            "episodes": summary.get("total_samples"), "retried_units": stats.retried_units}


def write_study(folder: Path, rows: list[dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "budget_study.json").write_text(json.dumps(rows, indent=2) + "\n")
    lines = ["| budget | accuracy | rubric satisfaction | avg tool calls | reached the cap | episodes |",
             "|---:|---:|---:|---:|---:|---:|"]
    pct = lambda x: "-" if x is None else f"{100 * x:.1f}%"  # noqa: E731
    for r in rows:
        lines.append(f"| {r['budget']} | {pct(r['accuracy'])} | {pct(r['rubric_satisfaction'])} | "
                     f"{r['avg_tool_calls'] or 0:.1f} | {pct(r['cap_reached_rate'])} | {r['episodes']} |")
    (folder / "budget_study.md").write_text("\n".join(lines) + "\n")


def run_study(budgets: list[int], overrides: list[str], study: str | None = None) -> list[dict]:
    from ecab.config import load_config
    from ecab.run import judge_and_reduce, load_tasks, open_catalog, prepare_folder, run_episodes, validate
    from ecab.core.ray_connect import ensure_ray
    from ecab.runner.ray_catalog import CatalogPool

    base = ["runner=ray", *[o for o in overrides if not o.startswith("runner=")]]
    cfg = validate(load_config([*base, f"budget={budgets[0]}"]))
    catalog = open_catalog(cfg)
    tasks = load_tasks(cfg, catalog)
    ensure_ray(cfg.runner.address)
    # the catalog actors every budget's run shares, placed as runner=ray places its own (conf/runner/ray.yaml)
    pool = CatalogPool(Path(catalog.path).resolve(), catalog.meta, cfg.catalog.replicas,
                       num_cpus=cfg.runner.catalog_cpus, max_concurrency=cfg.runner.catalog_max_concurrency)
    rows = []
    try:
        for budget in budgets:
            # One run folder per budget: the default name carries the budget; a given run.name gets it added.
            named = [f"run.name={cfg.run.name}-b{budget}"] if cfg.run.name else []
            run_cfg = validate(load_config([*base, f"budget={budget}", *named]))
            folder = prepare_folder(run_cfg, tasks, catalog)   # locked, like any run folder
            try:
                print(f"budget {budget}: {len(tasks)} tasks x {run_cfg.trials} trial(s) -> {folder.path}")
                stats = run_episodes(run_cfg, tasks, catalog, folder, catalog_pool=pool)
                rows.append(study_row(budget, judge_and_reduce(run_cfg, tasks, catalog, folder), stats))
            finally:
                folder.release()
    finally:
        pool.shutdown()
    out = Path(cfg.run.dir) / (study or f"{cfg.model.name}-budget-study")
    write_study(out, rows)
    print((out / "budget_study.md").read_text())
    return rows


def main(argv: list[str] | None = None) -> None:
    from ecab.env.agent_protocol import EndpointRefused
    from ecab.config import ConfigError, die
    from ecab.core.process_env import configure_process_env
    from ecab.schema import FormatError

    configure_process_env()   # first: before anything imports Ray, Hugging Face or tokenizers
    budgets, study, overrides = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        run_study(budgets, overrides, study)
    except (ConfigError, FormatError, EndpointRefused) as exc:
        die(str(exc))


if __name__ == "__main__":
    main()

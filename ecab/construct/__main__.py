"""`python -m ecab.construct [overrides]`: build a benchmark from the configured catalog.

    python -m ecab.construct construct.n_per_intent=5 construct.intents=[product_search,review_driven]
    python -m ecab.construct construct.out=out/bench construct.workers=1

Writes benchmark.jsonl, rejected.jsonl, rejections.md and construct.json to `construct.out` (default: the
cached default-benchmark folder under `cache_dir/benchmarks/<fingerprint>`), prints the rejection table
and the throughput.

    python -m ecab.construct audit [--baselines] [--no-reviews] [overrides]

prints the validity audit (ecab/construct/validity.py) of the configured task set (any `benchmark=` and
`catalog=`): by intent and overall, the products matching the query / query+persona / all rubrics, the
load-bearing share per source and per rubric type, the share of tasks the query alone singles out;
`--baselines` adds the accuracy of model=random and model=heuristic on the same tasks, run by the normal run
machinery (ecab.run) into a temporary run folder.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from ecab.config import ConfigError, die, load_config


def open_catalog(cfg, progress: bool = True):
    """The configured catalog (the `catalog` group), built into the cache on first use, opened read-only."""
    from ecab.catalog.build import ensure_catalog

    return ensure_catalog(cfg.catalog, Path(str(cfg.cache_dir)), progress=progress)


AUDIT_FLAGS = ("--baselines", "--no-reviews")
BASELINE_MODELS = ("random", "heuristic")


def run_baselines(overrides: list[str], models=BASELINE_MODELS) -> dict[str, dict]:
    """{model: {"overall": accuracy, "by_intent": {intent: accuracy}}} of each model on the configured tasks,
    each run by `ecab.run.main_job` (the normal runner, judge and reduce) into a temporary run folder."""
    import tempfile

    from ecab.run import main_job

    out = {}
    with tempfile.TemporaryDirectory(prefix="ecab-audit-") as tmp:
        for model in models:
            cfg = load_config([*overrides, f"model={model}", f"run.dir={tmp}", f"run.name=audit-{model}",
                               "run.progress=false", "run.resume=false"])
            summary = main_job(cfg)
            out[model] = {"overall": summary.get("overall_accuracy"),
                          "by_intent": {k: g.get("accuracy") for k, g in (summary.get("by_intent") or {}).items()}}
    return out


def audit_main(args: list[str]) -> int:
    """`python -m ecab.construct audit [--baselines] [--no-reviews] [overrides]`."""
    from ecab.construct.validity import audit_tasks

    unknown = [a for a in args if a.startswith("--") and a not in AUDIT_FLAGS]
    if unknown:
        die(f"audit: unknown option {unknown[0]}; options: {', '.join(AUDIT_FLAGS)}")
    overrides = [a for a in args if not a.startswith("--")]
    try:
        cfg = load_config(overrides)
    except ConfigError as exc:
        die(str(exc))
    from ecab.run import load_tasks

    progress = bool(cfg.get("run", {}).get("progress", True))
    tasks = load_tasks(cfg) if cfg.benchmark.source == "file" else None
    catalog = open_catalog(cfg, progress)
    tasks = tasks if tasks is not None else load_tasks(cfg, catalog)
    report = audit_tasks(tasks, catalog, include_reviews="--no-reviews" not in args, progress=progress)
    baselines = run_baselines(overrides) if "--baselines" in args else None
    print(f"\n# Validity audit: {len(tasks)} tasks, catalog {catalog.fingerprint[:12]} ({catalog.count()} products)\n")
    print(report.markdown(baselines))
    print(report.headline())
    t = report.timing()
    print(f"audited in {t['seconds']:.1f} s ({t['checks']} rubric checks, {t['review_checks']} on reviews)")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "audit":
        return audit_main(args[1:])
    from ecab.construct.benchmark_cache import ensure_benchmark
    from ecab.construct.benchmark_folder import REJECTIONS_TABLE, REPORT_FILE, rejection_table
    from ecab.construct.pipeline import construct
    from ecab.construct.result import throughput_line
    from ecab.construct.settings import Settings

    overrides = args
    try:
        cfg = load_config(overrides)
    except ConfigError as exc:
        die(str(exc))
    progress = bool(cfg.get("run", {}).get("progress", True))
    try:   # construct settings first (an LLM verbalizer's model and API key), before any catalog work
        Settings.from_cfg(cfg)
    except (ConfigError, ValueError) as exc:
        die(str(exc))
    catalog = open_catalog(cfg, progress)
    if cfg.construct.get("out"):
        result = construct(cfg, catalog, progress=progress)
        print(rejection_table(result))
        print(throughput_line(result.timing()) + f" -> {result.out_dir}")
        return 0
    path = ensure_benchmark(cfg, catalog, Path(cfg.cache_dir), progress=progress)
    table = path.parent / REJECTIONS_TABLE
    if table.exists():
        print(table.read_text(encoding="utf-8"))
    report = path.parent / REPORT_FILE
    timing = json.loads(report.read_text(encoding="utf-8")).get("timing") if report.exists() else None
    if timing:
        print("built with " + throughput_line(timing))
    print(f"benchmark: {path}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (ValueError, FileNotFoundError) as exc:
        die(str(exc))

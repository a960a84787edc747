"""`python -m ecab.construct [overrides]`: build a benchmark from the configured catalog.

    python -m ecab.construct construct.n_per_intent=5 construct.intents=[product_search,review_driven]
    python -m ecab.construct construct.out=out/bench construct.workers=1

Writes benchmark.jsonl, rejected.jsonl, rejections.md and construct.json to `construct.out` (default: the
cached default-benchmark folder under `cache_dir/benchmarks/<fingerprint>`), prints the rejection table
and the throughput.

    python -m ecab.construct audit [--baselines] [--no-reviews] [--json PATH] [overrides]

prints the validity audit (ecab/construct/validity.py) of the configured task set (any `benchmark=` and
`catalog=`): by intent and overall, the products matching the query / query+persona / all rubrics, the
load-bearing share per source and per rubric type, the share of tasks the query alone singles out; then the
ADVERSARIES' table (ecab/construct/adversary/, issue 27): the blind dual-path floor among the query's matches,
every form cue, the learned attacker (two-fold by task) and, with `--baselines`, the accuracy of
BASELINE_MODELS on the same tasks, each run by the normal run command (`python -m ecab.run`, in a child
process: the run sits in the top layer, above construction) into a temporary run folder;
then a verdict line against issue 27's criteria. `--no-reviews` leaves review_opinion rubrics unjudged (they
count as satisfied); `--json PATH` writes the adversaries' figures, the baselines and the verdict as JSON.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from ecab.config import ConfigError, EcabConfig, die, load_config, parse
from ecab.construct.task_set import load_tasks


def typed_config(overrides: list[str]) -> EcabConfig:
    """The composed and parsed config, or one error line and exit 2."""
    try:
        return parse(load_config(overrides))
    except ConfigError as exc:
        die(str(exc))


def open_catalog(cfg: EcabConfig, progress: bool = True):
    """The configured catalog (the `catalog` group), built into the cache on first use, opened read-only."""
    from ecab.catalog.build import ensure_catalog

    return ensure_catalog(cfg.catalog, Path(str(cfg.cache_dir)), progress=progress)


AUDIT_FLAGS = ("--baselines", "--no-reviews", "--json")
HELP_FLAGS = ("-h", "--help")
# Overrides are Hydra's, composed from conf/ as `python -m ecab.run` composes them; that command's --help lists
# the config groups and the composed defaults.
OVERRIDES_HELP = ("overrides: Hydra key=value pairs of conf/ (conf/config.yaml has every key and its comment; "
                  "python -m ecab.run --help lists the groups and defaults)")


def print_usage(audit: bool = False) -> None:
    """The module's usage (the audit's part alone for `audit --help`), then where the overrides come from."""
    doc = __doc__.strip()
    audit_part = doc[doc.index("    python -m ecab.construct audit"):]
    if audit:
        print("usage: python -m ecab.construct audit [--baselines] [--no-reviews] [--json PATH] [overrides]\n")
        print(audit_part)
    else:
        print("usage: python -m ecab.construct [overrides]\n"
              "       python -m ecab.construct audit [--baselines] [--no-reviews] [--json PATH] [overrides]\n")
        print(doc)
    print("\n" + OVERRIDES_HELP)
# random: the floor of a script; heuristic: reads the profile and asks; query-only: never does (issue 27);
# oracle: knows the target (the harness self-check).
BASELINE_MODELS = ("random", "heuristic", "query-only", "oracle")


def run_baselines(overrides: list[str], models=BASELINE_MODELS) -> dict[str, dict]:
    """{model: {"overall": accuracy, "by_intent": {intent: accuracy}}} of each model on the configured tasks,
    each run by `python -m ecab.run` (the normal runner, judge and reduce; a child process, so that this
    construct-layer command imports nothing of the layers above it) into a temporary run folder. A model
    without its conf/model/<name>.yaml, or whose run fails, gets {"overall": None, "error": why} and the
    others still run. "catalog": the fingerprint of the catalog the run used (the audit's table flags a
    baseline run on another catalog than the audit's, e.g. when catalog code changed in between)."""
    import subprocess
    import tempfile

    from ecab.config import group_options

    out = {}
    known = set(group_options("model"))
    with tempfile.TemporaryDirectory(prefix="ecab-audit-") as tmp:
        for model in models:
            if model not in known:
                out[model] = {"overall": None, "by_intent": {},
                              "error": f"conf/model/{model}.yaml does not exist (yet): not run"}
                print(f"audit: baseline model={model} skipped: conf/model/{model}.yaml does not exist",
                      file=sys.stderr)
                continue
            folder = Path(tmp) / f"audit-{model}"
            cmd = [sys.executable, "-m", "ecab.run", *overrides, f"model={model}", f"run.dir={tmp}",
                   f"run.name=audit-{model}", "run.progress=false", "run.resume=false"]
            done = subprocess.run(cmd, capture_output=True, text=True)
            summary_path = folder / "summary.json"
            # exit status 3: the run ended with units left in infra_error; its summary still counts them
            if done.returncode not in (0, 3) or not summary_path.is_file():
                lines = [line for line in (done.stderr + done.stdout).splitlines() if line.strip()]
                why = lines[-1] if lines else f"exit status {done.returncode}"
                out[model] = {"overall": None, "by_intent": {}, "error": f"failed: {why}"}
                print(f"audit: baseline model={model} failed: {why}", file=sys.stderr)
                continue
            summary = json.loads(summary_path.read_text(encoding="utf-8"))
            manifest = folder / "manifest.json"
            fingerprint = (json.loads(manifest.read_text(encoding="utf-8")).get("catalog_fingerprint")
                           if manifest.is_file() else None)
            out[model] = {"overall": summary.get("overall_accuracy"), "catalog": fingerprint,
                          "by_intent": {k: g.get("accuracy") for k, g in (summary.get("by_intent") or {}).items()}}
    return out


def parse_audit_args(args: list[str]) -> tuple[set[str], str | None, list[str]]:
    """(flags, the --json path or None, Hydra overrides); dies on an unknown option or a --json without path."""
    flags: set[str] = set()
    json_path = None
    overrides: list[str] = []
    rest = list(args)
    while rest:
        a = rest.pop(0)
        if a in HELP_FLAGS:
            print_usage(audit=True)
            sys.exit(0)
        if a == "--json" or a.startswith("--json="):
            json_path = a.split("=", 1)[1] if "=" in a else (rest.pop(0) if rest else None)
            if not json_path or json_path.startswith("--"):
                die("audit: --json needs a path (--json PATH)")
        elif a.startswith("--"):
            if a not in AUDIT_FLAGS:
                die(f"audit: unknown option {a}; options: {', '.join(AUDIT_FLAGS + HELP_FLAGS)}")
            flags.add(a)
        else:
            overrides.append(a)
    return flags, json_path, overrides


def audit_main(args: list[str]) -> int:
    """`python -m ecab.construct audit [--baselines] [--no-reviews] [--json PATH] [overrides]`."""
    from ecab.construct.adversary import attack_record, attack_table, learned_attack
    from ecab.construct.validity import audit_tasks

    flags, json_path, overrides = parse_audit_args(args)
    cfg = typed_config(overrides)
    progress = cfg.run.progress
    tasks = load_tasks(cfg) if cfg.benchmark.source == "file" else None
    catalog = open_catalog(cfg, progress)
    tasks = tasks if tasks is not None else load_tasks(cfg, catalog)
    report = audit_tasks(tasks, catalog, include_reviews="--no-reviews" not in flags, progress=progress,
                         tool_features=True, keep_views=True)
    learned = learned_attack(report.views or [], seed=cfg.seed)
    baselines = run_baselines(overrides) if "--baselines" in flags else None
    generated = cfg.benchmark.source == "generated"
    world = {"benchmark": str(cfg.benchmark.source),
             "path": str(cfg.benchmark.path) if cfg.benchmark.path else None,
             "limit": cfg.benchmark.limit, "catalog": str(cfg.catalog.source),
             "fingerprint": catalog.fingerprint, "products": catalog.count(), "tasks": len(tasks),
             "review_opinion": "left out" if "--no-reviews" in flags else "included", "overrides": overrides}
    name = f"benchmark={world['benchmark']}" + (f" ({world['path']})" if world["path"] else "") + \
        f", catalog={world['catalog']} {catalog.fingerprint[:12]}"
    print(f"\n# Validity audit: {len(tasks)} tasks, catalog {catalog.fingerprint[:12]} ({catalog.count()} products)\n")
    print(report.markdown(baselines))
    print(report.headline())
    summary = report.summary()
    print("\n" + attack_table(summary["overall"].get("adversary"), learned, baselines, world=name,
                              generated=generated, catalog=catalog.fingerprint))
    t = report.timing()
    print(f"audited in {t['seconds']:.1f} s ({t['checks']} rubric checks, {t['review_checks']} on reviews)")
    if json_path:
        record = attack_record(summary["overall"].get("adversary"), learned, baselines, world=world,
                               generated=generated)
        record["by_intent"] = {k: g.get("adversary") for k, g in summary["by_intent"].items()}
        record["headline"] = report.headline()
        Path(json_path).parent.mkdir(parents=True, exist_ok=True)
        Path(json_path).write_text(json.dumps(record, indent=2, sort_keys=True, default=str) + "\n",
                                   encoding="utf-8")
        print(f"adversaries' figures: {json_path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "audit":
        return audit_main(args[1:])
    if any(a in HELP_FLAGS for a in args):   # before Hydra, which reads `--help` as a malformed override
        print_usage()
        return 0
    from ecab.construct.benchmark_cache import ensure_benchmark
    from ecab.construct.benchmark_folder import REJECTIONS_TABLE, REPORT_FILE, rejection_table
    from ecab.construct.pipeline import construct
    from ecab.construct.result import throughput_line
    from ecab.construct.settings import construct_settings

    cfg = typed_config(args)
    progress = cfg.run.progress
    try:   # construct settings first (an LLM verbalizer's model and API key), before any catalog work
        construct_settings(cfg)
    except (ConfigError, ValueError) as exc:
        die(str(exc))
    catalog = open_catalog(cfg, progress)
    if cfg.construct.out:
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

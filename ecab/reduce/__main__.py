"""The reduce stage's command line.

  python -m ecab.reduce runs/<name>                      rebuild summary.json, summary.md and plots/ from disk
  python -m ecab.reduce compare runs/a runs/b [--out D]  the paper's tables (3, 4, 7, 8, 9) + comparison plots
  python -m ecab.reduce import --predictions P [--evaluation E] --benchmark B --out runs/<name>
                                                         an original-harness run as an ecab run folder
  python -m ecab.reduce export runs/<name> --out DIR     an ecab run in the original's two file formats

The first word picks the sub-command; anything else is taken as a run folder (write ./compare for a run
folder that happens to be called "compare").
"""
from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

from ecab.reduce import reduce_run
from ecab.reduce.report import pct
from ecab.runs import RunFolder

COMMANDS = ("compare", "import", "export")


def headline(summary: dict) -> str:
    return (f"accuracy {pct(summary['overall_accuracy'])} | rubric satisfaction "
            f"{pct(summary['overall_rubric_satisfaction'])} | finished {pct(summary['prediction_finished_rate'])}"
            f" (valid {pct(summary['valid_finish_rate'])}) | avg tool calls {summary['avg_tool_calls']} | "
            f"evaluated {summary['evaluated_samples']}/{summary['total_samples']} | runtime errors "
            f"{summary['runtime_error_count']} | cut off at the cap {pct(summary['budget']['cap_reached_rate'])}")


def refresh_report(run_dir: Path) -> None:
    """Rebuild the run's report.html after a command rewrote its summary; a failure is one warning line.
    The report is ecab.view's, a layer above reduce: named here, not imported (docs/architecture.md §1)."""
    importlib.import_module("ecab.view").refresh_report(run_dir)


def run_reduce(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m ecab.reduce", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", type=Path, help="the run folder, e.g. runs/<name>")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG charts")
    args = parser.parse_args(argv)
    summary = reduce_run(args.run_dir, plots=not args.no_plots)
    print(f"wrote {args.run_dir / 'summary.json'}, {args.run_dir / 'summary.md'}"
          + ("" if args.no_plots else f" and {args.run_dir / 'plots'}/"))
    print(headline(summary))
    refresh_report(args.run_dir)
    return 0


def run_compare(argv: list[str]) -> int:
    from ecab.reduce.compare import DEFAULT_OUT, compare_runs
    parser = argparse.ArgumentParser(prog="python -m ecab.reduce compare",
                                     description="The paper's Table 3/4/7/8/9 layouts for many runs.")
    parser.add_argument("run_dirs", type=Path, nargs="+", help="run folders, one table row each")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output folder (default {DEFAULT_OUT})")
    parser.add_argument("--rebuild", action="store_true", help="re-reduce every run first")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG charts")
    args = parser.parse_args(argv)
    result = compare_runs(args.run_dirs, args.out, rebuild=args.rebuild, plots=not args.no_plots)
    print(result["markdown"])
    print(f"wrote {args.out}/compare.md, table*.md, table*.csv" + ("" if args.no_plots else " and plots/"))
    if args.rebuild:            # every run was re-reduced: its report follows its new summary
        for run_dir in args.run_dirs:
            refresh_report(run_dir)
    return 0


def run_import(argv: list[str]) -> int:
    from ecab.reduce.original import import_original
    parser = argparse.ArgumentParser(prog="python -m ecab.reduce import",
                                     description="Import the original harness's predictions/evaluation files.")
    parser.add_argument("--predictions", type=Path, help="predictions_<model>.jsonl (docs/original-harness.md §3.3)")
    parser.add_argument("--evaluation", type=Path,
                        help="<stem>_evaluation_results.jsonl (docs/original-harness.md §4.1)")
    parser.add_argument("--benchmark", type=Path, required=True, help="the benchmark.jsonl they ran on")
    parser.add_argument("--out", type=Path, required=True, help="the new run folder, e.g. runs/<name>")
    parser.add_argument("--budget", type=int, default=100, help="the step limit of that run (default 100)")
    args = parser.parse_args(argv)
    manifest = import_original(args.out, benchmark=args.benchmark, predictions=args.predictions,
                               evaluation=args.evaluation, budget=args.budget)
    print(f"imported {manifest['imported_episodes']} episode(s) into {args.out}"
          + (f"; skipped {len(manifest['skipped_predictions'])} without an ok benchmark task"
             if manifest["skipped_predictions"] else ""))
    summary = RunFolder(args.out).read_summary()
    if summary is not None and args.evaluation:
        print(headline(summary))
    refresh_report(args.out)
    return 0


def run_export(argv: list[str]) -> int:
    from ecab.reduce.original import export_run
    parser = argparse.ArgumentParser(prog="python -m ecab.reduce export",
                                     description="Write an ecab run in the original harness's formats.")
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    for path in export_run(args.run_dir, args.out):
        print(f"wrote {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    handlers = {"compare": run_compare, "import": run_import, "export": run_export}
    handler = handlers.get(argv[0]) if argv else None
    try:
        return handler(argv[1:]) if handler else run_reduce(argv)
    except (ValueError, OSError) as exc:     # FormatError is a ValueError and names the file/line/key
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

"""`python -m ecab.reduce runs/<name>`: rebuild summary.json and summary.md of a run folder."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ecab.reduce import reduce_run
from ecab.reduce.report import pct


def headline(summary: dict) -> str:
    return (f"accuracy {pct(summary['overall_accuracy'])} | rubric satisfaction "
            f"{pct(summary['overall_rubric_satisfaction'])} | finished {pct(summary['prediction_finished_rate'])}"
            f" (valid {pct(summary['valid_finish_rate'])}) | avg tool calls {summary['avg_tool_calls']} | "
            f"evaluated {summary['evaluated_samples']}/{summary['total_samples']} | runtime errors "
            f"{summary['runtime_error_count']} | cap reached {pct(summary['budget']['cap_reached_rate'])}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ecab.reduce", description=__doc__)
    parser.add_argument("run_dir", type=Path, help="the run folder, e.g. runs/<name>")
    args = parser.parse_args(argv)
    try:
        summary = reduce_run(args.run_dir)
    except (ValueError, OSError) as exc:     # FormatError is a ValueError and names the file/line/key
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {args.run_dir / 'summary.json'} and {args.run_dir / 'summary.md'}")
    print(headline(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())

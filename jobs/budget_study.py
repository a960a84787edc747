"""`ray job submit` entrypoint for a call-budget study as one Ray job: `python -m ecab.study` on runner=ray, so
every budget runs against the same catalog actors (started once) and the study table is written at the end.

    ray job submit --address http://<head>:8265 --working-dir . -- \
        python jobs/budget_study.py --budgets 25,50,75,100 model=heuristic benchmark.limit=200

Each budget is a normal run folder (named by ecab.run.run_name, resumable like any run, with its report.html);
the study goes to runs/<study>/budget_study.json, .md and .png (ecab/study.py says what they hold). Without a
cluster it starts a local Ray; `runner=local` (or `python -m ecab.study`) runs it without Ray.
"""
from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from ecab.study import main as study
    return study(sys.argv[1:] if argv is None else argv, default_runner="ray")


if __name__ == "__main__":
    sys.exit(main())

"""See a run: a self-contained HTML report and trajectory viewer (`python -m ecab.view runs/<name> ...`).

payload.py reads a run folder (through ecab.runs and reduce's outputs) into plain JSON: run_page.py the run
page, episodes.py the episode list and pages (timeline.py merges a trajectory's messages and steps,
products.py finds the recommended products), compare.py the compare page. writer.py embeds it with the
page's assets (assets/report.html, .css, .js) into one file; server.py serves it on 127.0.0.1.
Heavy modules are imported when used, so `ecab.run` can import this package for free.
"""
from __future__ import annotations

import sys
from pathlib import Path


def report_after_run(run_dir: str | Path) -> Path | None:
    """Write a finished run's report and print its path (the last line of `python -m ecab.run`). A report
    that cannot be written is a warning, never a failed run: the results are already on disk."""
    from ecab.view.writer import write_report
    try:
        path = write_report([Path(run_dir)])
    except Exception as exc:  # noqa: BLE001 - the run's results stand without their report
        print(f"warning: no report written ({type(exc).__name__}: {exc}); "
              f"python -m ecab.view {run_dir} retries it", file=sys.stderr)
        return None
    print(f"report: {path}")
    return path

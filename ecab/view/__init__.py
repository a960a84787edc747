"""See a run: a self-contained HTML report and trajectory viewer (`python -m ecab.view runs/<name> ...`).

payload.py reads a run folder (through ecab.runs and reduce's outputs) into plain JSON: run_page.py the run
page, episodes.py the episode list and pages (timeline.py merges a trajectory's messages and steps,
products.py finds the recommended products), compare.py the compare page; status.py tells a finished run
from one in progress. writer.py embeds it with the page's assets (assets/report.html, .css, .js) into one
file; index.py lists a folder of runs; server.py serves the report only (live.py re-renders a run's report
as its folder changes). Heavy modules are imported when used, so `ecab.run` can import this package for free.
"""
from __future__ import annotations

import sys
from pathlib import Path


def refresh_report(run_dir: str | Path) -> Path | None:
    """Rewrite a run's report.html after a command changed the run (the run itself, the judge, reduce), and
    print its path. A report that cannot be written is one warning line, never a failed command: the
    command's results are already on disk. Returns the report's path, or None."""
    try:
        from ecab.view.writer import write_report
        path = write_report([Path(run_dir)])
    except Exception as exc:  # noqa: BLE001 - the results stand without their report
        message = " ".join(str(exc).split())
        print(f"warning: report not refreshed ({type(exc).__name__}: {message}); "
              f"python -m ecab.view {run_dir} retries it", file=sys.stderr)
        return None
    print(f"report: {path}")
    return path


def report_after_run(run_dir: str | Path) -> Path | None:
    """Write a finished run's report and print its path (the last line of `python -m ecab.run`)."""
    return refresh_report(run_dir)

"""`python -m ecab.view PATH [PATH ...] [-o OUT] [--serve [--host H] [--port P]]`: write the report.

- One run folder (runs/<name>): runs/<name>/report.html, its run page, episode list and episode pages; a
  run still in progress gets the episodes recorded so far. --serve serves it live: the page follows the
  run folder (new episodes, a re-judge) until Ctrl-C.
- A folder of runs (runs/, or a sweep's folder with sweep.json listing its runs under "runs"):
  <folder>/index.html, a row per run linking to its report (built first when missing or stale).
- Several runs on the same tasks: compare/compare-<a>-vs-<b>.html beside the first (each run's pages plus
  the compare page).
The files are self-contained (no network). --serve serves the report only, never other files of the
folders, on 127.0.0.1 unless --host says otherwise, and prints the URL.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m ecab.view", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dirs", type=Path, nargs="+", help="run folders (runs/<name>) or one folder of runs")
    parser.add_argument("-o", "--out", type=Path, help="where to write the report (default: see above)")
    parser.add_argument("--serve", action="store_true", help="serve the report and print its URL")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address for --serve (default 127.0.0.1, this machine only; 0.0.0.0: every interface)")
    parser.add_argument("--port", type=int, default=0, help="port for --serve (default: a free one)")
    parser.add_argument("--catalog", type=Path,
                        help="the run's built catalog, for the recommended products' records (default: the one "
                             "the run used, when it is still in its cache_dir)")
    parser.add_argument("--no-compress", action="store_true", help="embed the data as plain JSON (larger)")
    return parser.parse_args(argv)


def _index(folder: Path, args: argparse.Namespace):
    """A folder of runs: its index (each run's report built when missing or stale), served when asked."""
    from ecab.view import refresh_report
    from ecab.view.index import write_index
    path, runs = write_index(folder, build=refresh_report)
    print(f"wrote {path} ({len(runs)} runs)")
    if not args.serve:
        return None
    from ecab.view.server import start_index
    return start_index(folder, args.port, args.host, compress=not args.no_compress, catalog_dir=args.catalog)


def _report(args: argparse.Namespace):
    """One run or several: the report file, then (one run) its live server or (several) the file served."""
    from ecab.schema import FormatError
    from ecab.view.writer import write_report
    live = args.serve and len(args.run_dirs) == 1
    try:
        path = write_report(args.run_dirs, args.out, compress=not args.no_compress, catalog_dir=args.catalog)
        print(f"wrote {path} ({path.stat().st_size / 2**20:.1f} MiB)")
    except (FormatError, ValueError) as exc:
        if not (live and args.run_dirs[0].is_dir()):
            raise
        # A run just starting (no manifest or tasks yet): the live page shows it once it can be read.
        print(f"warning: no report file yet ({' '.join(str(exc).split())}); serving it live", file=sys.stderr)
    if not args.serve:
        return None
    from ecab.view.server import start, start_live
    if live:
        return start_live(args.run_dirs[0], args.port, args.host, compress=not args.no_compress,
                          catalog_dir=args.catalog)
    return start(path, args.port, args.host)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from ecab.schema import FormatError
    from ecab.view.index import is_run_folder
    single = args.run_dirs[0]
    try:
        if len(args.run_dirs) == 1 and single.is_dir() and not is_run_folder(single) and args.out is None:
            served = _index(single, args)
        else:
            served = _report(args)
    except (FormatError, ValueError, OSError) as exc:
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    if served is not None:
        from ecab.view.server import serve_forever
        serve_forever(*served)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`python -m ecab.view runs/<name> [runs/<other> ...] [-o PATH] [--serve]`: write the runs' report.

One run: runs/<name>/report.html, its run page, episode list and episode pages. Several runs on the same
tasks: compare/report.html beside the first (each run's pages plus the compare page). The file is
self-contained (no network); --serve also serves it on 127.0.0.1 and prints the URL.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ecab.view", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dirs", type=Path, nargs="+", help="run folders, e.g. runs/<name>")
    parser.add_argument("-o", "--out", type=Path, help="where to write the report (default: see above)")
    parser.add_argument("--serve", action="store_true", help="serve the report on 127.0.0.1 and print its URL")
    parser.add_argument("--port", type=int, default=0, help="port for --serve (default: a free one)")
    parser.add_argument("--catalog", type=Path,
                        help="the run's built catalog, for the recommended products' records (default: the one "
                             "the run used, when it is still in its cache_dir)")
    parser.add_argument("--no-compress", action="store_true", help="embed the data as plain JSON (larger)")
    args = parser.parse_args(argv)
    from ecab.schema import FormatError
    from ecab.view.writer import write_report
    try:
        path = write_report(args.run_dirs, args.out, compress=not args.no_compress, catalog_dir=args.catalog)
    except (FormatError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {path} ({path.stat().st_size / 2**20:.1f} MiB)")
    if args.serve:
        from ecab.view.server import serve_forever
        serve_forever(path, args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())

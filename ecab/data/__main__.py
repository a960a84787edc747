"""`python -m ecab.data fetch benchmark|amazon`: the paper's data, downloaded, checked and laid out.

  python -m ecab.data fetch benchmark            # the released benchmark.jsonl -> benchmark=released
  python -m ecab.data fetch amazon --categories All_Beauty,Electronics,Cell_Phones_and_Accessories,Office_Products

A failure prints one line and exits with status 1; no file under a final name is ever partial
(ecab/data/download.py).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ecab.config import die
from ecab.data import amazon_default_dir, released_samples_default_path


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    from ecab.data import amazon_reviews, released

    parser = argparse.ArgumentParser(prog="python -m ecab.data", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    fetch = commands.add_parser("fetch", help="download one data set").add_subparsers(dest="what", required=True)

    bench = fetch.add_parser("benchmark", help=f"the released benchmark.jsonl ({released.EXPECTED_TASKS} tasks) "
                             f"of {released.REPOSITORY} at commit {released.COMMIT[:7]}")
    bench.add_argument("--out", type=Path, default=released_samples_default_path(),
                       help="where to put it (default: %(default)s, where benchmark=released reads it)")
    bench.add_argument("--base-url", default=None,
                       help=f"serves <base>/<commit>/{released.FILE} (default: ${released.BASE_URL_ENV} or "
                            f"{released.DEFAULT_BASE_URL})")
    bench.add_argument("--sha256", default=None, help="the expected sha256 of the file (checked when given)")
    bench.add_argument("--force", action="store_true", help="download again even if the file is there")
    bench.add_argument("--no-progress", action="store_true")

    amazon = fetch.add_parser("amazon", help=f"Amazon Reviews 2023 files from the Hugging Face Hub "
                              f"({amazon_reviews.REPO_ID}; $HF_ENDPOINT moves it)")
    amazon.add_argument("--categories", default=",".join(amazon_reviews.PAPER_CATEGORIES),
                        help="comma-separated categories (default: the paper's four, %(default)s)")
    amazon.add_argument("--out", type=Path, default=amazon_default_dir(),
                        help="where to lay them out (default: %(default)s, catalog=amazon's default path)")
    amazon.add_argument("--revision", default="main", help="a branch, tag or commit of the dataset")
    amazon.add_argument("--no-progress", action="store_true")
    return parser.parse_args(argv)


def fetch_benchmark(args: argparse.Namespace) -> None:
    from ecab.data import released

    got = released.fetch_released(args.out, base_url=args.base_url, sha256=args.sha256, force=args.force,
                                  progress=not args.no_progress)
    source = f"{released.REPOSITORY}@{released.COMMIT[:7]}"
    verb = "fetched" if got.downloaded else "already fetched (checked again)"
    print(f"{verb}: {got.tasks} tasks of {source} in {got.path}")
    if released.EXPECTED_SHA256 is None and not args.sha256:
        print(f"sha256 {got.sha256} (ecab has none recorded for this file: pass --sha256 {got.sha256} to pin it)")
    else:
        print(f"sha256 {got.sha256} (matches the recorded value)")
    default = got.path.resolve() == released_samples_default_path().resolve()
    print("run it: python -m ecab.run benchmark=released" + ("" if default else f" benchmark.path={got.path}"))


def fetch_amazon(args: argparse.Namespace) -> None:
    from ecab.data import amazon_reviews

    categories = [c.strip() for c in args.categories.split(",") if c.strip()]
    outcomes = amazon_reviews.fetch_amazon(categories, args.out, revision=args.revision,
                                           progress=not args.no_progress)
    fetched = [o for o in outcomes if o.downloaded]
    print(f"{len(fetched)} file(s) fetched, {len(outcomes) - len(fetched)} already there: "
          f"{', '.join(categories)} in {args.out}")
    print(f"catalog=amazon reads {args.out}: python -m ecab.catalog build catalog=amazon catalog.path={args.out}")


def main(argv: list[str] | None = None) -> int:
    from ecab.data.download import FetchError

    args = parse_args(argv)
    try:
        if args.what == "benchmark":
            fetch_benchmark(args)
        else:
            from huggingface_hub.utils import logging as hf_logging
            hf_logging.set_verbosity_error()   # its retry warnings would add lines to our one-line errors
            fetch_amazon(args)
    except FetchError as exc:
        die(str(exc), code=1)
    except KeyboardInterrupt:
        die("interrupted: files not finished were removed; re-run the same command to continue", code=130)
    return 0


if __name__ == "__main__":
    sys.exit(main())

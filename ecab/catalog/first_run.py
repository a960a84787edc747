"""The first-run notice (issue 29 item 3): before building what the cache lacks, one line saying what will be
built, roughly how long it takes and that later runs reuse it, so a first `make run` that spends a minute
before its first episode says why.

The estimates are constant rates measured on 2 cores at load ~1 (`python -m ecab.run` on a clean cache);
they only tell a user whether to wait seconds or minutes.
"""
from __future__ import annotations

import sys
from pathlib import Path

SECONDS_PER_PRODUCT = 1 / 350     # generate, embed the title and write one product (catalog build)
SECONDS_INDEX = 2.0               # the LanceDB indexes after the rows
SECONDS_ENCODER = 5.0             # load the embedding model, export its ONNX query encoder, check it
SECONDS_PER_TASK = 0.03           # construction, workers=2, with the validity audit
SECONDS_CONSTRUCT_START = 1.5     # scan the catalog, start the workers


def approx(seconds: float) -> str:
    """'~15 s' or '~3 min': a rough figure, never more precise than it is."""
    if seconds < 90:
        return f"~{max(1, round(seconds / 5) * 5 if seconds >= 10 else round(seconds))} s"
    return f"~{round(seconds / 60)} min"


def catalog_part(source: str, products: int | None) -> str:
    if products is None:
        return f"the {source} catalog"
    return f"the {source} catalog ({products} products, {approx(products * SECONDS_PER_PRODUCT + SECONDS_INDEX)})"


def encoder_part() -> str:
    return f"the ONNX query encoder ({approx(SECONDS_ENCODER)})"


def benchmark_part(tasks: int) -> str:
    count = f"{tasks} task" + ("" if tasks == 1 else "s")
    return f"the benchmark ({count}, {approx(tasks * SECONDS_PER_TASK + SECONDS_CONSTRUCT_START)})"


def first_run_notice(parts: list[str], cache_dir: str | Path) -> None:
    """Print the one line (nothing when there is nothing to build)."""
    if not parts:
        return
    what = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    print(f"first run: building {what} into {cache_dir}; later runs reuse them", file=sys.stdout, flush=True)

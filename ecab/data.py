"""Where ecab keeps data it downloads rather than builds: today, the released EComAgentBench samples.

The data-fetch command of the paper-scale work writes the released `benchmark.jsonl` to
`released_samples_default_path()`; the tests look for released samples there (after ECAB_RELEASED_SAMPLES and
a `../shared/real/benchmark_sample.jsonl` beside the clone, see tests/conftest.py). Nothing here downloads.
"""
from __future__ import annotations

import os
from pathlib import Path

CACHE_DIR_ENV = "ECAB_CACHE_DIR"


def cache_root() -> Path:
    """ecab's cache folder: $ECAB_CACHE_DIR, else ~/.cache/ecab (the default of `cache_dir` in conf/config.yaml)."""
    return Path(os.environ.get(CACHE_DIR_ENV) or Path.home() / ".cache" / "ecab").expanduser()


def released_samples_default_path() -> Path:
    """Where the released benchmark.jsonl lives once fetched: <cache>/data/released/benchmark.jsonl."""
    return cache_root() / "data" / "released" / "benchmark.jsonl"

"""Data ecab downloads rather than builds: where it lives (here) and how it is fetched (the modules below).

- released.py: the released EComAgentBench `benchmark.jsonl`, pinned to one commit of the original repository,
  fetched over HTTP into `released_samples_default_path()` and checked with ecab's own task reader;
- amazon_reviews.py: the Amazon Reviews 2023 files (Hugging Face Hub, through huggingface_hub) laid out under
  `amazon_default_dir()`, where `catalog=amazon` reads them;
- download.py: what both share: a file appears under its final name only once it is complete and verified;
- __main__.py: `python -m ecab.data fetch benchmark` / `python -m ecab.data fetch amazon --categories ...`.

This module is imported by the stages (run.py, catalog/build.py, tests/conftest.py) for the paths and the
fetch hints only; it imports nothing but the standard library, and the fetch modules import huggingface_hub
lazily, so the stages never load a download client.
"""
from __future__ import annotations

import os
from pathlib import Path

CACHE_DIR_ENV = "ECAB_CACHE_DIR"
FETCH_BENCHMARK = "python -m ecab.data fetch benchmark"
FETCH_AMAZON = "python -m ecab.data fetch amazon"


def cache_root() -> Path:
    """ecab's cache folder: $ECAB_CACHE_DIR, else ~/.cache/ecab (the default of `cache_dir` in conf/config.yaml)."""
    return Path(os.environ.get(CACHE_DIR_ENV) or Path.home() / ".cache" / "ecab").expanduser()


def released_samples_default_path() -> Path:
    """Where the released benchmark.jsonl lives once fetched: <cache>/data/released/benchmark.jsonl."""
    return cache_root() / "data" / "released" / "benchmark.jsonl"


def amazon_default_dir() -> Path:
    """Where the Amazon Reviews 2023 files are laid out once fetched: <cache>/data/amazon-reviews-2023 (the
    default `catalog.path` of conf/catalog/amazon.yaml)."""
    return cache_root() / "data" / "amazon-reviews-2023"


def _same_place(a: Path, b: Path) -> bool:
    return Path(a).expanduser().resolve() == Path(b).expanduser().resolve()


def fetch_benchmark_command(path: Path | str) -> str:
    """The command that puts the released benchmark.jsonl at `path` (with --out when that is not the default)."""
    path = Path(path)
    return FETCH_BENCHMARK if _same_place(path, released_samples_default_path()) else f"{FETCH_BENCHMARK} --out {path}"


def fetch_amazon_command(path: Path | str) -> str:
    """The command that lays the paper's four Amazon categories out at `path` (with --out when not the default)."""
    path = Path(path)
    return FETCH_AMAZON if _same_place(path, amazon_default_dir()) else f"{FETCH_AMAZON} --out {path}"

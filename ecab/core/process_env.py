"""The process environment an ecab entry point sets up first, before anything imports Ray, Hugging Face or
tokenizers (`python -m ecab.run`, the Ray jobs, the benchmarks, the test session).

Each variable is set only when unset, so a value the user exported wins. Importing this module changes
nothing; `configure_process_env()` does.
"""
from __future__ import annotations

import os

PROCESS_ENV_DEFAULTS: dict[str, str] = {
    # Ray sends usage statistics to its developers unless told not to, and a benchmark run sends nothing out.
    # Ray reads this when a cluster starts (ray.init), and the processes it starts inherit it.
    "RAY_USAGE_STATS_ENABLED": "0",
    # The embedding model ships in a package: a missing file must fail, never start a download.
    # huggingface_hub reads this once, when it is first imported.
    "HF_HUB_OFFLINE": "1",
    # The tokenizers' thread pool does not survive a fork (construction's worker processes, Ray's): used
    # before one, it warns in every child and turns itself off there. Off from the start.
    "TOKENIZERS_PARALLELISM": "false",
    # LanceDB's Rust logger warns at the default level about index shapes that are normal for small catalogs
    # ("KMeans: more than 10% of clusters are empty" on the 5000-product default); errors still print, and
    # LANCEDB_LOG=warn brings the rest back.
    "LANCEDB_LOG": "error",
}


def configure_process_env() -> None:
    """Set every variable of PROCESS_ENV_DEFAULTS that is not already set. Idempotent."""
    for name, value in PROCESS_ENV_DEFAULTS.items():
        os.environ.setdefault(name, value)

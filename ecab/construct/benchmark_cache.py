"""The cached generated benchmark: built once per (catalog, construct config, code) (docs/architecture.md §2).

`ensure_benchmark` returns `<cache_dir>/benchmarks/<fingerprint[:16]>/benchmark.jsonl`, building the folder
(benchmark_folder.py) with pipeline.construct the first time; `benchmark=generated` runs and
`python -m ecab.construct` use it.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any, Callable

from ecab.catalog.base import CatalogReader
from ecab.construct.benchmark_folder import BENCHMARK_FILE, write_fingerprint
from ecab.construct.pipeline import construct
from ecab.construct.settings import construct_settings

CODE_FILES = ("construct", "judge/rules.py", "core/rubric_checks.py", "core/rubric_types.py", "core/text.py",
              "fields.py", "schema", "core/seeds.py")


def code_version() -> str:
    """A digest of the source that decides a generated task (construction, judge rules, formats)."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for rel in CODE_FILES:
        path = root / rel
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for f in files:
            if f.exists():
                h.update(str(f.relative_to(root)).encode())
                h.update(f.read_bytes())
    return h.hexdigest()


def benchmark_fingerprint(cfg: Any, catalog: CatalogReader) -> str:
    settings = construct_settings(cfg)
    payload = {"catalog": catalog.fingerprint, "construct": settings.fingerprint_fields(), "code": code_version()}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def ensure_benchmark(cfg: Any, catalog: CatalogReader, cache_dir: str | Path, *,
                     opener: Callable[[], CatalogReader] | None = None, progress: bool = True) -> Path:
    """The generated benchmark for (catalog, construct config, code), built once and cached.

    Returns `<cache_dir>/benchmarks/<fingerprint[:16]>/benchmark.jsonl`. Concurrent callers wait on a file
    lock; the folder appears atomically (built in a temp folder, then renamed).
    """
    root = Path(cache_dir) / "benchmarks"
    root.mkdir(parents=True, exist_ok=True)
    fp = benchmark_fingerprint(cfg, catalog)[:16]
    final = root / fp
    if (final / BENCHMARK_FILE).exists():
        return final / BENCHMARK_FILE
    with open(root / f"{fp}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (final / BENCHMARK_FILE).exists():
            tmp = root / f"{fp}.tmp-{os.getpid()}"
            shutil.rmtree(tmp, ignore_errors=True)
            result = construct(cfg, catalog, opener=opener, out_dir=tmp, progress=progress)
            write_fingerprint(tmp, {"fingerprint": benchmark_fingerprint(cfg, catalog), "catalog": catalog.fingerprint,
                                    "construct": construct_settings(cfg).fingerprint_fields(),
                                    "audit": result.audit.headline() if result.audit is not None else None})
            os.replace(tmp, final)
    return final / BENCHMARK_FILE

"""The cached generated benchmark: built once per (catalog, construct config, code) (docs/architecture.md §2).

`ensure_benchmark` returns `<cache_dir>/benchmarks/<fingerprint[:16]>/benchmark.jsonl`, building the folder
(benchmark_folder.py) with pipeline.construct the first time; `benchmark=generated` runs and
`python -m ecab.construct` use it. A run with benchmark.limit builds only the tasks per intent its selection
(task_selection.py) reaches, into the folder of that smaller n_per_intent (its fingerprint says what it holds),
unless the full benchmark is cached; the tasks it selects are the ones the full benchmark would give.
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
from ecab.catalog.first_run import benchmark_part, first_run_notice
from ecab.catalog.writer import sweep_killed_builds
from ecab.construct.benchmark_folder import BENCHMARK_FILE, write_fingerprint
from ecab.construct.pipeline import construct
from ecab.construct.settings import construct_settings
from ecab.construct.task_selection import needs_more, per_intent_needed
from ecab.core.build_temp import make_temp_dir
from ecab.core.worker_start import refuse_in_starting_worker
from ecab.schema import read_tasks

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


def benchmark_fingerprint(cfg: Any, catalog: CatalogReader, n_per_intent: int | None = None) -> str:
    """`n_per_intent`: a smaller build's (limited_build); its fingerprint is that of construct.n_per_intent=k,
    which is what it holds, so a smaller build is never taken for the full one (nor the other way round)."""
    payload = {"catalog": catalog.fingerprint, "construct": construct_fields(cfg, n_per_intent), "code": code_version()}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def construct_fields(cfg: Any, n_per_intent: int | None = None) -> dict[str, Any]:
    """The construct settings a build depends on, with a smaller build's `n_per_intent`."""
    fields = construct_settings(cfg).fingerprint_fields()
    if n_per_intent is not None:
        fields["n_per_intent"] = n_per_intent
    return fields


def ensure_benchmark(cfg: Any, catalog: CatalogReader, cache_dir: str | Path, *,
                     opener: Callable[[], CatalogReader] | None = None, progress: bool = True) -> Path:
    """The generated benchmark for (catalog, construct config, code), built once and cached.

    Returns `<cache_dir>/benchmarks/<fingerprint[:16]>/benchmark.jsonl`. Concurrent callers wait on a file
    lock; the folder appears atomically (built in a temp folder, then renamed). A run limited to N tasks
    (benchmark.limit, no ids, no shuffle) builds only the tasks per intent its stratified selection reaches,
    unless the full benchmark is cached already (limited_build).
    """
    refuse_in_starting_worker("building or opening the benchmark")   # else: waits on its parent's lock
    n = construct_settings(cfg).n_per_intent
    k = limited_per_intent(cfg)
    if k is None or k >= n or _cached(cfg, catalog, cache_dir, None) is not None:
        return _ensure(cfg, catalog, cache_dir, None, opener=opener, progress=progress)
    return limited_build(cfg, catalog, cache_dir, k, n, opener=opener, progress=progress)


def _selection(cfg: Any, key: str) -> Any:
    """benchmark.<key> of a parsed config or a mapping (None when the config has no benchmark section)."""
    bench = cfg.get("benchmark") if hasattr(cfg, "get") else getattr(cfg, "benchmark", None)
    if bench is None:
        return None
    return bench.get(key) if hasattr(bench, "get") else getattr(bench, key, None)


def limited_per_intent(cfg: Any) -> int | None:
    """Tasks per intent a limited run's selection reaches (task_selection.per_intent_needed), or None when the
    run needs the whole benchmark: no limit, benchmark.ids (any task may be named) or benchmark.shuffle (the
    order is drawn over every task)."""
    limit = _selection(cfg, "limit")
    if limit is None or _selection(cfg, "ids") is not None or _selection(cfg, "shuffle"):
        return None
    return per_intent_needed(int(limit), len(construct_settings(cfg).intents))


def limited_build(cfg: Any, catalog: CatalogReader, cache_dir: str | Path, k: int, n: int, *,
                  opener: Callable[[], CatalogReader] | None = None, progress: bool = True) -> Path:
    """The smallest build of k, 2k, 4k, ... (at most n) tasks per intent whose stratified selection of
    benchmark.limit tasks is the full benchmark's: the first k tasks of an intent do not depend on how many are
    built (schedule.py), so a bigger build is needed only when some intents ran out (task_selection.needs_more)."""
    limit = int(_selection(cfg, "limit"))
    while True:
        path = _ensure(cfg, catalog, cache_dir, k if k < n else None, opener=opener, progress=progress)
        tasks = [t for t in read_tasks(path) if t.is_ok]
        if k >= n or not needs_more(tasks, limit, k):
            return path
        k = min(n, 2 * k)


def _cached(cfg: Any, catalog: CatalogReader, cache_dir: str | Path, n_per_intent: int | None) -> Path | None:
    path = Path(cache_dir) / "benchmarks" / benchmark_fingerprint(cfg, catalog, n_per_intent)[:16] / BENCHMARK_FILE
    return path if path.exists() else None


def _ensure(cfg: Any, catalog: CatalogReader, cache_dir: str | Path, n_per_intent: int | None, *,
            opener: Callable[[], CatalogReader] | None, progress: bool) -> Path:
    """Build (once) the benchmark of construct.n_per_intent, or of `n_per_intent` per intent when given."""
    root = Path(cache_dir) / "benchmarks"
    root.mkdir(parents=True, exist_ok=True)
    fingerprint = benchmark_fingerprint(cfg, catalog, n_per_intent)
    fp = fingerprint[:16]
    final = root / fp
    if (final / BENCHMARK_FILE).exists():
        return final / BENCHMARK_FILE
    settings = construct_settings(cfg)
    per_intent = n_per_intent or settings.n_per_intent
    first_run_notice([benchmark_part(per_intent * len(settings.intents))], Path(cache_dir))
    with open(root / f"{fp}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (final / BENCHMARK_FILE).exists():
            sweep_killed_builds(root)
            tmp = make_temp_dir(root, fp)   # names this process: a later sweep knows whether it died
            try:
                result = construct(cfg, catalog, opener=opener, out_dir=tmp, progress=progress,
                                   n_per_intent=n_per_intent)
                write_fingerprint(tmp, {"fingerprint": fingerprint, "catalog": catalog.fingerprint,
                                        "construct": construct_fields(cfg, n_per_intent),
                                        "audit": result.audit.headline() if result.audit is not None else None})
                os.replace(tmp, final)
            except BaseException:   # an error or Ctrl-C: nothing half built stays (a kill: the next sweep)
                shutil.rmtree(tmp, ignore_errors=True)
                raise
    return final / BENCHMARK_FILE

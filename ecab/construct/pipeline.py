"""Construction: candidates -> stages -> verbalize -> validate -> benchmark folder (docs/original-harness.md §5).

`construct(cfg, catalog)` builds `n_per_intent` tasks for each configured intent:

1. One pass over the catalog collects, per intent, the candidate ids that pass the intent's sampling
   filters, and the catalog's knowledge, sent to each worker once (catalog_scan.py).
2. Each candidate runs the stages up to `max_attempts` times: extract -> voucher / opinions ->
   partition -> rubrics -> verbalize -> validate, each attempt with its own seeded generator
   (candidate.py), so a task never depends on which process built it or when.
3. `workers=N` is the parent plus N-1 spawned workers (workers.py). The parent builds candidates itself from
   the start; the workers start up (imports only) during the scan, then load the scan's products from a
   pickle the parent wrote once (catalog_snapshot.py: no LanceDB import, no second scan) and join in, so
   they only add throughput. The accepted tasks of an intent are the first `n` valid candidates in pool
   order (schedule.py), so the output is the same whatever the scheduling and whatever the worker count.
4. The validity audit of the accepted tasks (validity.audit_construction), then the output folder
   (benchmark_folder.py: benchmark.jsonl, rejected.jsonl, rejections.md, construct.json, audit.jsonl).

Task ids are `ecab_<intent>_<NNNN>` where NNNN is the 1-based position of the candidate in its intent's
pool: ids are stable, and rejected candidates keep theirs. The cached default benchmark: benchmark_cache.py.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from ecab.catalog.base import CatalogReader
from ecab.construct.benchmark_folder import write_outputs
from ecab.construct.candidate import CandidateContext, build_candidate
from ecab.construct.catalog_scan import scan_catalog
from ecab.construct.catalog_snapshot import SnapshotCatalog
from ecab.construct.result import ConstructResult, collect
from ecab.construct.schedule import IntentProgress, schedule
from ecab.construct.settings import construct_settings, serve_verbalizer
from ecab.construct.validity import audit_construction
from ecab.construct.workers import WORKER_DEPTH, TorchThreads, WorkerPool


def construct(cfg: Any, catalog: CatalogReader, *, opener: Callable[[], CatalogReader] | None = None,
              out_dir: str | Path | None = None, progress: bool = True, parent_builds: bool = True,
              n_per_intent: int | None = None) -> ConstructResult:
    """Build the benchmark; writes the output folder when `out_dir` (or construct.out) is set.
    `n_per_intent` overrides construct.n_per_intent (a limited run's smaller build: benchmark_cache.py); the
    first k tasks of an intent are the same whatever n is built (schedule.py).

    `construct.workers=N` means the parent plus N-1 spawned workers. `opener` is a picklable zero-argument
    callable that opens the same catalog read-only; workers use it for reviews and, for catalogs too large
    to snapshot in memory, for everything (default: the catalog's `reopener()` or `type.open(path)`).
    """
    settings = serve_verbalizer(construct_settings(cfg))   # construct.llm.model=sim: its simulator starts here
    if n_per_intent is not None:
        settings = dataclasses.replace(settings, n_per_intent=n_per_intent)
    started = time.perf_counter()
    with contextlib.ExitStack() as stack:
        pool = stack.enter_context(WorkerPool(settings.workers - 1, settings)) if settings.workers > 1 else None
        scan = scan_catalog(catalog, settings)      # spawned workers start up meanwhile
        local_catalog: CatalogReader = catalog
        if scan.products is not None:
            local_catalog = SnapshotCatalog(scan.products, catalog.fingerprint, base=catalog)
        if pool is not None:
            opener = opener or _reopener(catalog, required=scan.products is None)
            snapshot_path = None
            if isinstance(local_catalog, SnapshotCatalog):
                tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ecab-construct-")))
                snapshot_path = str(local_catalog.dump(tmp / "products.pkl"))
            pool.attach(snapshot_path, opener, scan.knowledge)
        progress_by_intent = {i: IntentProgress(i, scan.candidates[i], settings.n_per_intent)
                              for i in settings.intents}
        bar = progress_bar(settings.n_per_intent * len(settings.intents), progress)
        ctx = CandidateContext(local_catalog, scan.knowledge, settings)

        threads = TorchThreads()
        stack.callback(threads.restore)

        def run_local(intent: str, index: int, pid: str) -> dict:
            if pool is not None:
                threads.limit()
            return build_candidate(ctx, intent, index, pid)

        # Per intent in flight: one in the parent plus a full queue in each worker.
        window = 1 + WORKER_DEPTH * (settings.workers - 1)
        built = schedule(progress_by_intent, run_local, pool, window=window, bar=bar,
                         parent_builds=parent_builds)
        if bar is not None:
            bar.close()
    result = collect(progress_by_intent, time.perf_counter() - started)
    result.workers = settings.workers
    result.built_by = dict(built)
    result.audit = audit_construction(result.tasks, local_catalog, cfg)
    target = out_dir if out_dir is not None else _cfg_out(cfg)
    if target is not None:
        write_outputs(result, Path(target))
    return result


def _cfg_out(cfg: Any) -> str | None:
    group = cfg.get("construct", cfg) if hasattr(cfg, "get") else cfg
    return group.get("out", None) if hasattr(group, "get") else None


def _reopener(catalog: CatalogReader, *, required: bool = True) -> Callable[[], CatalogReader] | None:
    """A picklable opener for the same catalog: its own `reopener()`, or `type.open(path, mode=...)`
    for a Catalog-like class (each worker then opens the store itself, read-only). None when there
    is none and it is not `required` (workers reading the in-memory snapshot need it only for reviews)."""
    reopen = getattr(catalog, "reopener", None)
    if reopen is not None:
        return reopen()
    opener = getattr(type(catalog), "open", None)
    path = getattr(catalog, "path", None)
    if opener is not None and path is not None:
        kwargs = {"mode": catalog.mode} if hasattr(catalog, "mode") else {}
        return functools.partial(opener, str(path), **kwargs)
    if not required:
        return None
    raise ValueError(f"construct.workers > 1 needs a way to reopen the catalog in each worker: pass "
                     f"opener=... or give {type(catalog).__name__} a reopener() method")


def progress_bar(total: int, enabled: bool):
    try:
        from tqdm import tqdm
    except ImportError:   # tqdm is a dependency; this only guards odd environments
        return None
    return tqdm(total=total, desc="construct", unit="task", disable=not enabled, file=sys.stderr)

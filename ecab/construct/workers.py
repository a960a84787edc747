"""Construction's worker processes (docs/decisions.md#construction-workers).

`construct.workers=N` is the parent plus N-1 spawned workers (`WorkerPool`). A worker starts up (imports only)
while the parent scans the catalog, then receives its catalog (`WorkerPool.attach`: the parent's in-memory
snapshot, or an opener for the store itself) and builds candidates with candidate.build_candidate, the
same function the parent runs. Every process keeps one compute thread, so two processes on two cores do
not fight over nested BLAS/torch thread pools.
"""
from __future__ import annotations

import multiprocessing
import os
import sys
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Callable

from ecab.catalog.base import CatalogReader
from ecab.catalog.knowledge import CatalogKnowledge
from ecab.construct.candidate import CandidateContext, build_candidate
from ecab.construct.catalog_snapshot import SnapshotCatalog
from ecab.construct.settings import Settings

WORKER_DEPTH = 8   # candidates queued per worker (speculative extras never change the output)


_CONTEXT: CandidateContext | None = None   # this worker process's, set by _init_worker


def _init_worker(settings: Settings) -> None:
    """Process-pool initializer, run while the parent scans the catalog. Unpickling it imported this module
    and with it every stage (candidate.py), so the import cost is paid up front. The catalog comes later
    (`_attach_catalog`), from the snapshot the parent writes after its scan."""
    global _CONTEXT
    _limit_threads()
    _CONTEXT = CandidateContext(None, None, settings)


def _attach_catalog(snapshot_path: str | None, opener: Callable[[], CatalogReader] | None,
                    knowledge: CatalogKnowledge | None = None) -> int:
    """Give the worker its catalog: the parent's in-memory snapshot (LanceDB opened only if reviews are
    needed), or for large catalogs the store itself, read-only (handles never cross a process boundary).
    The review checker's sentence model is not preloaded: it loads lazily where a paraphrase is scored."""
    assert _CONTEXT is not None, "worker not initialised"
    _CONTEXT.knowledge = knowledge
    if snapshot_path is not None:
        _CONTEXT.catalog = SnapshotCatalog.load(snapshot_path, opener=opener)
    else:
        if opener is None:
            raise RuntimeError("construct worker has neither a catalog snapshot nor an opener")
        _CONTEXT.catalog = opener()
    return os.getpid()


def _limit_threads() -> None:
    """One compute thread per worker: the processes already use the cores, and nested BLAS/torch thread
    pools would only fight over them. Environment only: importing torch here would cost a second."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "TOKENIZERS_PARALLELISM"):
        os.environ.setdefault(var, "false" if var == "TOKENIZERS_PARALLELISM" else "1")
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)


class TorchThreads:
    """Keeps torch (once something has imported it for the review model) at one thread in the parent
    while workers run on the other core, and restores the setting afterwards: two processes' torch
    thread pools spin-waiting on 2 cores slow both down."""

    def __init__(self) -> None:
        self.saved: int | None = None

    def limit(self) -> None:
        torch = sys.modules.get("torch")
        if torch is not None and self.saved is None:
            self.saved = torch.get_num_threads()
            torch.set_num_threads(1)

    def restore(self) -> None:
        torch = sys.modules.get("torch")
        if torch is not None and self.saved is not None:
            torch.set_num_threads(self.saved)
            self.saved = None


def _run_in_worker(intent: str, index: int, product_id: str) -> dict:
    assert _CONTEXT is not None and _CONTEXT.catalog is not None, "worker not initialised"
    return build_candidate(_CONTEXT, intent, index, product_id)


def _worker_pid() -> int:
    return os.getpid()


class WorkerPool:
    """`n` spawned single-process executors; a worker takes candidates once its catalog is attached.

    spawn, not fork: a forked child would inherit the parent's LanceDB and torch thread state.
    """

    def __init__(self, n: int, settings: Settings):
        ctx = multiprocessing.get_context("spawn")
        self.executors = [ProcessPoolExecutor(max_workers=1, mp_context=ctx, initializer=_init_worker,
                                              initargs=(settings,)) for _ in range(n)]
        # Submitting starts the process now, so its interpreter start-up and imports overlap the scan.
        self.ready: list[Future] = [ex.submit(_worker_pid) for ex in self.executors]
        self.busy = [0] * n
        self.gone: set[int] = set()      # workers whose process exited while starting: never given work

    def attach(self, snapshot_path: str | None, opener: Callable[[], CatalogReader] | None,
               knowledge: CatalogKnowledge) -> None:
        """Queue the catalog hand-over; a worker counts as ready once it has run."""
        self.ready = [self._submit_or_failed(ex, _attach_catalog, snapshot_path, opener, knowledge)
                      for ex in self.executors]

    @staticmethod
    def _submit_or_failed(executor: ProcessPoolExecutor, fn: Callable, *args) -> Future:
        """The submitted call, or (the worker's process already gone) a future holding that failure."""
        try:
            return executor.submit(fn, *args)
        except BrokenProcessPool as exc:
            failed: Future = Future()
            failed.set_exception(exc)
            return failed

    def _lost(self, k: int) -> None:
        """Worker k's process exited while starting (e.g. a user's script that every spawned process re-runs:
        core/worker_start.py, whose line says why). Workers only add throughput, so the build goes on
        without it."""
        if k not in self.gone:
            self.gone.add(k)
            print(f"warning: construction worker {k + 1} exited while starting; building without it",
                  file=sys.stderr, flush=True)

    def starting(self) -> list[Future]:
        return [f for f in self.ready if not f.done()]

    def free_worker(self) -> int | None:
        """The least busy ready worker with room in its queue (one whose process died starting is left out;
        any other start-up failure raises here)."""
        free = []
        for k, ready in enumerate(self.ready):
            if k in self.gone or not ready.done():
                continue
            try:
                ready.result()
            except BrokenProcessPool:
                self._lost(k)
                continue
            if self.busy[k] < WORKER_DEPTH:
                free.append(k)
        return min(free, key=lambda k: (self.busy[k], k)) if free else None

    def submit(self, k: int, intent: str, index: int, product_id: str) -> Future:
        self.busy[k] += 1
        return self.executors[k].submit(_run_in_worker, intent, index, product_id)

    def __enter__(self) -> "WorkerPool":
        return self

    def __exit__(self, *exc) -> None:
        for ex in self.executors:
            ex.shutdown(wait=True, cancel_futures=True)

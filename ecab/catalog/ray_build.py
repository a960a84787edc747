"""catalog.builder=ray: the catalog writer.build_catalog makes, built by a Ray Data pipeline
(docs/decisions.md#ray-data-builds).

    read   one read task, on the driver's node (where the source files are), streams the configured source
           through writer.prepare_batches (de-duplication and seq numbers remember the whole stream, so they
           are sequential) and turns each batch into its Arrow rows (writer.product_rows, review_rows)
    embed  map_batches over an actor pool (TitleEmbedder: `catalog.embed_workers` actors; one GPU each with
           catalog.embed_device=cuda on a cluster that has GPUs, the CPU otherwise): the titles of one source
           batch per encode call, as the local builder calls it
    write  the driver appends each batch, in source order, to its shards' LanceDB tables, then records a
           checkpoint (build-state.json)
    index  ShardWriter.finish: compaction, full-text, BTree and vector indexes, as writer.py

One Dataset row is one whole source batch (its tables as Arrow IPC bytes): Ray Data merges and splits blocks
by rows, and an encode call over other texts than the local builder's changes the last bits of the floats,
so keeping each batch whole is what makes both builders write the same rows.

Resumable: the build works in `.<fingerprint>.ray-build/` beside the catalog (one build at a time, by a lock
file). A restarted build reopens the shards the checkpoint describes, deletes any row an append committed
after it (seq past the checkpoint's), and the reader skips the batches already written. The catalog is renamed
into place only when complete, as the local builder does.
"""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import pyarrow as pa

from ecab.catalog.base import CatalogBatch
from ecab.catalog.embedding_model import DIM, MODEL_NAME
from ecab.catalog.layout import META_FILE, PRODUCTS, REVIEWS, shard_dir
from ecab.catalog.writer import (ShardWriter, add_routed, catalog_meta, prepare_batches, product_rows,
                                 review_rows, with_vectors)

STATE_FILE = "build-state.json"
DEVICES = ("cpu", "cuda")


@dataclass(frozen=True)
class RayBuildOptions:
    """How a Ray build runs; none of it changes the catalog (it is not in the fingerprint)."""

    address: str | None = None   # None: a local Ray of its own (or the connected one); "auto", host:port: a cluster
    embed_workers: int = 2       # embedding actors
    embed_cpus: float = 1.0      # CPUs reserved per actor (and torch threads: Ray sets OMP_NUM_THREADS from it)
    embed_device: str = "cpu"    # cuda: one GPU per actor when the cluster has GPUs, else the CPU


# ---------------------------------------------------------------------------------------------------------
# Batches as Dataset rows
# ---------------------------------------------------------------------------------------------------------

def _to_ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as stream:
        stream.write_table(table)
    return sink.getvalue().to_pybytes()


def _from_ipc(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()


def _batch_row(number: int, products: pa.Table, reviews: pa.Table, stats: dict[str, int]) -> pa.Table:
    """One source batch as one Dataset row; `stats` are the skip counts of the stream so far."""
    return pa.table({
        "batch": pa.array([number], pa.int64()),
        PRODUCTS: pa.array([_to_ipc(products)], pa.large_binary()),
        REVIEWS: pa.array([_to_ipc(reviews)], pa.large_binary()),
        "stats": pa.array([json.dumps(stats, sort_keys=True)], pa.string()),
    })


def read_source_rows(make_batches: Callable[[], Iterable[CatalogBatch]], skip: int) -> Iterator[pa.Table]:
    """The read task's body: every prepared batch from number `skip` on, as a Dataset row. The batches before
    `skip` are still read (de-duplication and numbering need them) but neither converted nor embedded."""
    stats: dict[str, int] = {}
    for number, batch in enumerate(prepare_batches(make_batches(), stats)):
        if number < skip:
            continue
        yield _batch_row(number, product_rows(batch.products, batch.product_seqs, batch.review_counts),
                         review_rows(batch.reviews, batch.review_seqs), stats)


def _source_datasource(make_batches: Callable[[], Iterable[CatalogBatch]], skip: int):
    from ray.data.block import BlockMetadata
    from ray.data.datasource import Datasource, ReadTask

    class SourceBatches(Datasource):
        """The configured source as one streaming read task (a source is one ordered stream)."""

        def estimate_inmemory_data_size(self) -> int | None:
            return None

        def get_read_tasks(self, parallelism: int, per_task_row_limit: int | None = None,
                           data_context: Any = None) -> list[ReadTask]:
            metadata = BlockMetadata(num_rows=None, size_bytes=None, input_files=None, exec_stats=None)
            return [ReadTask(lambda: read_source_rows(make_batches, skip), metadata)]

    return SourceBatches()


class TitleEmbedder:
    """The embedding actor: adds the title vectors to each source batch's products."""

    def __init__(self, device: str, cache_dir: str | None):
        if cache_dir:
            os.environ.setdefault("ECAB_CACHE_DIR", cache_dir)
        os.environ["ECAB_QUERY_ENCODER"] = "torch"   # bulk encoding only: no ONNX query encoder to load
        from ecab.catalog.embed import Embedder

        self.embedder = Embedder(device=device)

    def __call__(self, rows: pa.Table) -> pa.Table:
        embedded = []
        for data in rows.column(PRODUCTS).to_pylist():
            products = _from_ipc(data)
            vectors = self.embedder.encode(products.column("title").to_pylist())
            embedded.append(_to_ipc(with_vectors(products, vectors, DIM)))
        return rows.set_column(rows.schema.get_field_index(PRODUCTS), PRODUCTS,
                               pa.array(embedded, pa.large_binary()))


# ---------------------------------------------------------------------------------------------------------
# Checkpoints
# ---------------------------------------------------------------------------------------------------------

@dataclass
class BuildState:
    """What the shards of a build directory hold: the first `batches` source batches, nothing else."""

    fingerprint: str
    shards: int
    batches: int = 0
    stats: dict | None = None
    shard_counts: list | None = None
    seq_ends: dict | None = None
    elapsed_s: float = 0.0   # wall time of the runs so far, each up to its last checkpoint
    runs: int = 0            # runs that wrote a checkpoint (a resumed build is 2 or more)

    @classmethod
    def load(cls, work: Path, fingerprint: str, shards: int) -> "BuildState | None":
        try:
            state = cls(**json.loads((work / STATE_FILE).read_text(encoding="utf-8")))
        except (FileNotFoundError, json.JSONDecodeError, TypeError):
            return None
        return state if (state.fingerprint, state.shards) == (fingerprint, shards) else None

    def save(self, work: Path) -> None:
        """Atomically: a reader finds the previous checkpoint or this one, never half of one."""
        tmp = work / f"{STATE_FILE}.tmp"
        tmp.write_text(json.dumps(asdict(self), sort_keys=True) + "\n", encoding="utf-8")
        os.replace(tmp, work / STATE_FILE)


@contextmanager
def _build_lock(out_dir: Path) -> Iterator[None]:
    """One Ray build of a catalog at a time (a second waits, then finds the catalog built)."""
    with open(out_dir.parent / f".{out_dir.name}.ray-build.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _open_shards(work: Path, fingerprint: str, shards: int) -> tuple[BuildState, list[ShardWriter]]:
    """The build directory's checkpoint and shards, or a fresh directory when there is no usable one."""
    state = BuildState.load(work, fingerprint, shards)
    if state is None or state.batches == 0:
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        state = BuildState(fingerprint, shards, stats={"duplicate_products": 0, "orphan_reviews": 0},
                           shard_counts=[{PRODUCTS: 0, REVIEWS: 0} for _ in range(shards)],
                           seq_ends={PRODUCTS: 0, REVIEWS: 0})
        return state, [ShardWriter(shard_dir(work, i), DIM) for i in range(shards)]
    writers = [ShardWriter.resume(shard_dir(work, i), DIM, state.shard_counts[i], state.seq_ends)
               for i in range(shards)]
    return state, writers


def _advance(state: BuildState, writers: list[ShardWriter], row: dict, products: pa.Table,
             reviews: pa.Table) -> None:
    state.batches = int(row["batch"]) + 1
    state.stats = json.loads(row["stats"])
    state.shard_counts = [{PRODUCTS: w.n_products, REVIEWS: w.n_reviews} for w in writers]
    if products.num_rows:
        state.seq_ends[PRODUCTS] = int(products.column("seq")[-1].as_py()) + 1
    if reviews.num_rows:
        state.seq_ends[REVIEWS] = int(reviews.column("seq")[-1].as_py()) + 1


# ---------------------------------------------------------------------------------------------------------
# Build
# ---------------------------------------------------------------------------------------------------------

def _embedding_resources(options: RayBuildOptions) -> tuple[str, float]:
    """(device, GPUs per actor): cuda only where the cluster has GPUs."""
    import ray

    if options.embed_device == "cuda" and ray.cluster_resources().get("GPU", 0) > 0:
        return "cuda", 1.0
    return "cpu", 0.0


def _embedded_rows(make_batches: Callable[[], Iterable[CatalogBatch]], skip: int,
                   options: RayBuildOptions) -> Iterator[dict]:
    """The pipeline's output rows, in source order."""
    import ray
    from ray.data import DataContext

    context = DataContext.get_current()
    saved = (context.execution_options.preserve_order, context.enable_progress_bars, context.target_max_block_size)
    context.execution_options.preserve_order = True   # the driver writes batches in source order
    context.enable_progress_bars = False               # ecab's own bar counts products
    # Every row (one source batch, megabytes) its own block: Ray Data would otherwise pack the reader's rows
    # into blocks of up to 128 MiB, and hand a whole catalog's batches to a single embedding actor.
    context.target_max_block_size = 1
    try:
        device, gpus = _embedding_resources(options)
        dataset = ray.data.read_datasource(
            _source_datasource(make_batches, skip), override_num_blocks=1,
            # No CPU reserved: the embedding actors hold the CPUs, and the reader must never wait for them.
            # On the driver's node, where the source files are.
            num_cpus=0, label_selector={"ray.io/node-id": ray.get_runtime_context().get_node_id()})
        dataset = dataset.map_batches(
            TitleEmbedder, batch_size=1, batch_format="pyarrow",
            compute=ray.data.ActorPoolStrategy(size=options.embed_workers), num_cpus=options.embed_cpus,
            num_gpus=gpus, fn_constructor_kwargs={"device": device, "cache_dir": os.environ.get("ECAB_CACHE_DIR")})
        for rows in dataset.iter_batches(batch_size=1, batch_format="pyarrow", prefetch_batches=1):
            yield rows.to_pylist()[0]
    finally:
        (context.execution_options.preserve_order, context.enable_progress_bars,
         context.target_max_block_size) = saved


def build_catalog_on_ray(make_batches: Callable[[], Iterable[CatalogBatch]], out_dir: str | os.PathLike, *,
                         shards: int, fingerprint: str, options: RayBuildOptions, progress: bool = True,
                         total_products: int | None = None, source: dict[str, Any] | None = None) -> Path:
    """Build the catalog of `make_batches()` (a picklable callable: it runs in the read task) at `out_dir`
    on Ray, resuming an interrupted build of the same fingerprint; returns `out_dir`."""
    from tqdm import tqdm

    from ecab.core.ray_connect import ensure_ray

    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    work = out_dir.parent / f".{out_dir.name}.ray-build"
    with _build_lock(out_dir):
        if (out_dir / META_FILE).exists():
            return out_dir   # built by another process while this one waited
        # No address: a Ray of this process's own ("local"), never whichever cluster was started last on
        # this machine (what ray.init() without an address joins); RAY_ADDRESS (ray job submit) still wins.
        started_ray = ensure_ray(options.address or "local")
        started = time.time()
        try:
            state, writers = _open_shards(work, fingerprint, shards)
            resumed, earlier_s = state.batches, state.elapsed_s
            state.runs += 1
            written = sum(c[PRODUCTS] for c in state.shard_counts)
            bar = tqdm(total=total_products, initial=written, unit="product", desc="build catalog (ray)",
                       disable=not progress)
            write_s = 0.0   # the driver's share: appends and checkpoints (what a faster pool would wait for)
            try:
                for row in _embedded_rows(make_batches, state.batches, options):
                    began = time.perf_counter()
                    products, reviews = _from_ipc(row[PRODUCTS]), _from_ipc(row[REVIEWS])
                    add_routed(writers, products, reviews)
                    _advance(state, writers, row, products, reviews)
                    state.elapsed_s = round(earlier_s + time.time() - started, 2)
                    state.save(work)   # after the data: a checkpoint never promises rows not written
                    write_s += time.perf_counter() - began
                    bar.update(products.num_rows)
            finally:
                bar.close()
            began = time.perf_counter()
            versions = [w.finish() for w in writers]
            index_s = time.perf_counter() - began
            meta = catalog_meta(fingerprint, writers, versions, dict(state.stats), MODEL_NAME, DIM, started, source)
            # A build resumed over several runs took all of them: build_seconds counts each earlier run up to
            # its last checkpoint (the work after it was redone) and this run whole.
            this_run_s = meta["build_seconds"]
            meta["build_seconds"] = round(earlier_s + this_run_s, 2)
            meta["builder"] = {"name": "ray", "embed_workers": options.embed_workers,
                               "embed_device": _embedding_resources(options)[0], "resumed_at_batch": resumed,
                               "runs": state.runs, "this_run_s": this_run_s,
                               "write_s": round(write_s, 2), "index_s": round(index_s, 2)}
            (work / STATE_FILE).unlink()
            (work / META_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
            os.rename(work, out_dir)   # atomic: the catalog appears complete or not at all
        finally:
            if started_ray:
                import ray

                ray.shutdown()
    return out_dir

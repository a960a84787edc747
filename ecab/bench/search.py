"""`python -m ecab.bench.search`: catalog search latency and throughput, LanceDB vs the original's SQLite.

A benchmark, not a test. For each catalog size it builds (or reuses, cached by fingerprint) a synthetic
LanceDB catalog, builds an SQLite FTS5 title index over the same products (the original's engine:
`fts5(title)`, unicode61, AND of quoted tokens, bm25; docs/original-harness.md §1.2, §1.4), and runs the same shopper
queries through every engine. Queries are an entity phrase of a catalog product plus one of its attribute values
("black wireless charger"); `hit@20` is the share of queries whose source product is in the top 20.

    python -m ecab.bench.search [--sizes 10000,100000] [--queries 200] [--warmup 50] [--threads 8]
                                [--tasks default|FILE]
                                [overrides...]

Timings are cold: query texts are distinct, and the catalog's search-page cache and the embedder's query cache
are cleared before each measurement, so every timed query pays for its embedding and its LanceDB queries. The
index is warm, as in a replica that is serving: before each engine is timed it runs `--warmup` other queries
(drawn with another seed, none of them timed), so the first engine timed on a freshly opened catalog does not
pay alone for reading the index pages in.

`--tasks default` adds a task-recall table: the generated benchmark of the *configured* catalog (the default
5k synthetic one; tasks are only meaningful on the catalog they were built on), one query per task (entity
phrase + one stated attribute value), target in the top 20 per engine, hybrid vs the SQLite baseline.
Each size's table and the task-recall table say whether hybrid finds at least as many as its better leg
(`hybrid >= max(fts, vector)`; docs/decisions.md#search-fusion).
Targets (this 2-core machine): at 100k products, hybrid p50 <= 15 ms and >= 100 hybrid queries/s (either
column); at 1M, hybrid p50 <= 20 ms and >= 80 hybrid queries/s with 8 clients. Each size also reports the
memory of one catalog replica: a fresh process that opens the catalog and serves the hybrid queries with
`--threads` clients (its resident memory after opening, and its peak).
"""
from __future__ import annotations

import argparse
import json
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from ecab.catalog.facade import Catalog
from ecab.catalog.search import original_phrases

LANCE_MODES = ("hybrid", "fts", "vector", "original")
QUERY_ATTRIBUTES = ("Color", "Material", "Connector Type", "Form Factor", "Item Form", "Scent", "Screen Size",
                    "Compatible Phone Models", "Hair Type", "Skin Type", "Ink Color", "Style", "Brand")


@dataclass(frozen=True)
class Target:
    size: int              # applies to catalogs of at least this many products (the largest such target)
    p50_ms: float
    qps: float
    with_clients: bool     # q/s counted with --threads clients only (else the better of 1 client and N)


TARGETS = (Target(100_000, 15.0, 100.0, with_clients=False), Target(1_000_000, 20.0, 80.0, with_clients=True))


@dataclass
class Query:
    text: str
    product_id: str


@dataclass
class Row:
    engine: str
    p50_ms: float
    p95_ms: float
    qps_1: float
    qps_n: float
    hit_at_20: float
    mean_total: float


# --------------------------------------------------------------------------------------------- queries

def make_queries(catalog: Catalog, n: int, seed: int = 0) -> list[Query]:
    """Shopper phrases from random catalog products: entity phrase + one attribute value."""
    return make_query_sets(catalog, {seed: n})[seed]


def make_query_sets(catalog: Catalog, sizes: dict[int, int]) -> dict[int, list[Query]]:
    """seed -> `make_queries(catalog, n, seed)` for each (seed, n) of `sizes`, in ONE pass over the catalog
    (at 1M products each pass reads every product)."""
    rngs = {seed: random.Random(f"bench-search-{seed}") for seed in sizes}
    count = catalog.count()
    wanted = {seed: set(rngs[seed].sample(range(count), min(n, count))) for seed, n in sizes.items()}
    # Keep only the sampled products while streaming: a 100k catalog does not fit comfortably as objects.
    picked: dict[int, list] = {seed: [] for seed in sizes}
    for i, product in enumerate(p for batch in catalog.iter_products(4096) for p in batch):
        for seed, indices in wanted.items():
            if i in indices:
                picked[seed].append(product)
    return {seed: _phrases(picked[seed], rngs[seed]) for seed in sizes}


def _phrases(picked: list, rng: random.Random) -> list[Query]:
    """One distinct query text per product, in a shuffled order (a repeated text would hit the query cache)."""
    from ecab.fields import lookup_detail

    try:
        from ecab.catalog.synthetic import product_type_of
    except ImportError:  # pragma: no cover - synthetic is part of ecab
        product_type_of = None
    rng.shuffle(picked)
    queries, seen = [], set()
    for product in picked:
        kind = product_type_of(product) if product_type_of else None
        entity = kind.entity if kind else " ".join(product.title.split()[-3:])
        values = [v for key in QUERY_ATTRIBUTES if isinstance(v := lookup_detail(product.details, key), str)
                  and 0 < len(v) <= 30]
        attribute = rng.choice(values) if values else ""
        text = f"{attribute} {entity}" if rng.random() < 0.5 else f"{entity} {attribute}"
        text = " ".join(text.lower().split())
        if text not in seen:
            seen.add(text)
            queries.append(Query(text, product.product_id))
    return queries


def timed_and_warmup_queries(catalog: Catalog, n: int, n_warmup: int) -> tuple[list[Query], list[str]]:
    """The `n` timed queries (seed 0) and `n_warmup` warm-up texts drawn like them (seed 1), none of them a
    timed text; one pass over the catalog."""
    sets = make_query_sets(catalog, {0: n, 1: n_warmup + n})
    timed = {q.text for q in sets[0]}
    return sets[0], [q.text for q in sets[1] if q.text not in timed][:n_warmup]


# ---------------------------------------------------------------------------------------------- sqlite

def build_sqlite(catalog: Catalog, path: Path) -> float:
    """The original's title index over the catalog's products; returns the build time in seconds."""
    started = time.perf_counter()
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE products (product_id TEXT PRIMARY KEY, title TEXT NOT NULL DEFAULT '')")
    for batch in catalog.iter_products(4096):
        conn.executemany("INSERT OR IGNORE INTO products VALUES (?, ?)", [(p.product_id, p.title) for p in batch])
    conn.execute("CREATE VIRTUAL TABLE products_fts USING fts5(title, content='products')")
    conn.execute("INSERT INTO products_fts(products_fts) VALUES ('rebuild')")
    conn.execute("INSERT INTO products_fts(products_fts) VALUES ('optimize')")
    conn.commit()
    conn.close()
    return time.perf_counter() - started


class SqliteSearch:
    """docs/original-harness.md §1.4's ProductDB.search: one connection per thread, read-only."""

    SQL = ("SELECT p.product_id FROM products_fts f JOIN products p ON p.rowid = f.rowid "
           "WHERE products_fts MATCH ? ORDER BY bm25(products_fts) LIMIT ?")
    COUNT = "SELECT count(*) FROM products_fts WHERE products_fts MATCH ?"

    def __init__(self, path: Path):
        import threading

        self.path = path
        self._local = threading.local()

    def _conn(self) -> sqlite3.Connection:
        if not hasattr(self._local, "conn"):
            self._local.conn = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True,
                                               check_same_thread=False)
        return self._local.conn

    def search(self, query: str, limit: int = 20) -> tuple[list[str], int]:
        phrases = original_phrases(query)
        if not phrases:
            return [], 0
        match = " ".join(f'"{p}"' for p in phrases)
        conn = self._conn()
        ids = [r[0] for r in conn.execute(self.SQL, (match, limit))]
        # The true total (ecab reports it; the original did not, so this is extra work for SQLite too).
        total = conn.execute(self.COUNT, (match,)).fetchone()[0]
        return ids, total


# ------------------------------------------------------------------------------------------- measuring

def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def measure(engine: str, run, queries: list[Query], threads: int, clear_cache=None,
            warmup: list[str] = ()) -> Row:
    """Sequential latencies, then throughput with `threads` workers (caches cleared before each), after
    running the `warmup` texts untimed: the index pages are read in, the timed texts are still cold."""
    for text in warmup:
        run(text)
    if clear_cache:
        clear_cache()
    latencies, hits, totals = [], 0, []
    started = time.perf_counter()
    for q in queries:
        t0 = time.perf_counter()
        ids, total = run(q.text)
        latencies.append((time.perf_counter() - t0) * 1000)
        hits += q.product_id in ids
        totals.append(total)
    qps_1 = len(queries) / (time.perf_counter() - started)
    if clear_cache:
        clear_cache()
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(lambda q: run(q.text), queries))
    qps_n = len(queries) / (time.perf_counter() - started)
    return Row(engine, statistics.median(latencies), _percentile(latencies, 0.95), qps_1, qps_n,
               hits / max(len(queries), 1), statistics.fmean(totals) if totals else 0.0)


def lance_runner(catalog: Catalog, mode: str):
    def run(text: str) -> tuple[list[str], int]:
        page = catalog.search(text, limit=20, mode=mode)
        return [h.product_id for h in page.hits], page.total
    return run


def ann_recall(catalog: Catalog, queries: list[Query], k: int = 20, sample: int = 50) -> float | None:
    """recall@k of the catalog's vector search (ANN index) against an exact scan of the same shards."""
    import numpy as np

    shards = [client.shard for client in catalog.shards]   # opened in this process: Catalog.open
    if not any(s.vector_indexed for s in shards):
        return None
    found = []
    for q in queries[:sample]:
        vector = np.asarray(shards[0].embedder.encode_query(q.text), dtype=np.float32)
        ann = {h.product_id for h in catalog.search(q.text, limit=k, mode="vector").hits}
        exact = []
        for shard in shards:
            table = shard.products.search(vector, vector_column_name="vector").distance_type("cosine") \
                .bypass_vector_index().select(["product_id", "_distance"]).limit(k).to_arrow()
            exact += zip(table["_distance"].to_pylist(), table["product_id"].to_pylist())
        truth = {pid for _, pid in sorted(exact)[:k]}
        found.append(len(ann & truth) / max(1, len(truth)))
    return sum(found) / len(found) if found else None


# ----------------------------------------------------------------------------------------------- report

def _human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else path.stat().st_size


def bench_size(cfg, size: int, n_queries: int, threads: int, n_warmup: int = 50) -> None:
    import dataclasses

    from ecab.catalog.build import catalog_dir, ensure_catalog
    from ecab.config import CatalogConfig

    base = {f.name: getattr(cfg.catalog, f.name) for f in dataclasses.fields(CatalogConfig)}
    catalog_cfg = CatalogConfig(**{**base, "source": "synthetic", "products": size})
    cached = (catalog_dir(catalog_cfg, cfg.cache_dir) / "meta.json").exists()
    started = time.perf_counter()
    catalog = ensure_catalog(catalog_cfg, Path(cfg.cache_dir), progress=True)
    lance_build = catalog.meta["build_seconds"] if cached else time.perf_counter() - started
    queries, warm = timed_and_warmup_queries(catalog, n_queries, n_warmup)
    clear = catalog.clear_caches   # cold: no cached page or query vector
    rows = [measure(f"lance {mode}", lance_runner(catalog, mode), queries, threads, clear, warm)
            for mode in LANCE_MODES]

    with tempfile.TemporaryDirectory(prefix="ecab-bench-sqlite-") as tmp:
        db_path = Path(tmp) / "product.db"
        sqlite_build = build_sqlite(catalog, db_path)
        sqlite_bytes = _dir_bytes(db_path)
        rows.append(measure("sqlite fts5 (original)", SqliteSearch(db_path).search, queries, threads, warmup=warm))

    print(f"\n== {size:,} products ({catalog.meta['counts']['reviews']:,} reviews), {len(queries)} queries "
          f"(after {len(warm)} untimed warm-up queries per engine), {catalog.meta['shards']} shard(s); "
          f"e.g. {queries[0].text!r}")
    print(f"lance  build {lance_build:8.1f} s{' (cached; time of the original build)' if cached else ''}, "
          f"disk {_human_bytes(catalog.disk_bytes())} (products + reviews + indexes)")
    print(f"sqlite build {sqlite_build:8.1f} s, disk {_human_bytes(sqlite_bytes)} (titles + FTS5 only)")
    print(f"{'engine':<24} {'p50 ms':>8} {'p95 ms':>8} {'q/s x1':>8} {f'q/s x{threads}':>8} "
          f"{'hit@20':>7} {'mean total':>11}")
    for r in rows:
        print(f"{r.engine:<24} {r.p50_ms:>8.2f} {r.p95_ms:>8.2f} {r.qps_1:>8.1f} {r.qps_n:>8.1f} "
              f"{r.hit_at_20:>7.2f} {r.mean_total:>11.1f}")
    by_engine = {r.engine: round(r.hit_at_20 * len(queries)) for r in rows}
    print(fusion_verdict(by_engine["lance hybrid"], by_engine["lance fts"], by_engine["lance vector"],
                         f"of {len(queries)} queries' products in the top 20"))
    recall = ann_recall(catalog, queries)
    print("vector index: " + ("none (flat exact scan)" if recall is None else
                              f"IVF_FLAT, recall@20 vs exact scan {recall:.3f} ({min(50, len(queries))} queries)"))
    opened_mb, peak_mb = replica_memory(catalog.path, [q.text for q in queries], threads)
    print(f"one replica (a fresh process: open, then {len(queries)} hybrid queries x {threads} clients): "
          f"{opened_mb:,.0f} MB resident after opening, peak {peak_mb:,.0f} MB")
    verdict = target_verdict(size, threads, rows[0])
    if verdict:
        print(verdict)


def target_verdict(size: int, threads: int, hybrid: Row) -> str | None:
    """The line for the largest target at or below `size`; None below every target."""
    target = max((t for t in TARGETS if size >= t.size), key=lambda t: t.size, default=None)
    if target is None:
        return None
    qps, column = ((hybrid.qps_n, f"{threads} clients") if target.with_clients
                   else (max(hybrid.qps_1, hybrid.qps_n), "the better of 1 client and " + str(threads)))
    return (f"target at {target.size:,}: hybrid p50 <= {target.p50_ms:.0f} ms: "
            f"{'MET' if hybrid.p50_ms <= target.p50_ms else 'NOT MET'} ({hybrid.p50_ms:.2f} ms); "
            f"hybrid >= {target.qps:.0f} q/s with {column}: {'MET' if qps >= target.qps else 'NOT MET'} "
            f"({qps:.1f} q/s)")


# One catalog replica, alone in a fresh interpreter: its memory is then what a catalog actor needs.
REPLICA_PROBE = """
import json, resource, sys
from concurrent.futures import ThreadPoolExecutor
from ecab.catalog.facade import Catalog
from ecab.core.machine import resident_mb
path, threads = sys.argv[1], int(sys.argv[2])
texts = json.load(sys.stdin)
catalog = Catalog.open(path)
opened = resident_mb()
with ThreadPoolExecutor(threads) as pool:
    list(pool.map(lambda text: catalog.search(text, limit=20, mode="hybrid"), texts))
print(json.dumps([opened, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024]))
"""


def replica_memory(path, texts: list[str], threads: int) -> tuple[float, float]:
    """(MB resident after opening the catalog at `path`, peak MB while serving `texts`) of a fresh process."""
    done = subprocess.run([sys.executable, "-c", REPLICA_PROBE, str(path), str(threads)], input=json.dumps(texts),
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"the replica memory probe failed: {done.stderr.strip().splitlines()[-1:]}")
    opened, peak = json.loads(done.stdout.strip().splitlines()[-1])
    return opened, peak


def fusion_verdict(hybrid: int, fts: int, vector: int, unit: str) -> str:
    """Whether hybrid search finds at least what its better leg alone finds (docs/decisions.md#search-fusion)."""
    best = max(fts, vector)
    return (f"hybrid >= max(fts, vector): {'YES' if hybrid >= best else 'NO'} "
            f"({hybrid} vs fts {fts}, vector {vector} {unit})")


# ------------------------------------------------------------------------------------------ task recall

def task_queries(tasks) -> tuple[list[Query], int]:
    """One query per task: its entity phrase plus ONE attribute value, and the number of tasks skipped.

    The entity phrase is the entity_match rubric's `canonical_entity` (else its expected_value); the
    attribute is the expected_value of the first attribute_match rubric with info_source "query" that is
    not implicit (implicit rubrics are never said in the query, so a shopper could not type them).
    """
    queries, skipped = [], 0
    for task in tasks:
        entity = next((r for r in task.rubrics if r.type == "entity_match"), None)
        implicit = set(task.implicit_rubric_ids)
        attribute = next((r for r in task.rubrics if r.type == "attribute_match" and r.info_source == "query"
                          and r.id not in implicit), None)
        target = task.target_product.product_id
        if entity is None or attribute is None or not target:
            skipped += 1
            continue
        phrase = entity.extras.get("canonical_entity") or entity.expected_value
        value = attribute.expected_value
        value = value[0] if isinstance(value, list) and value else value
        text = " ".join(f"{phrase} {value}".split())
        queries.append(Query(text, target))
    return queries, skipped


def load_bench_tasks(cfg, spec: str, catalog: Catalog) -> tuple[list, str]:
    """`--tasks default`: the generated benchmark of `catalog` (built once, cached); else a jsonl path."""
    from ecab.schema import read_tasks

    if spec == "default":
        from ecab.construct.benchmark_cache import ensure_benchmark

        path = ensure_benchmark(cfg, catalog, Path(cfg.cache_dir))
    else:
        path = Path(spec)
        if not path.exists():
            raise FileNotFoundError(f"--tasks {spec}: no such file")
    return [t for t in read_tasks(path) if t.is_ok], str(path)


def recall_on_tasks(cfg, spec: str) -> None:
    """How often each engine puts the task's target in its top 20, on the configured catalog.

    The tasks must be built on the catalog searched here: `default` builds the generated benchmark on
    the configured catalog (the default 5k synthetic one unless `catalog.*` is overridden); a given
    jsonl must come with the matching `catalog=...` overrides (e.g. catalog=targets catalog.path=<it>).
    """
    from ecab.catalog.build import ensure_catalog

    catalog = ensure_catalog(cfg.catalog, Path(cfg.cache_dir), progress=True)
    tasks, path = load_bench_tasks(cfg, spec, catalog)
    queries, skipped = task_queries(tasks)
    present = {p.product_id for p in catalog.get_products([q.product_id for q in queries])}
    missing = sum(q.product_id not in present for q in queries)
    queries = [q for q in queries if q.product_id in present]
    if not queries:
        print(f"\n--tasks {spec}: no task has both rubrics and a target in this catalog "
              f"({missing} targets missing: were the tasks built on catalog {catalog.fingerprint[:12]}?)")
        return
    with tempfile.TemporaryDirectory(prefix="ecab-bench-sqlite-") as tmp:
        db_path = Path(tmp) / "product.db"
        build_sqlite(catalog, db_path)
        engines = [(f"lance {mode}", lance_runner(catalog, mode)) for mode in LANCE_MODES]
        engines.append(("sqlite fts5 (original)", SqliteSearch(db_path).search))
        found = {name: sum(q.product_id in run(q.text)[0] for q in queries) for name, run in engines}
    print(f"\n== target in top 20, {len(queries)} tasks of {path}\n   catalog {catalog.meta['counts']['products']:,} "
          f"products ({catalog.fingerprint[:12]}); query = entity phrase + one query attribute value, "
          f"e.g. {queries[0].text!r}" + (f"; {skipped} tasks without both rubrics skipped" if skipped else "")
          + (f"; {missing} targets not in the catalog skipped" if missing else ""))
    print(f"{'engine':<24} {'found':>7} {'top-20 rate':>12}")
    for name, hits in found.items():
        print(f"{name:<24} {hits:>7} {hits / len(queries):>12.3f}")
    hybrid, sqlite = found["lance hybrid"], found["sqlite fts5 (original)"]
    print(f"hybrid finds more targets than the SQLite title-AND baseline: "
          f"{'YES' if hybrid > sqlite else 'NO'} ({hybrid} vs {sqlite})")
    print(fusion_verdict(hybrid, found["lance fts"], found["lance vector"], f"of {len(queries)} targets"))


def main(argv: list[str] | None = None) -> None:
    from ecab.config import ConfigError, die, load_config, parse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated catalog sizes")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=50,
                        help="untimed queries (not among the timed ones) run before each engine: a warm index")
    parser.add_argument("--threads", type=int, default=8,
                        help="concurrent clients for the throughput column (episodes search concurrently)")
    parser.add_argument("--tasks", default=None,
                        help="'default' (the generated benchmark of the configured catalog) or a benchmark.jsonl "
                             "built on the configured catalog: target-in-top-20 per engine")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. catalog.shards=2")
    args = parser.parse_args(argv)
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
        cfg = parse(load_config(args.overrides))
    except ValueError as exc:
        die(f"--sizes: {exc}" if not isinstance(exc, ConfigError) else str(exc))
    for size in sizes:
        bench_size(cfg, size, args.queries, args.threads, args.warmup)
    if args.tasks:
        recall_on_tasks(cfg, args.tasks)
    else:
        print("\nno --tasks given (--tasks default or a benchmark.jsonl): task-target recall not measured")


if __name__ == "__main__":
    main()

"""`python -m ecab.bench.build`: building one synthetic catalog with the local builder and on Ray Data, side by side.

A benchmark, not a test. Each build runs in a fresh process (no warm model, no shared cache) into its own
temporary cache: catalog.builder=local, then catalog.builder=ray with 1 and 2 embedding actors (one CPU each)
on a local Ray the process starts first (its start-up is printed apart, not in the build time). Printed per
build: wall seconds of the build (the model load included; interpreter start excluded), products/s, and the
peak memory of every process of the build (the process and all it starts: Ray's GCS, raylet, workers), as the
sum of their proportional set sizes (PSS, /proc/<pid>/smaps_rollup, sampled every 0.5 s: shared pages such as
Ray's object store counted once, not once per process). Each Ray build's tables are compared with the local
build's, row for row (docs/decisions.md#ray-data-builds).

    python -m ecab.bench.build [--products 20000] [--workers 1,2] [--shards 1]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = """
import json, sys, time
from ecab.core.process_env import configure_process_env
configure_process_env()
builder, workers, cache, catalog = sys.argv[1], int(sys.argv[2]), sys.argv[3], json.loads(sys.argv[4])
ray_start_s = 0.0
if builder == "ray":
    from ecab.core.ray_connect import ensure_ray
    started = time.perf_counter()
    ensure_ray("local", num_cpus=max(2, workers))
    ray_start_s = time.perf_counter() - started
from ecab.catalog.build import ensure_catalog
started = time.perf_counter()
catalog = ensure_catalog({**catalog, "builder": builder, "embed_workers": workers}, cache, progress=False)
print(json.dumps({"build_s": time.perf_counter() - started, "ray_start_s": ray_start_s, "path": str(catalog.path),
                  "count": catalog.count()}))
"""


def _children(pid: int) -> list[int]:
    """`pid` and every process under it."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        parents.setdefault(ppid, []).append(int(entry))
    tree, todo = [], [pid]
    while todo:
        current = todo.pop()
        tree.append(current)
        todo.extend(parents.get(current, []))
    return tree


def _pss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def run_build(builder: str, workers: int, catalog: dict, cache: Path) -> dict:
    """One build in a fresh process; its timing, and the peak PSS of its process tree."""
    load = os.getloadavg()[0]
    # Both builders embed in bulk only: no ONNX query encoder is loaded (or exported into the fresh cache).
    env = {**os.environ, "ECAB_QUERY_ENCODER": "torch"}
    child = subprocess.Popen([sys.executable, "-c", CHILD, builder, str(workers), str(cache), json.dumps(catalog)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    peak = 0
    while child.poll() is None:
        peak = max(peak, sum(_pss_bytes(pid) for pid in _children(child.pid)))
        time.sleep(0.5)
    out, err = child.communicate()
    if child.returncode != 0:
        raise SystemExit(f"build failed ({builder}, {workers} workers):\n{err[-3000:]}")
    result = json.loads(out.strip().splitlines()[-1])
    return {**result, "peak_pss_mb": peak / 2**20, "load": load}


def _tables(path: Path):
    import lancedb

    from ecab.catalog.layout import PRODUCTS, REVIEWS, read_meta, shard_dir

    for i in range(read_meta(path)["shards"]):
        db = lancedb.connect(str(shard_dir(path, i)))
        for name in (PRODUCTS, REVIEWS):
            yield (i, name), db.open_table(name).to_arrow().sort_by("seq")


def compare_rows(expected: Path, got: Path) -> str:
    """"identical", or what differs (with the largest title-vector difference when only floats do)."""
    import numpy as np

    worst = 0.0
    for (key, want), (_, have) in zip(_tables(expected), _tables(got)):
        if want.equals(have):
            continue
        others = [c for c in want.column_names if c != "vector"]
        if want.num_rows != have.num_rows or not want.select(others).equals(have.select(others)):
            return f"rows differ in shard {key[0]} {key[1]}"
        a = np.stack(want.column("vector").to_numpy(zero_copy_only=False))
        b = np.stack(have.column("vector").to_numpy(zero_copy_only=False))
        worst = max(worst, float(np.abs(a - b).max()))
    return "identical" if worst == 0 else f"vectors differ by up to {worst:.2g}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--products", type=int, default=20000, help="synthetic products to build")
    parser.add_argument("--workers", default="1,2", help="comma-separated embedding actor counts for the Ray builds")
    parser.add_argument("--shards", type=int, default=1, help="catalog.shards")
    parser.add_argument("--json", action="store_true", help="print the results as JSON too")
    args = parser.parse_args(argv)
    catalog = {"source": "synthetic", "products": args.products, "seed": 0, "shards": args.shards,
               "batch_size": 1000, "embed_cpus": 1}
    cases = [("local", 1)] + [("ray", int(w)) for w in args.workers.split(",")]
    base = Path(os.environ.get("ECAB_CACHE_DIR", tempfile.gettempdir())).expanduser() / "bench"
    base.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="build-", dir=base))
    rows = []
    try:
        for builder, workers in cases:
            label = "local (one process)" if builder == "local" else f"ray, {workers} embedding actor(s)"
            print(f"building {args.products} products: {label} ...", flush=True)
            result = run_build(builder, workers, catalog, scratch / f"{builder}-{workers}")
            result.update(builder=builder, workers=workers, label=label,
                          products_per_s=result["count"] / result["build_s"])
            if builder == "ray":
                result["rows"] = compare_rows(Path(rows[0]["path"]), Path(result["path"]))
            rows.append(result)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"\ncatalog: synthetic, {args.products} products, {args.shards} shard(s), batch_size 1000; "
          f"{os.cpu_count()} CPUs")
    print(f"{'builder':<30} {'build s':>8} {'products/s':>11} {'peak PSS MB':>12} {'Ray start s':>12} "
          f"{'load':>5}  rows vs local")
    for r in rows:
        ray_start = f"{r['ray_start_s']:.1f}" if r["builder"] == "ray" else "-"
        print(f"{r['label']:<30} {r['build_s']:>8.1f} {r['products_per_s']:>11.1f} {r['peak_pss_mb']:>12.0f} "
              f"{ray_start:>12} {r['load']:>5.1f}  {r.get('rows', '-')}")
    if args.json:
        print(json.dumps([{k: v for k, v in r.items() if k != "path"} for r in rows], indent=2))


if __name__ == "__main__":
    main()

"""`python -m ecab.bench.construct`: construction throughput, sequential vs parallel, side by side.

A benchmark, not a test. Each measurement is a fresh `python -m ecab.construct` process (so no run
inherits another's warm caches or loaded models) building the same config into a temp folder; the
figure is the build's own timing from its construct.json (catalog scan through the last task, worker
start-up and shutdown included; interpreter start and config loading excluded). Worker counts alternate
within each round, so a burst of load from other processes hits both; the medians over `--repeat` rounds
are printed with the 1-minute load average seen before each run (the machine should be idle), and the
outputs are checked to be byte-identical.

    python -m ecab.bench.construct [--workers 1,2] [--repeat 3] [overrides...]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from ecab.construct.benchmark_folder import BENCHMARK_FILE, REPORT_FILE


def run_once(workers: int, overrides: list[str], out: Path) -> dict:
    """One build in a fresh process; its timing dict plus the load average before it started."""
    load = os.getloadavg()[0]
    cmd = [sys.executable, "-m", "ecab.construct", f"construct.out={out}", f"construct.workers={workers}",
           "run.progress=false", *overrides]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"construct failed (workers={workers}):\n{done.stderr[-2000:]}")
    timing = json.loads((out / REPORT_FILE).read_text(encoding="utf-8"))["timing"]
    return {**timing, "load": load, "output": (out / BENCHMARK_FILE).read_bytes()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,2", help="comma-separated worker counts to compare")
    parser.add_argument("--repeat", type=int, default=3, help="rounds; medians are reported")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. construct.n_per_intent=10")
    args = parser.parse_args(argv)
    counts = [int(w) for w in args.workers.split(",")]
    runs: dict[int, list[dict]] = {w: [] for w in counts}
    with tempfile.TemporaryDirectory(prefix="ecab-bench-construct-") as tmp:
        for round_ in range(args.repeat):
            order = counts if round_ % 2 == 0 else counts[::-1]
            for w in order:
                r = run_once(w, args.overrides, Path(tmp) / f"r{round_}-w{w}")
                runs[w].append(r)
                print(f"round {round_ + 1} workers={w}: {r['tasks']} tasks in {r['elapsed_s']:.2f}s "
                      f"({r['tasks_per_second']:.2f} tasks/s, load {r['load']:.2f}, built by {r['built_by']})",
                      flush=True)
    outputs = {r["output"] for rs in runs.values() for r in rs}
    base = statistics.median(r["elapsed_s"] for r in runs[counts[0]])
    print(f"\n{'workers':>7} {'median s':>9} {'tasks/s':>8} {'speed-up':>9} {'runs (s)':>24}")
    for w in counts:
        times = [r["elapsed_s"] for r in runs[w]]
        med = statistics.median(times)
        tasks = runs[w][0]["tasks"]
        print(f"{w:>7} {med:>9.2f} {tasks / med:>8.2f} {base / med:>8.2f}x "
              f"{', '.join(f'{t:.1f}' for t in times):>24}")
    print("outputs byte-identical across all runs: " + ("yes" if len(outputs) == 1 else "NO"))


if __name__ == "__main__":
    main()

"""`python -m ecab.bench.sandbox`: python_execute per-call latency and throughput, today's sandbox beside 4a22f9b's.

A benchmark, not a test. It runs the same agent-like snippets through
- `bwrap`: ecab/env/sandbox.py, a fresh bubblewrap sandbox per call (warm sandboxes started ahead);
- `zygote-4a22f9b`: the sandbox ecab shipped before (one forked child of an in-process-guarded zygote per call,
  escapable: docs/decisions.md#sandbox), loaded from git history (`git show 4a22f9b:ecab/env/sandbox.py`);
at 1 and 16 concurrent callers, after a warm-up. It prints per engine and case: p50/p95 of the call as the caller
sees it, p50 of the run itself (request to reply), calls/s, and the machine's CPU per call (/proc/stat).

    python -m ecab.bench.sandbox [--calls 200] [--callers 1,16] [--warm 4]

Targets (this 2-core machine): warm per-call p50 <= 30 ms at one caller and >= 40 calls/s at 1 and 16 callers.
With 16 callers a call also waits its turn, so its p50 is about 16 / (calls/s), whatever the sandbox.

`--case fairness` (ecab/bench/sandbox_fairness.py) instead shows a benign episode's call latency alone and
beside 16 episodes looping CPU-bound code, per scheduler (first come first served vs the fair queue):

    python -m ecab.bench.sandbox --case fairness [--scheduler fifo,fair] [--hostile 16] [--benign-calls 20]
"""
from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from ecab.bench import sandbox_fairness
from ecab.env.sandbox import SCHEDULERS, Sandbox, SandboxLimits

BASELINE_COMMIT = "4a22f9b"
TARGET_P50_MS = 30.0
TARGET_CALLS_PER_S = 40.0
# What agents send python_execute: arithmetic over prices and ratings, sometimes statistics or json.
SNIPPETS = (
    "prices = [19.99, 24.5, 18.0, 30.25]\nprint(round(sum(prices) / len(prices), 2), max(prices) - min(prices))",
    "import math\nprint(math.ceil(129.99 * 0.85 * 100) / 100)",
    "import statistics\nratings = [4.5, 4.1, 3.9, 4.8, 4.6]\nprint(statistics.mean(ratings), statistics.median(ratings))",
    "import json\nprint(json.dumps(sorted({'b': 2, 'a': 1}.items())))",
)


@dataclass
class Row:
    engine: str
    callers: int
    p50_ms: float
    p95_ms: float
    run_p50_ms: float
    calls_per_s: float
    cpu_ms_per_call: float


def machine_cpu_seconds() -> float:
    """Busy CPU seconds of the whole machine so far (user+nice+system+irq+softirq), from /proc/stat."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:8]]
    return (fields[0] + fields[1] + fields[2] + fields[5] + fields[6]) / 100.0


def load_baseline():
    """4a22f9b's sandbox module from git history, or None with the reason printed."""
    repo = Path(__file__).resolve().parents[2]
    try:
        source = subprocess.run(["git", "-C", str(repo), "show", f"{BASELINE_COMMIT}:ecab/env/sandbox.py"],
                                capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"baseline unavailable (needs the git history of the repository): {exc}")
        return None
    path = Path(tempfile.mkdtemp(prefix="ecab-bench-sandbox-")) / "sandbox_4a22f9b.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("sandbox_4a22f9b", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def measure(engine: str, box, callers: int, calls: int) -> Row:
    for snippet in SNIPPETS * 3:  # warm-up: pools filled, modules cached by the OS
        assert box.execute(snippet).ok
    def one(index: int) -> tuple[float, float]:
        started = time.perf_counter()
        result = box.execute(SNIPPETS[index % len(SNIPPETS)])
        if not result.ok:
            raise RuntimeError(f"{engine}: {result.error}")
        return (time.perf_counter() - started) * 1000, result.run_s * 1000
    cpu0, wall0 = machine_cpu_seconds(), time.perf_counter()
    with ThreadPoolExecutor(callers) as pool:
        timings = list(pool.map(one, range(calls)))
    wall, cpu = time.perf_counter() - wall0, machine_cpu_seconds() - cpu0
    totals = sorted(t for t, _ in timings)
    return Row(engine, callers, statistics.median(totals), totals[int(0.95 * (len(totals) - 1))],
               statistics.median(r for _, r in timings), calls / wall, cpu / calls * 1000)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--callers", default="1,16")
    parser.add_argument("--warm", type=int, default=SandboxLimits.warm_workers, help="warm sandboxes kept ready")
    parser.add_argument("--case", choices=("latency", "fairness"), default="latency")
    parser.add_argument("--scheduler", default=",".join(reversed(SCHEDULERS)), help="fairness: schedulers to compare")
    parser.add_argument("--hostile", type=int, default=16, help="fairness: episodes looping CPU-bound code")
    parser.add_argument("--benign-calls", type=int, default=20, help="fairness: benign calls per case")
    parser.add_argument("--think-ms", type=float, default=100.0, help="fairness: benign episode's pause between calls")
    args = parser.parse_args(argv)
    if args.case == "fairness":
        schedulers = args.scheduler.split(",")
        if not set(schedulers) <= set(SCHEDULERS) or args.benign_calls < 1 or args.hostile < 1:
            parser.error(f"--scheduler takes {','.join(SCHEDULERS)}; --benign-calls and --hostile at least 1")
        probe = Sandbox()
        print(probe.status().line())
        probe.close()
        sandbox_fairness.run(schedulers, args.hostile, args.benign_calls, args.think_ms)
        return
    callers = [int(c) for c in args.callers.split(",")]
    if args.calls < 2 or any(c < 1 for c in callers):
        parser.error("--calls must be at least 2 and every --callers value at least 1")

    engines = []
    box = Sandbox(SandboxLimits(warm_workers=args.warm, max_parallel=max(callers)))
    status = box.status()
    print(status.line())
    if status.available:
        engines.append(("bwrap", box))
    baseline = load_baseline()
    if baseline is not None:
        engines.append((f"zygote-{BASELINE_COMMIT}", baseline.Sandbox(baseline.SandboxLimits(max_parallel=max(callers)))))

    rows = [measure(name, engine, c, args.calls) for c in callers for name, engine in engines]
    for _, engine in engines:
        engine.close()
    print(f"\n{'engine':<18}{'callers':>8}{'p50 ms':>9}{'p95 ms':>9}{'run p50':>9}{'calls/s':>9}{'CPU ms/call':>13}")
    for row in rows:
        print(f"{row.engine:<18}{row.callers:>8}{row.p50_ms:>9.1f}{row.p95_ms:>9.1f}{row.run_p50_ms:>9.1f}"
              f"{row.calls_per_s:>9.1f}{row.cpu_ms_per_call:>13.1f}")
    ours = [r for r in rows if r.engine == "bwrap"]
    if ours:
        one = [r for r in ours if r.callers == 1]
        verdicts = [f"p50 at 1 caller {one[0].p50_ms:.1f} ms (target <= {TARGET_P50_MS:.0f})" if one else ""]
        verdicts += [f"{r.calls_per_s:.1f} calls/s at {r.callers} (target >= {TARGET_CALLS_PER_S:.0f})" for r in ours]
        print("\nbwrap: " + "; ".join(v for v in verdicts if v))


if __name__ == "__main__":
    main()

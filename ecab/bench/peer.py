"""`python -m ecab.bench.peer` (`make bench-peer`): ecab and inspect_ai side by side, on the same episodes,
against one simulated endpoint.

A benchmark, not a test (issue 19). One simulator process (ecab/sim, `SimProcess`: the agent's reply policy
behind a real OpenAI-compatible HTTP server on 127.0.0.1, fixed latency L, no faults) serves both harnesses.
For each concurrency C, each side runs the same units (the default catalog's generated tasks, trial 0 first)
with C episodes in flight, in a fresh process of its own (peer_case.py): ecab through runner=local
(LocalRunner), inspect_ai through an inspect task whose solver runs ecab's episode loop with
inspect's model API and tools (peer_inspect.py), in inspect_ai's own virtual environment, made or reused
here (peer_env.py). Both call ecab's real ToolBox in-process, so for the same task they must make the same
tool calls with the same results; the benchmark checks that per task and prints `N/N identical`.

Per side and C it prints:
- episodes/s while all C episodes were in flight: the LLM turns the simulator admitted per second from the
  side's first request until fewer than C episodes were left (until the first finish, for one wave) divided
  by the LLM turns per episode (Little's law: in steady state this is the rate at which episodes finish, and
  it needs no second wave, which would double inspect_ai's share of the run);
- % of ideal, ideal = C / (LLM turns per episode x L);
- CPU ms per LLM turn: the side's process CPU time while its episodes ran (tools, catalog and embedder
  included, the same for both), divided by its LLM turns;
- peak RSS of the side's process; failed episodes (no result, infra or agent error).

Everything runs in one invocation and ends with one table per C, written also as JSON (the path is printed).
The machine's load average is recorded beside the figures: on a shared machine they are depressed.

    python -m ecab.bench.peer                                  # C=64,256 at L=1 s, 200 tasks, budget 100
    python -m ecab.bench.peer --concurrency 64,256,1024        # C=1024 too (minutes more)
    python -m ecab.bench.peer --sides ecab --concurrency 8 --latency 0.05 benchmark.limit=8
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ecab.bench.peer_case import SIDES
from ecab.bench.peer_records import identical_calls
from ecab.core.process_env import configure_process_env

SIDE_LABELS = {"ecab": "ecab", "inspect": "inspect_ai"}


# ---------------------------------------------------------------------------------------------------------
# One side of one case, in its own process
# ---------------------------------------------------------------------------------------------------------

def run_side_process(side: str, spec: dict, python: str, environ: dict | None = None) -> dict:
    """Run one side of one case (peer_case.py) under `python`; its result, or a RuntimeError with the
    process's last lines."""
    with tempfile.TemporaryDirectory() as tmp:
        spec_path, result_path, log_path = (Path(tmp) / n for n in ("spec.json", "result.json", "log.txt"))
        spec_path.write_text(json.dumps({**spec, "side": side}), encoding="utf-8")
        with open(log_path, "w") as log:
            done = subprocess.run([python, "-m", "ecab.bench.peer_case", str(spec_path), str(result_path)],
                                  stdout=log, stderr=subprocess.STDOUT, env=environ)
        if done.returncode != 0 or not result_path.exists():
            tail = "\n".join(log_path.read_text(errors="replace").strip().splitlines()[-15:])
            raise RuntimeError(f"{SIDE_LABELS[side]} side at C={spec['concurrency']} failed "
                               f"(exit {done.returncode}):\n{tail}")
        return json.loads(result_path.read_text(encoding="utf-8"))


# ---------------------------------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------------------------------

def side_row(result: dict, admitted_per_ds: dict, latency_s: float) -> dict:
    """A side's figures for one case from its result and the simulator's admissions per 0.1 s."""
    from ecab.bench.throughput import admitted_rate, steady_end

    concurrency, records = result["concurrency"], result["episodes"]
    n = max(1, len(records))
    turns = sum(r["turns"] for r in records)
    per_episode = turns / n
    in_flight = min(concurrency, result["units"])
    busy_until = steady_end([r["finished_at"] for r in records], concurrency)
    first_bin = int(result["started_at"] * 10)
    mine = {ds: k for ds, k in admitted_per_ds.items() if int(ds) >= first_bin}
    turn_rate = admitted_rate(mine, busy_until)
    eps = turn_rate / per_episode if per_episode else 0.0
    ideal = in_flight / (per_episode * latency_s) if per_episode else 0.0
    return {"episodes": len(records), "units": result["units"],
            "failed": sum(r["failed"] for r in records) + result["units"] - len(records),
            "turns_per_episode": per_episode, "llm_turns_per_s": turn_rate, "eps_per_s": eps,
            "ideal_eps_per_s": ideal, "share_of_ideal": eps / ideal if ideal else 0.0,
            "cpu_ms_per_turn": 1000 * result["cpu_s"] / max(1, turns), "cpu_s": result["cpu_s"],
            "rss_before_mb": result["rss_before_mb"], "peak_rss_mb": result["peak_rss_mb"],
            "wall_s": result["wall_s"], "errors": result["errors"],
            "load_avg_1m_after": result.get("load_avg_1m_after"), "versions": result["versions"]}


# ---------------------------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------------------------

def format_case(case: dict, latency_s: float) -> str:
    sides = [s for s in SIDES if s in case["sides"]]
    rows = {s: case["sides"][s] for s in sides}
    width = 14
    lines = [f"C={case['concurrency']}: {case['units']} episodes per side, L={latency_s:g} s"]
    lines.append(f"  {'':<24}" + "".join(f"{SIDE_LABELS[s]:>{width}}" for s in sides))

    def line(label: str, fmt) -> None:
        lines.append(f"  {label:<24}" + "".join(f"{fmt(rows[s]):>{width}}" for s in sides))

    line("episodes/s", lambda r: f"{r['eps_per_s']:.2f}")
    line("ideal episodes/s", lambda r: f"{r['ideal_eps_per_s']:.2f}")
    line("% of ideal", lambda r: f"{100 * r['share_of_ideal']:.1f}%")
    line("CPU ms per LLM turn", lambda r: f"{r['cpu_ms_per_turn']:.1f}")
    line("peak RSS (MB)", lambda r: f"{r['peak_rss_mb']:.0f}")
    line("RSS before episodes (MB)", lambda r: f"{r['rss_before_mb']:.0f}")
    line("failed episodes", lambda r: f"{r['failed']}/{r['units']}")
    line("LLM turns per episode", lambda r: f"{r['turns_per_episode']:.1f}")
    line("wall (s)", lambda r: f"{r['wall_s']:.0f}")
    line("load avg after (1 min)", lambda r: f"{r.get('load_avg_1m_after') or 0.0:.1f}")
    same = case["identical"]
    verdict = f"  identical tool calls and results per task: {same['identical']}/{same['tasks']}"
    if same["differing"]:
        verdict += f" (differing or failed: {', '.join(same['differing'])})"
    lines.append(verdict)
    for side in sides:
        for error in rows[side]["errors"]:
            lines.append(f"  {SIDE_LABELS[side]} error: {error[:300]}")
    return "\n".join(lines)


def default_out() -> Path:
    return Path("runs") / f"bench-peer-{time.strftime('%Y%m%d-%H%M%S')}.json"


# ---------------------------------------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------------------------------------

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m ecab.bench.peer", description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=1.0, help="simulated latency L per LLM call, s")
    parser.add_argument("--concurrency", default="64,256",
                        help="episodes in flight, comma-separated (add 1024 for the big case: minutes more)")
    parser.add_argument("--budget", type=int, default=100, help="tool-call budget per episode")
    parser.add_argument("--waves", type=float, default=1.0,
                        help="episodes per case = waves x C (at least 1: every slot busy from the start)")
    parser.add_argument("--sides", default=",".join(SIDES), help="ecab,inspect (or one of them)")
    parser.add_argument("--venv", default=None, help="inspect_ai's virtual environment "
                                                     "(default <cache_dir>/bench/peer-venv)")
    parser.add_argument("--out", default=None, help="the JSON file of the results "
                                                    "(default runs/bench-peer-<time>.json)")
    parser.add_argument("overrides", nargs="*", help="config overrides for the catalog and tasks, e.g. "
                                                     "benchmark.limit=50")
    args = parser.parse_args(argv)
    args.sides = [s.strip() for s in args.sides.split(",") if s.strip()]
    if not args.sides or any(s not in SIDES for s in args.sides):
        parser.error(f"--sides takes {', '.join(SIDES)}")
    args.concurrency = [int(c) for c in args.concurrency.split(",")]
    if args.waves < 1:
        parser.error("--waves must be at least 1: with fewer episodes than C, C are never in flight")
    return args


def prepare_inspect(venv: str | None, report: dict) -> tuple[str, dict]:
    """inspect_ai's interpreter and process environment (peer_env.py), made or reused, said so."""
    from ecab.bench.peer_env import INSPECT_AI_VERSION, case_environ, ensure_peer_env

    env = ensure_peer_env(Path(venv) if venv else None)
    how = "created" if env.created else "reusing"
    print(f"inspect_ai {INSPECT_AI_VERSION}: {how} its virtual environment {env.path} ({env.seconds:.0f} s)",
          flush=True)
    report["peer_env"] = {"path": str(env.path), "created": env.created, "seconds": round(env.seconds, 1),
                          "inspect_ai": INSPECT_AI_VERSION}
    return str(env.python), case_environ()


def run(args: argparse.Namespace) -> dict:
    from ecab.bench.throughput import Setup, sim_config, sim_model_cfg
    from ecab.sim.process import SimProcess

    setup = Setup(args.overrides)      # builds (or finds) the catalog and tasks the side processes read
    report = {"latency_s": args.latency, "budget": args.budget, "tasks": len(setup.tasks),
              "catalog_products": setup.catalog.count(), "search": str(setup.cfg.tools.search),
              "cpus": os.cpu_count(), "load_avg_1m_before": os.getloadavg()[0], "cases": []}
    interpreters = {"ecab": (sys.executable, None)}
    if "inspect" in args.sides:
        interpreters["inspect"] = prepare_inspect(args.venv, report)
    print(f"peer benchmark: L={args.latency:g} s, budget {args.budget}, {len(setup.tasks)} tasks, catalog "
          f"{report['catalog_products']} products, search {report['search']}, {os.cpu_count()} CPUs, "
          f"load average {report['load_avg_1m_before']:.1f}", flush=True)
    results: dict[tuple[int, str], dict] = {}
    with SimProcess(sim_config(args.latency, None)) as sim:
        model = sim_model_cfg(sim.base_url, 1)
        for concurrency in args.concurrency:
            units = max(concurrency, math.ceil(args.waves * concurrency))
            spec = {"base_url": sim.base_url, "model_id": model.model_id, "concurrency": concurrency,
                    "budget": args.budget, "episodes": units, "overrides": list(args.overrides)}
            for side in args.sides:
                python, environ = interpreters[side]
                result = run_side_process(side, spec, python, environ)
                result["load_avg_1m_after"] = os.getloadavg()[0]
                results[(concurrency, side)] = result
                print(f"  {SIDE_LABELS[side]:>10} C={concurrency}: {len(result['episodes'])}/{units} episodes in "
                      f"{result['wall_s']:.0f} s, CPU {result['cpu_s']:.0f} s (process set-up "
                      f"{result['setup_s']:.0f} s)", flush=True)
    admitted = sim.stats.get("admitted_per_ds", {})
    for concurrency in args.concurrency:
        sides = {s: results[(concurrency, s)] for s in args.sides}
        report["cases"].append({
            "concurrency": concurrency, "units": next(iter(sides.values()))["units"],
            "sides": {s: side_row(r, admitted, args.latency) for s, r in sides.items()},
            "identical": identical_calls({s: r["episodes"] for s, r in sides.items()})})
    report["identical_over_run"] = identical_calls(
        {side: [rec for (_, s), r in results.items() if s == side for rec in r["episodes"]] for side in args.sides})
    return report


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    configure_process_env()   # before the catalog or the tasks are loaded
    from ecab.bench.peer_env import PeerEnvError

    try:
        report = run(args)
    except PeerEnvError as exc:
        print(f"peer benchmark: {exc}\n(--sides ecab measures ecab alone)", file=sys.stderr)
        return 1
    report["command"] = "python -m ecab.bench.peer " + " ".join(argv if argv is not None else sys.argv[1:])
    print()
    for case in report["cases"]:
        print(format_case(case, args.latency))
        print()
    over = report["identical_over_run"]
    print(f"identical tool calls and results per task over the whole run: {over['identical']}/{over['tasks']}")
    out = Path(args.out) if args.out else default_out()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1), encoding="utf-8")
    print(f"results written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`python -m ecab.bench.episodes`: the harness's own cost per step, and episodes per second.

A benchmark, not a test. It runs the heuristic agent over the default catalog and benchmark twice: once
against the real LanceDB catalog (episodes/s as a user sees them), and once against a replay of the exact
catalog answers recorded in the first pass, so search costs nothing and the process CPU left is the
harness's own: the loop, the tool box (threads included), JSON, bookkeeping, and the agent. The agent's
own CPU is measured around each `act` call and shown apart; harness overhead per step = (CPU - agent CPU)
/ executed tool calls, target at most 2 ms. Two concurrency levels are printed side by side (one episode
at a time vs many in flight).

    python -m ecab.bench.episodes [--episodes 200] [--concurrency 1,32] [overrides...]
"""
from __future__ import annotations

import argparse
import asyncio
import threading
import time
from pathlib import Path

from ecab.agents import make_agent
from ecab.config import load_config, parse
from ecab.env.episode import EpisodeSettings, run_episode
from ecab.env.tools import ToolBox

TARGET_MS_PER_STEP = 2.0


class ReplayCatalog:
    """Records every catalog answer on the first pass, then serves them from memory: search excluded."""

    def __init__(self, inner):
        self._inner = inner
        self._answers: dict = {}
        self.replaying = False

    def __getattr__(self, name):
        attr = getattr(self._inner, name)
        if not callable(attr):
            return attr

        def call(*args, **kwargs):
            key = (name, repr(args), repr(sorted(kwargs.items())))
            if self.replaying:
                return self._answers[key]
            self._answers[key] = result = attr(*args, **kwargs)
            return result
        return call


class TimedAgent:
    """Adds up the CPU the agent's own `act` spends (offline agents do not await inside act)."""

    cpu_s = 0.0

    def __init__(self, inner):
        self._inner = inner
        self.name = inner.name

    async def act(self, messages, tools):
        start = time.thread_time()
        try:
            return await self._inner.act(messages, tools)
        finally:
            TimedAgent.cpu_s += time.thread_time() - start


class TimedCatalog:
    """Proxy that adds up the CPU time the calling thread spends inside each catalog method."""

    def __init__(self, inner):
        self._inner = inner
        self._lock = threading.Lock()
        self.cpu_s = 0.0
        self.calls = 0

    def __getattr__(self, name):
        attr = getattr(self._inner, name)
        if not callable(attr):
            return attr

        def timed(*args, **kwargs):
            start = time.thread_time()
            try:
                return attr(*args, **kwargs)
            finally:
                spent = time.thread_time() - start
                with self._lock:
                    self.cpu_s += spent
                    self.calls += 1
        return timed


async def _run_all(tasks, catalog, concurrency: int, budget: int):
    gate = asyncio.Semaphore(concurrency)

    async def one(task, i):
        async with gate:
            agent = TimedAgent(make_agent({"kind": "heuristic"}, task, i))
            return await run_episode(task, agent, ToolBox(catalog, task), EpisodeSettings(budget=budget))

    return await asyncio.gather(*(one(t, i) for i, t in enumerate(tasks)))


def measure(tasks, catalog, concurrency: int, budget: int) -> dict:
    timed = TimedCatalog(catalog)
    TimedAgent.cpu_s = 0.0
    cpu0, wall0 = time.process_time(), time.perf_counter()
    trajectories = asyncio.run(_run_all(tasks, timed, concurrency, budget))
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    steps = sum(t.total_tool_calls for t in trajectories)
    overhead = max(cpu - timed.cpu_s - TimedAgent.cpu_s, 0.0)
    return {"concurrency": concurrency, "episodes": len(trajectories), "steps": steps,
            "wall_s": wall, "episodes_per_s": len(trajectories) / wall if wall else 0.0,
            "cpu_s": cpu, "catalog_cpu_s": timed.cpu_s,
            "overhead_ms_per_step": 1000 * overhead / max(steps, 1),
            "agent_ms_per_step": 1000 * TimedAgent.cpu_s / max(steps, 1),
            "catalog_ms_per_step": 1000 * timed.cpu_s / max(steps, 1)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--concurrency", default="1,32")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. catalog.products=5000")
    args = parser.parse_args(argv)
    cfg = parse(load_config(args.overrides))
    from ecab.catalog.build import ensure_catalog
    from ecab.construct.benchmark_cache import ensure_benchmark
    from ecab.schema import read_tasks

    catalog = ensure_catalog(cfg.catalog, Path(cfg.cache_dir))
    tasks = [t for t in read_tasks(ensure_benchmark(cfg, catalog, Path(cfg.cache_dir))) if t.is_ok]
    tasks = (tasks * (args.episodes // max(len(tasks), 1) + 1))[: args.episodes]
    replay = ReplayCatalog(catalog)
    measure(tasks[:4], catalog, 1, cfg.budget)  # warm caches and the embedder before timing
    levels = [int(c) for c in args.concurrency.split(",")]
    real = [measure(tasks, replay, c, cfg.budget) for c in levels]          # records the answers too
    replay.replaying = True
    replayed = [measure(tasks, replay, c, cfg.budget) for c in levels]
    print(f"heuristic agent, {len(tasks)} episodes, catalog {catalog.count()} products, budget {cfg.budget}")
    header = f"{'catalog':>8} {'concurrency':>11} {'episodes/s':>10} {'steps':>6} {'harness ms/step':>16} " \
             f"{'agent ms/step':>14} {'wall s':>7}"
    print(header)
    for label, rows in (("lancedb", real), ("replay", replayed)):
        for r in rows:
            harness = f"{r['overhead_ms_per_step']:.3f}" if label == "replay" else "(incl. search)"
            print(f"{label:>8} {r['concurrency']:>11} {r['episodes_per_s']:>10.1f} {r['steps']:>6} "
                  f"{harness:>16} {r['agent_ms_per_step']:>14.3f} {r['wall_s']:>7.1f}")
    worst = max(r["overhead_ms_per_step"] for r in replayed)
    verdict = "met" if worst <= TARGET_MS_PER_STEP else "NOT met"
    print(f"target: harness overhead <= {TARGET_MS_PER_STEP} ms per step (search excluded): {verdict} "
          f"(worst {worst:.3f} ms)")


if __name__ == "__main__":
    main()

"""`python -m ecab.bench.throughput`: episodes per second through the LLM path, runner=local vs runner=ray.

A benchmark, not a test. It starts the simulated OpenAI-compatible endpoint (ecab/sim, in its own process:
`SimProcess`) with a fixed latency L (1 s by default) and runs the `sim` model (the real openai client, tenacity,
the adaptive limiter) on the cached default catalog, at concurrency C in {64, 256, 1024}, with both runners in
one run:

- achieved episodes/s in steady state (all C slots busy) vs the ideal C / (steps x L), where steps is the
  measured mean number of LLM turns per episode, and where a step's time went (the LLM call, limiter
  waits included; the tool) with the share of search pages served from the page cache;
- under rate limiting (the simulator's RPM bucket below the demand): the rate of requests the endpoint
  admitted, from the first request until fewer than C episodes were left (while demand exceeded the
  limit), vs the RPM limit; the whole run's served rate (with the ramp-down) beside it; the 429s; and the
  number of failed episodes (targets: >= 90% of the limit, 0 failed);
- peak memory per episode in flight (resident memory growth of the processes running episodes / C).

Every case starts with cold catalog caches (runner=ray's actors are new for each case; runner=local's
catalog has its caches cleared), so no case is helped by the one before it. The default catalog has 200
tasks and a case runs 3 x C episodes, so at C=256 each task runs about four times and its repeated
searches come from the page cache, as the trials, budgets and models of a sweep do.

Targets (issue 6): >= 90% of ideal at C=256; >= 90% of the RPM limit with 0 failed episodes. On a small
machine the CPU (the simulator, the catalog and the agents share it) is what caps the larger C.

    python -m ecab.bench.throughput                      # L=1 s, C=64,256,1024, both runners
    python -m ecab.bench.throughput --concurrency 256 --latency 0.5 --runners local
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from ecab.core.process_env import configure_process_env


def rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class PeakRss:
    """This process's resident memory peak while the block runs, sampled every 50 ms (the kernel's own peak,
    ru_maxrss, is the whole process lifetime's, so it says nothing about a case that follows a bigger one)."""

    def __enter__(self) -> "PeakRss":
        import threading

        self.base = self.peak = rss_mb()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.05):
            self.peak = max(self.peak, rss_mb())

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_mb())

    @property
    def growth_mb(self) -> float:
        return max(0.0, self.peak - self.base)


def steady_rate(finish_times: list[float], concurrency: int) -> float:
    """Episodes/s while every slot was busy: from the first finish to the finish after which fewer than C
    units were left (the tail, with slots idling, is not throughput)."""
    times = sorted(finish_times)
    end = len(times) - concurrency
    if end < 2:
        end = len(times) - 1
    if end < 1 or times[end] <= times[0]:
        return 0.0
    return end / (times[end] - times[0])


def steady_end(finish_times: list[float], concurrency: int) -> float:
    """The last finish after which all C slots still had a unit to run."""
    times = sorted(finish_times)
    return times[max(0, len(times) - concurrency - 1)] if times else 0.0


def admitted_rate(admitted_per_ds: dict, until: float) -> float:
    """Requests the endpoint admitted per second, from its first admission until `until` (wall time): the
    stretch in which every episode slot was busy, so demand stood above any rate limit below C / L."""
    bins = {int(k): int(v) for k, v in admitted_per_ds.items()}
    if not bins:
        return 0.0
    first, last = min(bins), int(until * 10)
    if last <= first:
        return 0.0
    return sum(n for ds, n in bins.items() if first <= ds < last) / ((last - first) / 10)


def sim_model_cfg(base_url: str, concurrency: int) -> dict:
    from omegaconf import OmegaConf

    from ecab.config import load_config

    model = OmegaConf.to_container(load_config(["model=sim"]).model, resolve=True)
    model.update(base_url=base_url, concurrency=concurrency, max_attempts=50, max_retry_wait_s=5.0,
                 timeout_s=120, wall_clock_s=None)
    model.pop("sim", None)
    return model


def sim_config(latency_s: float, rpm: float | None) -> dict:
    return {"latency": "fixed", "latency_ms": latency_s * 1000, "rate_429": 0.0, "rate_5xx": 0.0, "rpm": rpm,
            "tpm": None, "retry_after_s": 0.05,
            "malformed": {"invalid_json": 0.0, "two_calls": 0.0, "no_tool_call": 0.0, "unknown_tool": 0.0}}


class Setup:
    """The catalog and tasks every case shares (built once into the cache)."""

    def __init__(self, overrides: list[str]):
        from ecab.config import load_config
        from ecab.run import load_tasks, open_catalog

        self.cfg = load_config(["model=heuristic", "run.progress=false", *overrides])
        self.catalog = open_catalog(self.cfg)
        self.tasks = load_tasks(self.cfg, self.catalog)
        self.catalog.search("warm up the query embedder", limit=1)   # so it is not counted as episode memory

    def units(self, n: int, budget: int, model: str):
        from ecab.core.unit import make_units

        trials = -(-n // len(self.tasks))
        return make_units([t.id for t in self.tasks], model, budget, 0, trials)[:n]


def run_case(setup: Setup, runner: str, concurrency: int, latency_s: float, budget: int, n_units: int,
             rpm: float | None, workers: int, replicas: int = 1) -> dict:
    from ecab.env.episode import EpisodeSettings
    from ecab.llm.limits import LimiterSettings
    from ecab.runner.episode import EpisodeOptions
    from ecab.runner.local import LocalRunner
    from ecab.runs import RunFolder
    from ecab.sim.process import SimProcess

    settings = EpisodeSettings(budget=budget)
    limits = LimiterSettings(max_concurrency=max(concurrency, 1))
    tasks = {t.id: t for t in setup.tasks}
    finish: list[float] = []
    # The endpoint runs in its own process (a real one is another machine), so that its request handling
    # is not counted as harness cost on the harness's GIL.
    with SimProcess(sim_config(latency_s, rpm)) as sim, tempfile.TemporaryDirectory() as tmp:
        model = sim_model_cfg(sim.base_url, concurrency)
        units = setup.units(n_units, budget, model["name"])
        folder = RunFolder(Path(tmp) / "run").create()
        started = time.monotonic()
        episode = EpisodeOptions(model_cfg=model, tool_options={"search_mode": setup.cfg.tools.search})
        if runner == "local":
            setup.catalog.clear_caches()   # every case starts cold, as runner=ray's fresh actors do
            with PeakRss() as memory:
                stats = LocalRunner(episode, concurrency=concurrency, limits=limits, progress=False).run(
                    units, tasks, setup.catalog, folder, settings, on_done=lambda t: finish.append(time.time()))
            search_cache = setup.catalog.search_cache_stats()
            memory_mb = memory.growth_mb
        else:
            from ecab.runner.ray import RayRunner
            from ecab.runner.ray_cluster import RayOptions

            stats = RayRunner(episode, RayOptions(workers=workers, concurrency=concurrency), limits=limits,
                              replicas=replicas, progress=False).run(
                units, tasks, setup.catalog, folder, settings, on_done=lambda t: finish.append(time.time()))
            search_cache = stats.cluster.search_cache
            memory_mb = sum(max(0.0, m["rss_peak_mb"] - m["rss_start_mb"]) for m in stats.cluster.worker_memory_mb)
        wall = time.monotonic() - started
        limiter = next(iter(stats.limiters.values()), {})
        trajs = list(folder.latest_trajectories().values())
    failed = sum(1 for t in trajs if t.termination in ("infra_error", "agent_error"))
    steps = sum(len(t.steps) for t in trajs) / max(1, len(trajs))
    n_steps = max(1, sum(len(t.steps) for t in trajs))
    llm_s = sum(s.agent_latency_s or 0.0 for t in trajs for s in t.steps) / n_steps
    tool_s = sum(s.tool_latency_s or 0.0 for t in trajs for s in t.steps) / n_steps
    wall_s = sum(t.wall_s or 0.0 for t in trajs) / n_steps
    rate = steady_rate(finish, concurrency)
    ideal = concurrency / (steps * latency_s) if steps else 0.0
    return {"runner": runner, "C": concurrency, "episodes": len(trajs), "failed": failed, "steps": steps,
            "eps_per_s": rate, "ideal_eps_per_s": ideal, "wall_s": wall, "limiter": limiter,
            "rpm_limit": rpm, "admitted_per_s": admitted_rate(sim.stats.get("admitted_per_ds", {}),
                                                              steady_end(finish, concurrency)),
            "memory_per_episode_mb": memory_mb / concurrency,
            "search_hit_rate": search_cache.get("hits", 0) / max(1, sum(search_cache.values())),
            # where a step's time goes: the LLM call (limiter wait included), the tool, and the rest
            "step_s": {"llm": llm_s, "tool": tool_s, "other": max(0.0, wall_s - llm_s - tool_s)}}


def print_throughput(row: dict) -> None:
    share = row["eps_per_s"] / row["ideal_eps_per_s"] if row["ideal_eps_per_s"] else 0.0
    print(f"{row['runner']:>5}  C={row['C']:<5} {row['eps_per_s']:7.2f} ep/s vs ideal {row['ideal_eps_per_s']:7.2f} "
          f"({100 * share:5.1f}%)  steps {row['steps']:.1f}  failed {row['failed']}/{row['episodes']}  "
          f"memory {row['memory_per_episode_mb']:.2f} MB/episode  ({row['wall_s']:.0f} s)", flush=True)
    split = row["step_s"]
    print(f"{'':>5}  per step: LLM call {split['llm']:.3f} s, tool {split['tool']:.3f} s, "
          f"other {split['other']:.3f} s; search pages from cache {100 * row['search_hit_rate']:.0f}%",
          flush=True)


def print_rate_limited(row: dict) -> None:
    limit = row["rpm_limit"] / 60.0
    achieved, whole_run = row["admitted_per_s"], row["limiter"].get("ok_per_s", 0.0)
    print(f"{row['runner']:>5}  C={row['C']:<5} admitted {achieved:7.2f} req/s vs RPM limit {limit:7.2f} req/s "
          f"({100 * achieved / limit:5.1f}%; whole run with the ramp-down {whole_run:.1f} req/s)  "
          f"429s {row['limiter'].get('throttled', 0)}  "
          f"window now {row['limiter'].get('window', 0):.0f} (min {row['limiter'].get('min_window', 0):.0f})  "
          f"failed {row['failed']}/{row['episodes']}", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="ecab throughput benchmark (simulated endpoint)")
    parser.add_argument("--latency", type=float, default=1.0, help="simulated latency L per LLM call, s")
    parser.add_argument("--concurrency", default="64,256,1024", help="episodes in flight, comma-separated")
    parser.add_argument("--runners", default="local,ray")
    parser.add_argument("--budget", type=int, default=10, help="tool-call budget per episode (caps steps)")
    parser.add_argument("--waves", type=float, default=3.0, help="episodes per case = waves x C")
    parser.add_argument("--rpm", type=float, default=None,
                        help="RPM limit of the rate-limited case (default: half the demand at C=256)")
    parser.add_argument("--workers", type=int, default=2, help="episode workers for runner=ray")
    parser.add_argument("--replicas", type=int, default=None,
                        help="catalog replicas (actors) for runner=ray (default: catalog.replicas)")
    parser.add_argument("overrides", nargs="*", help="config overrides for the catalog and tasks, e.g. "
                                                     "tools.search=fts catalog.products=2000")
    args = parser.parse_args(argv)
    configure_process_env()   # before the catalog, the tasks or Ray are loaded
    if args.waves < 2:
        # steady_rate measures from the first finish until fewer than C episodes remain: with one wave
        # there is no such stretch, and the figure would be the burst of the last finishes.
        parser.error(f"--waves must be at least 2 (got {args.waves:g}): the steady state is measured while "
                     "more than C episodes remain")
    concurrencies = [int(c) for c in args.concurrency.split(",")]
    runners = [r.strip() for r in args.runners.split(",")]
    setup = Setup(args.overrides)
    replicas = args.replicas or int(setup.cfg.catalog.get("replicas", 1) or 1)
    print(f"ecab throughput: L={args.latency} s, budget {args.budget}, {len(setup.tasks)} tasks, "
          f"catalog {setup.catalog.count()} products, search {setup.cfg.tools.search}; ray: {args.workers} "
          f"workers, {replicas} catalog replica(s)", flush=True)
    print("-- throughput (no rate limit)")
    for concurrency in concurrencies:
        for runner in runners:
            print_throughput(run_case(setup, runner, concurrency, args.latency, args.budget,
                                      int(args.waves * concurrency), None, args.workers, replicas))
    rate_c = 256 if 256 in concurrencies else concurrencies[0]
    rpm = args.rpm or 0.5 * 60 * rate_c / args.latency
    print(f"-- rate limited: simulator RPM {rpm:.0f} ({rpm / 60:.1f} req/s), demand C/L = {rate_c / args.latency:.0f} req/s")
    for runner in runners:
        print_rate_limited(run_case(setup, runner, rate_c, args.latency, args.budget, int(args.waves * rate_c),
                                    rpm, args.workers, replicas))


if __name__ == "__main__":
    main()

"""`python -m ecab.bench.throughput`: episodes per second through the LLM path, runner=local vs runner=ray.

A benchmark, not a test. It starts the simulated OpenAI-compatible endpoint (ecab/sim, `SimServer`) with a
fixed latency L (1 s by default) and runs the `sim` model (the real openai client, tenacity, the adaptive
limiter) on the cached default catalog, at concurrency C in {64, 256, 1024}, with both runners in one run:

- achieved episodes/s in steady state (all C slots busy) vs the ideal C / (steps x L), where steps is the
  measured mean number of LLM turns per episode;
- under rate limiting (the simulator's RPM bucket below the demand): the request rate the limiter achieved
  vs the RPM limit, and the number of failed episodes (targets: >= 90% of the limit, 0 failed);
- peak memory per episode in flight (resident memory growth of the processes running episodes / C).

Targets (issue 6): >= 90% of ideal at C=256; >= 90% of the RPM limit with 0 failed episodes. On a small
machine the CPU (the simulator, the catalog and the agents share it) is what caps the larger C.

    python -m ecab.bench.throughput                      # L=1 s, C=64,256,1024, both runners
    python -m ecab.bench.throughput --concurrency 256 --latency 0.5 --runners local
"""
from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


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
        from ecab.runner.units import make_units

        trials = -(-n // len(self.tasks))
        return make_units([t.id for t in self.tasks], model, budget, 0, trials)[:n]


def run_case(setup: Setup, runner: str, concurrency: int, latency_s: float, budget: int, n_units: int,
             rpm: float | None, workers: int, replicas: int = 1) -> dict:
    from ecab.env.episode import EpisodeSettings
    from ecab.runner.limits import LimiterSettings, installed_limiters, reset_limiters, set_default_settings
    from ecab.runner.store import RunFolder
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
        if runner == "local":
            from ecab.runner.local import run_units

            reset_limiters()
            set_default_settings(limits)
            base = rss_mb()
            trajs = asyncio.run(run_units(units, tasks, setup.catalog, model, settings, folder,
                                          concurrency=concurrency, progress=False,
                                          tool_options={"search_mode": setup.cfg.tools.search},
                                          on_done=lambda t: finish.append(time.monotonic())))
            limiter = next(iter(installed_limiters().values())).describe()
            memory_mb = max(0.0, peak_rss_mb() - base)
        else:
            from dataclasses import asdict

            from ecab.runner.ray import RayOptions, WorkerSpec, run_units_on_ray

            spec = WorkerSpec(run_dir=str(folder.path), model_cfg=model, settings=asdict(settings),
                              tool_options={"search_mode": setup.cfg.tools.search},
                              search_mode=setup.catalog.mode, limiter_settings=asdict(limits))
            stats = run_units_on_ray(units, tasks, Path(setup.catalog.path).resolve(), setup.catalog.meta, spec,
                                     RayOptions(workers=workers, concurrency=concurrency), progress=False,
                                     replicas=replicas,
                                     on_done=lambda runner, result, n: finish.append(time.monotonic()))
            limiter = next(iter(stats["limiters"].values()), {})
            memory_mb = sum(max(0.0, m["rss_peak_mb"] - m["rss_start_mb"]) for m in stats["worker_memory_mb"])
            trajs = list(folder.latest_trajectories().values())
        wall = time.monotonic() - started
    failed = sum(1 for t in trajs if t.termination in ("infra_error", "agent_error"))
    steps = sum(len(t.steps) for t in trajs) / max(1, len(trajs))
    rate = steady_rate(finish, concurrency)
    ideal = concurrency / (steps * latency_s) if steps else 0.0
    return {"runner": runner, "C": concurrency, "episodes": len(trajs), "failed": failed, "steps": steps,
            "eps_per_s": rate, "ideal_eps_per_s": ideal, "wall_s": wall, "limiter": limiter,
            "rpm_limit": rpm, "memory_per_episode_mb": memory_mb / concurrency}


def print_throughput(row: dict) -> None:
    share = row["eps_per_s"] / row["ideal_eps_per_s"] if row["ideal_eps_per_s"] else 0.0
    print(f"{row['runner']:>5}  C={row['C']:<5} {row['eps_per_s']:7.2f} ep/s vs ideal {row['ideal_eps_per_s']:7.2f} "
          f"({100 * share:5.1f}%)  steps {row['steps']:.1f}  failed {row['failed']}/{row['episodes']}  "
          f"memory {row['memory_per_episode_mb']:.2f} MB/episode  ({row['wall_s']:.0f} s)", flush=True)


def print_rate_limited(row: dict) -> None:
    limit = row["rpm_limit"] / 60.0
    achieved = row["limiter"].get("ok_per_s", 0.0)
    print(f"{row['runner']:>5}  C={row['C']:<5} limiter {achieved:7.2f} req/s vs RPM limit {limit:7.2f} req/s "
          f"({100 * achieved / limit:5.1f}%)  429s {row['limiter'].get('throttled', 0)}  "
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

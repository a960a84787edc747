"""`python -m ecab.bench.throughput`: episodes per second through the LLM path, runner=local (one event loop, or
one per core) vs runner=ray, with short (budget 10) and full-length (budget 100) episodes.

A benchmark, not a test. It starts the simulated OpenAI-compatible endpoint (ecab/sim, in its own process:
`SimProcess`) with a fixed latency L (1 s by default) and runs the `sim` model (the real openai client, tenacity,
the adaptive limiter) on the cached default catalog, at concurrency C in {64, 256, 1024}, with both runners and
both budgets in one run:

- achieved episodes/s in steady state (all C slots busy) vs the lower of two bounds measured in the same case:
  the ideal C / (steps x L), where steps is the mean number of LLM turns per episode, and the machine's CPU
  limit, cores / (CPU per episode), where the CPU is the harness's (every process of the runner: the episode
  processes, a local Ray's daemons and workers) plus the simulator's, which shares this machine (a real
  endpoint would not); both are sampled every 0.5 s (`CpuTimeline`) and counted over the window the rate is
  measured in, so start-up and the tail count in neither; the cores other processes got in that window
  (the machine's busy CPU from /proc/stat less those two) are printed beside them: with anything else running
  at a low priority, that is the CPU the harness left idle;
- the p95 latency of the first search (the shopper's request) and of all searches of the C episodes that started
  first (the burst when C episodes start together; `--warm both` runs runner=local's cases without and with the
  first-query warm-up, `--admission both` without and with admission) and of every later episode;
- where a step's time went (the LLM call, limiter waits included; the tool) with the share of search pages
  served from the page cache;
- under rate limiting (the simulator's RPM bucket below the demand): the rate of requests the endpoint
  admitted, from the first request until fewer than C episodes were left (while demand exceeded the
  limit), vs the RPM limit; the whole run's served rate (with the ramp-down) beside it; the 429s; and the
  number of failed episodes (targets: >= 90% of the limit, 0 failed);
- peak memory per episode in flight (resident memory growth of the processes running episodes / C).

Every case starts with cold catalog caches (runner=ray's actors and runner=local's episode processes are new
for each case; a one-process runner=local has its caches cleared), so no case is helped by the one before it.
The default catalog has 200 tasks and a case runs 3 x C episodes, so at C=256 each task runs about four times
and its repeated searches come from the page cache, as the trials, budgets and models of a sweep do.

Targets: >= 90% of the lower bound at every C (issue 19); >= 90% of the RPM limit with 0 failed episodes.

    python -m ecab.bench.throughput                      # L=1 s, C=64,256,1024, both runners, budgets 10 and 100
    python -m ecab.bench.throughput --concurrency 1024 --budgets 100 --runners local --processes 1,auto --warm both
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from ecab.core.machine import resident_mb, usable_cores
from ecab.core.process_env import configure_process_env


class PeakRss:
    """Resident memory peak while the block runs, sampled every 50 ms (the kernel's own peak, ru_maxrss, is the
    whole process lifetime's, so it says nothing about a case that follows a bigger one). `measure`: this
    process by default, or e.g. a process tree's total."""

    def __init__(self, measure=resident_mb):
        self.measure = measure

    def __enter__(self) -> "PeakRss":
        import threading

        self.base = self.peak = self.measure()
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.05):
            self.peak = max(self.peak, self.measure())
            self.samples += 1

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.measure())

    @property
    def growth_mb(self) -> float:
        return max(0.0, self.peak - self.base)


class CpuTimeline:
    """Cumulative CPU seconds sampled every 0.5 s while the block runs: the harness's process tree (without the
    simulator's subtree), the simulator's, and the whole machine's busy time, so that CPU can be counted over
    the same steady-state window as the episodes/s. The sampler's own CPU (it runs in this process, the root
    of the harness's tree) is taken out of the harness's."""

    def __init__(self, root: int, simulator: int, every_s: float = 0.5):
        self.root, self.simulator, self.every_s = root, simulator, every_s
        self.samples: list[tuple[float, float, float, float]] = []   # (time, harness, simulator, machine)
        self._own_cpu = 0.0

    def _sample(self) -> None:
        from ecab.bench.process_tree import machine_busy_seconds, tree_cpu_seconds

        started = time.thread_time()
        harness = tree_cpu_seconds(self.root, {self.simulator})
        simulator = tree_cpu_seconds(self.simulator)
        machine = machine_busy_seconds()
        self._own_cpu += time.thread_time() - started
        self.samples.append((time.time(), harness - self._own_cpu, simulator, machine))

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self._sample()

    def __enter__(self) -> "CpuTimeline":
        import threading

        self._stop = threading.Event()
        self._sample()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    def at(self, when: float) -> tuple[float, float, float]:
        """(harness, simulator, machine) cumulative CPU seconds at wall time `when`, interpolated."""
        samples = self.samples
        if when <= samples[0][0]:
            return samples[0][1:]
        for before, after in zip(samples, samples[1:]):
            if when <= after[0]:
                share = (when - before[0]) / max(1e-9, after[0] - before[0])
                return tuple(b + share * (a - b) for b, a in zip(before[1:], after[1:]))
        return samples[-1][1:]

    def cores(self, start: float, end: float) -> dict[str, float]:
        """Cores used between two wall times: by the harness, by the simulator, by every other process."""
        first, last = self.at(start), self.at(end)
        span = max(1e-9, end - start)
        harness, simulator, machine = ((b - a) / span for a, b in zip(first, last))
        return {"harness": harness, "simulator": simulator, "others": max(0.0, machine - harness - simulator)}


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


def sim_model_cfg(base_url: str, concurrency: int):
    """conf/model/sim.yaml's typed section pointed at a running simulator (no `sim` block: nothing to start)."""
    import dataclasses

    from ecab.config import EndpointModelConfig, load_config, parse

    model = parse(load_config(["model=sim"])).model
    assert isinstance(model, EndpointModelConfig)
    return dataclasses.replace(model, base_url=base_url, concurrency=concurrency,
                               max_attempts=50, max_retry_wait_s=5.0, timeout_s=120, wall_clock_s=None, sim=None)


def sim_config(latency_s: float, rpm: float | None) -> dict:
    return {"latency": "fixed", "latency_ms": latency_s * 1000, "rate_429": 0.0, "rate_5xx": 0.0, "rpm": rpm,
            "tpm": None, "retry_after_s": 0.05,
            "malformed": {"invalid_json": 0.0, "two_calls": 0.0, "no_tool_call": 0.0, "unknown_tool": 0.0}}


class Setup:
    """The catalog and tasks every case shares (built once into the cache)."""

    def __init__(self, overrides: list[str]):
        from ecab.config import load_config, parse
        from ecab.run import load_tasks, open_catalog

        self.cfg = parse(load_config(["model=heuristic", "run.progress=false", *overrides]))
        self.catalog = open_catalog(self.cfg)
        self.tasks = load_tasks(self.cfg, self.catalog)
        self.catalog.search("warm up the query embedder", limit=1)   # so it is not counted as episode memory

    def units(self, n: int, budget: int, model: str):
        from ecab.core.unit import make_units

        trials = -(-n // len(self.tasks))
        return make_units([t.id for t in self.tasks], model, budget, 0, trials)[:n]


def search_p95s(records: list[tuple[float, object]], concurrency: int) -> dict[str, float | None]:
    """p95 search latencies of the C episodes that started first (start = finish - wall time), the burst when C
    episodes start together, and of every later episode, the steady state they are compared with: of each
    episode's first search (the shopper's request) and of all its searches. None where there were none."""
    started = sorted(records, key=lambda r: r[0] - r[1].wall_s)
    first_wave, later = [t for _, t in started[:concurrency]], [t for _, t in started[concurrency:]]
    return {"first_wave_first": _first_search_p95(first_wave), "later_first": _first_search_p95(later),
            "first_wave_all": _p95(_searches(first_wave)), "later_all": _p95(_searches(later))}


def _searches(trajectories: list) -> list[float]:
    return [s.tool_latency_s for traj in trajectories for s in traj.steps
            if s.tool == "search_products" and s.tool_latency_s is not None]


def _first_search_p95(trajectories: list) -> float | None:
    return _p95([next(iter(_searches([traj])), None) for traj in trajectories])


def _p95(values: list) -> float | None:
    values = sorted(x for x in values if x is not None)
    return values[min(len(values) - 1, int(0.95 * len(values)))] if values else None


def local_runner(setup: Setup, episode, concurrency: int, limits, processes: int, warm: bool, admission: bool,
                 delay_s: float | None = None):
    from ecab.runner.admission import AdmissionSettings
    from ecab.runner.local import LocalRunner
    from ecab.runner.local_processes import ProcessesRunner

    gate = AdmissionSettings(enabled=admission)
    if delay_s is not None:
        gate.target_delay_s = delay_s

    if processes > 1:   # its children open the catalog themselves: cold caches
        return ProcessesRunner(episode, processes=processes, concurrency=concurrency, limits=limits,
                               progress=False, warm_queries=warm, admission=gate)
    setup.catalog.clear_caches()   # every case starts cold, as runner=ray's fresh actors and new processes do
    return LocalRunner(episode, concurrency=concurrency, limits=limits, progress=False, warm_queries=warm,
                       admission=gate)


def run_case(setup: Setup, runner: str, concurrency: int, latency_s: float, budget: int, n_units: int,
             rpm: float | None, workers: int, replicas: int = 1, processes: int = 1, warm: bool = True,
             admission: bool = True, delay_s: float | None = None) -> dict:
    from ecab.bench.process_tree import tree_rss_mb
    from ecab.env.episode import EpisodeSettings
    from ecab.llm.limits import LimiterSettings
    from ecab.runner.episode import EpisodeOptions
    from ecab.runs import RunFolder
    from ecab.sim.process import SimProcess

    settings = EpisodeSettings(budget=budget)
    limits = LimiterSettings(max_concurrency=max(concurrency, 1))
    tasks = {t.id: t for t in setup.tasks}
    finished: list[tuple[float, object]] = []      # (finish time, trajectory)
    # The endpoint runs in its own process (a real one is another machine), so that its request handling
    # is not counted as harness cost on the harness's GIL.
    with SimProcess(sim_config(latency_s, rpm)) as sim, tempfile.TemporaryDirectory() as tmp:
        model = sim_model_cfg(sim.base_url, concurrency)
        units = setup.units(n_units, budget, model.name)
        folder = RunFolder(Path(tmp) / "run").create()
        episode = EpisodeOptions(model_cfg=model, tool_options={"search_mode": setup.cfg.tools.search})
        harness = os.getpid(), {sim.pid}   # root, excluded subtree
        timeline = CpuTimeline(os.getpid(), sim.pid).__enter__()
        started = time.monotonic()

        def on_done(traj) -> None:
            finished.append((time.time(), traj))

        if runner == "local":
            run = local_runner(setup, episode, concurrency, limits, processes, warm, admission, delay_s)
            with PeakRss(lambda: tree_rss_mb(*harness)) as memory:
                stats = run.run(units, tasks, setup.catalog, folder, settings, on_done=on_done)
            search_cache = setup.catalog.search_cache_stats() if processes == 1 else {}
            memory_mb = memory.growth_mb
        else:
            from ecab.config import load_config, parse
            from ecab.runner.ray import RayRunner

            options = parse(load_config(["runner=ray", f"runner.workers={workers}",
                                         f"runner.concurrency={concurrency}"])).runner
            stats = RayRunner(episode, options, limits=limits,
                              replicas=replicas, progress=False).run(units, tasks, setup.catalog, folder, settings,
                                                                     on_done=on_done)
            search_cache = stats.cluster.search_cache
            memory_mb = sum(max(0.0, m["rss_peak_mb"] - m["rss_start_mb"]) for m in stats.cluster.worker_memory_mb)
        wall = time.monotonic() - started
        timeline.__exit__(None, None, None)   # before the simulator is reaped: its CPU would join ours
        limiter = next(iter(stats.limiters.values()), {})
        trajs = list(folder.latest_trajectories().values())
    failed = sum(1 for t in trajs if t.termination in ("infra_error", "agent_error"))
    n_steps = max(1, sum(len(t.steps) for t in trajs))
    steps = n_steps / max(1, len(trajs))
    llm_s = sum(s.agent_latency_s or 0.0 for t in trajs for s in t.steps) / n_steps
    tool_s = sum(s.tool_latency_s or 0.0 for t in trajs for s in t.steps) / n_steps
    wall_s = sum(t.wall_s or 0.0 for t in trajs) / n_steps
    finishes = [f for f, _ in finished]
    rate = steady_rate(finishes, concurrency)
    ideal = concurrency / (steps * latency_s) if steps else 0.0
    cores = usable_cores()
    # CPU over the same steady window as the rate (start-up and the tail left out): the machine's CPU limit is
    # every core busy with the harness and the simulator (which shares this machine; a real endpoint would
    # not) at the CPU per episode measured in that window. What other processes got is printed beside it: run
    # anything else at a low priority and it is the CPU the harness left idle.
    window = (min(finishes), steady_end(finishes, concurrency)) if finishes else (0.0, 0.0)
    if window[1] - window[0] < 2.0:
        window = (timeline.samples[0][0], timeline.samples[-1][0])
    used = timeline.cores(*window)
    others_cores = used["others"]
    cpu_per_episode = (used["harness"] + used["simulator"]) / rate if rate else 0.0
    cpu_limit = cores / cpu_per_episode if cpu_per_episode else 0.0
    searches = search_p95s(finished, concurrency)
    return {"runner": runner, "processes": processes if runner == "local" else None, "warm": warm,
            "admission": stats.admission,
            "C": concurrency, "budget": budget, "episodes": len(trajs), "failed": failed, "steps": steps,
            "eps_per_s": rate, "ideal_eps_per_s": ideal, "cpu_limit_eps_per_s": cpu_limit, "cores": cores,
            "others_cores": others_cores, "harness_cores": used["harness"],
            "harness_cpu_ms_per_turn": 1000 * used["harness"] / (rate * steps) if rate else 0.0,
            "sim_cpu_ms_per_turn": 1000 * used["simulator"] / (rate * steps) if rate else 0.0,
            "wall_s": wall, "limiter": limiter, "runner_processes": stats.processes,
            "search_p95_s": searches,
            "rpm_limit": rpm, "admitted_per_s": admitted_rate(sim.stats.get("admitted_per_ds", {}),
                                                              steady_end([f for f, _ in finished], concurrency)),
            "memory_per_episode_mb": memory_mb / concurrency,
            "search_hit_rate": (search_cache.get("hits", 0) / max(1, sum(search_cache.values()))
                                if search_cache else None),
            # where a step's time goes: the LLM call (limiter wait included), the tool, and the rest
            "step_s": {"llm": llm_s, "tool": tool_s, "other": max(0.0, wall_s - llm_s - tool_s)}}


def runner_label(row: dict) -> str:
    if row["runner"] != "local":
        return row["runner"]
    admitted = row.get("admission") or {}
    return (f"local/{row['processes']}p" + ("" if row["warm"] else " cold")
            + ("" if admitted.get("enabled", True) else " all-in"))


def print_throughput(row: dict) -> None:
    bound = min(row["ideal_eps_per_s"], row["cpu_limit_eps_per_s"] or row["ideal_eps_per_s"])
    share = row["eps_per_s"] / bound if bound else 0.0
    p95 = row["search_p95_s"]
    print(f"{runner_label(row):>13}  C={row['C']:<5} b={row['budget']:<4} {row['eps_per_s']:7.2f} ep/s  "
          f"ideal {row['ideal_eps_per_s']:7.2f}  CPU limit {row['cpu_limit_eps_per_s']:7.2f}  "
          f"-> {100 * share:5.1f}% of the lower  CPU/turn {row['harness_cpu_ms_per_turn']:5.1f} ms "
          f"(+ sim {row['sim_cpu_ms_per_turn']:4.1f})  cores used {row['harness_cores']:.2f}, "
          f"idle or to others {row['others_cores']:.2f}  search p95, first / all: first wave {_ms(p95['first_wave_first'])} / "
          f"{_ms(p95['first_wave_all'])}, later {_ms(p95['later_first'])} / {_ms(p95['later_all'])}  steps {row['steps']:.1f}  "
          f"failed {row['failed']}/{row['episodes']}  memory {row['memory_per_episode_mb']:.2f} MB/ep  "
          f"({row['wall_s']:.0f} s)", flush=True)
    split = row["step_s"]
    hits = "-" if row["search_hit_rate"] is None else f"{100 * row['search_hit_rate']:.0f}%"
    admitted = row.get("admission") or {}
    gate = (f"; in flight: mean {admitted['mean_in_flight']:.0f}, peak {admitted['peak_in_flight']} of "
            f"{admitted['limit']}, queueing delay p95 {admitted['delay_p95_ms']} ms"
            if admitted.get("enabled") else "")
    print(f"{'':>13}  per step: LLM call {split['llm']:.3f} s, tool {split['tool']:.3f} s, "
          f"other {split['other']:.3f} s; search pages from cache {hits}{gate}", flush=True)


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{1000 * seconds:.0f} ms"


def print_rate_limited(row: dict) -> None:
    limit = row["rpm_limit"] / 60.0
    achieved, whole_run = row["admitted_per_s"], row["limiter"].get("ok_per_s", 0.0)
    print(f"{runner_label(row):>13}  C={row['C']:<5} admitted {achieved:7.2f} req/s vs RPM limit {limit:7.2f} req/s "
          f"({100 * achieved / limit:5.1f}%; whole run with the ramp-down {whole_run:.1f} req/s)  "
          f"429s {row['limiter'].get('throttled', 0)}  "
          f"window now {row['limiter'].get('window', 0):.0f} (min {row['limiter'].get('min_window', 0):.0f})  "
          f"failed {row['failed']}/{row['episodes']}", flush=True)


def parse_list(text: str, cast=str) -> list:
    return [cast(x.strip()) for x in text.split(",") if x.strip()]


ON_OFF = {"on": [True], "off": [False], "both": [False, True]}


def local_variants(processes: list[str], concurrency: int, warm: str,
                   admission: str = "on") -> list[tuple[int, bool, bool]]:
    """runner=local's (processes, warm, admission) cases at this C: `auto` resolved as runner.processes=auto
    would, a count that repeats another case's once."""
    from ecab.runner.factory import episode_processes

    counts = list(dict.fromkeys(episode_processes(p, concurrency, usable_cores()) for p in processes))
    return [(count, w, a) for count in counts for w in ON_OFF[warm] for a in ON_OFF[admission]]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="ecab throughput benchmark (simulated endpoint)")
    parser.add_argument("--latency", type=float, default=1.0, help="simulated latency L per LLM call, s")
    parser.add_argument("--concurrency", default="64,256,1024", help="episodes in flight, comma-separated")
    parser.add_argument("--runners", default="local,ray")
    parser.add_argument("--processes", default="1,auto",
                        help="runner=local's episode processes per case, comma-separated (auto: as runner.processes=auto)")
    parser.add_argument("--budgets", default="10,100",
                        help="tool-call budgets per episode, comma-separated: 10 caps an episode's steps, 100 is "
                             "the default full-length episode")
    parser.add_argument("--warm", choices=("on", "off", "both"), default="on",
                        help="runner=local's first-query warm-up (both: each case without and with it)")
    parser.add_argument("--admission", choices=("on", "off", "both"), default="on",
                        help="runner=local's episode admission (off: all C start at once; both: each case "
                             "without and with it)")
    parser.add_argument("--admission-delay-ms", type=float, default=None,
                        help="the queueing delay admission holds the harness under (default: runner.admission's)")
    parser.add_argument("--waves", type=float, default=3.0, help="episodes per case = waves x C")
    parser.add_argument("--rpm", type=float, default=None,
                        help="RPM limit of the rate-limited case (default: half the demand at C=256)")
    parser.add_argument("--no-rate-limited", action="store_true", help="skip the rate-limited case")
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
    concurrencies = parse_list(args.concurrency, int)
    runners, budgets = parse_list(args.runners), parse_list(args.budgets, int)
    setup = Setup(args.overrides)
    replicas = args.replicas or setup.cfg.catalog.replicas
    print(f"ecab throughput: L={args.latency} s, budgets {budgets}, {len(setup.tasks)} tasks, "
          f"catalog {setup.catalog.count()} products, search {setup.cfg.tools.search}, {usable_cores()} usable "
          f"cores, load {os.getloadavg()[0]:.1f}; ray: {args.workers} workers, {replicas} catalog replica(s)",
          flush=True)
    print("-- throughput (no rate limit); % is of the lower of the ideal C / (steps x L) and the CPU limit, "
          "cores / (harness + simulator CPU per episode), both measured over "
          "the steady window of the rate", flush=True)
    for budget in budgets:
        for concurrency in concurrencies:
            for runner in runners:
                variants = local_variants(parse_list(args.processes), concurrency, args.warm, args.admission) \
                    if runner == "local" else [(1, True, True)]
                for processes, warm, admission in variants:
                    print_throughput(run_case(setup, runner, concurrency, args.latency, budget,
                                              int(args.waves * concurrency), None, args.workers, replicas,
                                              processes=processes, warm=warm, admission=admission,
                                              delay_s=None if args.admission_delay_ms is None
                                              else args.admission_delay_ms / 1000))
    if args.no_rate_limited:
        return
    rate_c = 256 if 256 in concurrencies else concurrencies[0]
    rpm = args.rpm or 0.5 * 60 * rate_c / args.latency
    print(f"-- rate limited: simulator RPM {rpm:.0f} ({rpm / 60:.1f} req/s), demand C/L = {rate_c / args.latency:.0f} "
          f"req/s, budget {budgets[0]}")
    for runner in runners:
        processes = local_variants(["auto"], rate_c, "on")[0][0] if runner == "local" else 1
        print_rate_limited(run_case(setup, runner, rate_c, args.latency, budgets[0], int(args.waves * rate_c),
                                    rpm, args.workers, replicas, processes=processes))


if __name__ == "__main__":
    main()

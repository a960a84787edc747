"""runner=ray on a real two-node Ray cluster on this machine (ray.cluster_utils.Cluster): the released
samples with catalog=targets over 2 shards x 2 replicas, end to end; identical trajectories and summary
to runner=local; and a run that loses a catalog actor and an episode worker mid-run and still completes with
the same results; both runners keep the one runner protocol (ecab/runner/protocol.py). One cluster for the
module."""
import json
from pathlib import Path

import pytest

from ecab.config import load_config
from ecab.core.unit import unit_key
from ecab.run import judge_and_reduce, load_tasks, open_catalog, prepare_folder, run_episodes, validate
from ecab.runner.protocol import RunnerStats
from ecab.runs import RunFolder
from ecab.schema import Trajectory

# Starts a Ray of its own: one at a time under pytest-xdist (`--dist loadgroup`, the Makefile's XDIST).
pytestmark = pytest.mark.xdist_group("ray")

BASE = ["model=heuristic", "catalog=targets", "benchmark=file", "catalog.products=150",
        "catalog.shards=2", "benchmark.limit=8", "budget=30", "run.progress=false"]
RAY = ["runner=ray", "runner.workers=2", "runner.concurrency=4"]
TIMING_KEYS = ("wall_s", "tool_latency_s", "agent_latency_s", "latency", "seconds")  # seconds: the task audit's time


@pytest.fixture(scope="module")
def ray_cluster():
    import ray
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    cluster.add_node(num_cpus=1)
    ray.init(address=cluster.address)
    yield cluster
    ray.shutdown()
    cluster.shutdown()


@pytest.fixture(scope="module")
def base(tmp_path_factory, released_samples):
    """The module's overrides: the released samples, their targets as the catalog, one cache for all runs."""
    return [*BASE, f"benchmark.path={released_samples}", f"cache_dir={tmp_path_factory.mktemp('ray-cache')}"]


def run_stages(base, run_dir, *overrides, on_done=None, pool=None):
    """The main job's stages (main_job, with a hook into the episode stage)."""
    cfg = load_config([*base, f"run.dir={run_dir}", *overrides])
    cfg = validate(cfg)
    catalog = open_catalog(cfg)
    tasks = load_tasks(cfg, catalog)
    folder = prepare_folder(cfg, tasks, catalog)
    stats = run_episodes(cfg, tasks, catalog, folder, on_done=on_done, catalog_pool=pool)
    summary = judge_and_reduce(cfg, tasks, catalog, folder)
    return folder, stats, summary


def untimed(value):
    """The record without wall-clock fields (they differ between any two runs)."""
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if k not in TIMING_KEYS and k != "runner"}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


def trajectories(folder: RunFolder) -> dict:
    return {key: untimed(json.loads(json.dumps(t.to_dict()))) for key, t in folder.latest_trajectories().items()}


@pytest.fixture(scope="module")
def pool(ray_cluster, base):
    """2 shards x 2 replicas of catalog actors, shared by the module's Ray runs (as a budget study does)."""
    from ecab.runner.ray_catalog import CatalogPool

    catalog = open_catalog(load_config(base))
    pool = CatalogPool(Path(catalog.path).resolve(), catalog.meta, replicas=2)
    yield pool
    pool.shutdown()


@pytest.fixture(scope="module")
def local_run(base, tmp_path_factory):
    """runner=local's run of the module's units, with the trajectories its on_done saw."""
    seen = []
    return (*run_stages(base, tmp_path_factory.mktemp("runs-local"), "run.name=local", on_done=seen.append), seen)


def keeps_the_runner_protocol(stats, folder: RunFolder, seen: list, summary: dict) -> None:
    """on_done got each finished Trajectory once, as stored in the run folder; the runner returned RunnerStats,
    recorded as the manifest's runner_stats and the summary's runner."""
    assert type(stats) is RunnerStats
    assert all(type(t) is Trajectory for t in seen)
    stored = folder.latest_trajectories()
    assert sorted(unit_key(t.unit, t.id) for t in seen) == sorted(stored)
    assert all(t.to_dict() == stored[unit_key(t.unit, t.id)].to_dict() for t in seen)
    assert json.loads(folder.manifest_path.read_text())["runner_stats"] == stats.to_dict() == summary["runner"]


@pytest.mark.slow
def test_two_node_ray_run_matches_local_through_one_runner_protocol(ray_cluster, local_run, pool, base, tmp_path):
    import ray

    assert len([n for n in ray.nodes() if n["Alive"]]) == 2
    seen = []
    folder, stats, summary = run_stages(base, tmp_path, *RAY, "run.name=ray", pool=pool, on_done=seen.append)
    local_folder, local_stats, local_summary, local_seen = local_run
    assert stats.runner == "ray" and stats.cluster.catalog_shards == 2 and stats.cluster.catalog_replicas == 2
    assert stats.cluster.nodes == 2, "actors should spread over both nodes"
    assert stats.retried_units == 0 and stats.catalog_actor_restarts == 0
    assert len(list(folder.trajectories_dir.glob("part-ray-w*.jsonl.gz"))) == 2, "one part file per worker"
    assert summary["total_samples"] == 8
    assert trajectories(folder) == trajectories(local_folder)
    assert untimed(summary) == untimed(local_summary)
    keeps_the_runner_protocol(stats, folder, seen, summary)
    keeps_the_runner_protocol(local_stats, local_folder, local_seen, local_summary)
    # The keys runner_stats has always had: the runner's own counts, and on Ray the cluster's.
    common = {"runner", "concurrency", "retried_units", "infra_reruns", "requeued_units", "catalog_actor_restarts",
              "limiters", "resumed_units"}
    assert set(local_stats.to_dict()) == common | {"admission"}   # runner=local's episode admission
    assert set(stats.to_dict()) == common | {"workers", "nodes", "catalog_shards", "catalog_replicas",
                                             "worker_deaths", "worker_restarts", "catalog_retried_calls",
                                             "worker_memory_mb", "search_cache"}


@pytest.mark.slow
def test_killed_catalog_actor_and_worker_lose_nothing(ray_cluster, local_run, pool, base, tmp_path, monkeypatch):
    import ray

    from ecab.runner import factory

    runners, killed, done = [], {}, []
    real_ray_runner = factory.RUNNERS["ray"]
    monkeypatch.setitem(factory.RUNNERS, "ray", lambda *args: runners.append(real_ray_runner(*args)) or runners[-1])

    def saboteur(traj: Trajectory):
        done.append(traj)
        driver = runners[0].driver
        if len(done) == 1:
            # A catalog actor dies with calls in flight: Ray restarts it, the client retries elsewhere.
            ray.kill(driver.pool.actors[0][0], no_restart=False)
            killed["catalog"] = True
        if len(done) == 2:
            # An episode worker dies with units in flight: they are queued again on a replacement.
            victim = next(w for w in driver.workers if w.alive and w.in_flight)
            killed["worker_in_flight"] = victim.in_flight
            ray.kill(victim.handle)

    folder, stats, summary = run_stages(base, tmp_path, *RAY, "runner.step_delay_s=0.05",
                                        "run.name=faults", on_done=saboteur, pool=pool)
    assert killed["catalog"] and killed["worker_in_flight"] >= 1
    assert stats.catalog_actor_restarts >= 1
    assert stats.cluster.worker_deaths == 1 and stats.cluster.worker_restarts == 1
    # Not every unit it held at the kill is lost: results already back (in the batch being processed when
    # the saboteur ran) still count, and units handed to it before its death showed are lost too. What must
    # hold: some were queued again and re-run, and below, exactly one trajectory per unit.
    assert stats.requeued_units >= 1 and stats.retried_units >= 1
    local_folder, _, local_summary, _ = local_run
    assert trajectories(folder) == trajectories(local_folder), "exactly one trajectory per unit, same as local"
    assert untimed(summary) == untimed(local_summary)
    manifest = json.loads(folder.manifest_path.read_text())
    assert manifest["runner_stats"]["requeued_units"] == stats.requeued_units


# ------------------------------------------------------------------------------- the adaptive limiter

def test_limiter_shrinks_on_429_pauses_for_retry_after_and_frees_the_slot_while_backing_off():
    import asyncio

    from conftest import run_in_virtual_time
    from ecab.llm.limits import AdaptiveLimiter, LimiterSettings

    async def scenario():   # in virtual time (conftest.VirtualTimeLoop): waits are the scheduled ones, not load's
        clock = asyncio.get_running_loop().time
        limiter = AdaptiveLimiter(LimiterSettings(max_concurrency=4, decrease=0.5), clock=clock)
        for _ in range(4):
            await limiter.acquire()
        blocked = asyncio.create_task(limiter.acquire())
        await asyncio.sleep(0.01)
        assert not blocked.done(), "a fifth call waits for a slot"
        # A 429: the slot is released (the caller backs off outside it), the window halves, and no new
        # call starts before Retry-After has passed.
        started = clock()
        limiter.release("throttled", retry_after=0.2, latency_s=0.05)
        assert limiter.window == 2.0 and limiter.in_flight == 3
        limiter.release("ok")
        limiter.release("ok")
        await asyncio.wait_for(blocked, 2)
        assert clock() - started >= 0.2, "Retry-After honoured"
        assert limiter.in_flight == 2
        # Successes grow the window back additively, never past the maximum.
        for _ in range(50):
            limiter.release("ok")
            await limiter.acquire()
        assert 2.0 < limiter.window <= 4.0
        return limiter.describe()

    stats = run_in_virtual_time(scenario())
    assert stats["throttled"] == 1 and stats["ok"] == 52 and stats["min_window"] == 2.0


@pytest.mark.slow
def test_workers_share_one_endpoint_window_through_the_limiter_actor(ray_cluster):
    """Two workers' SyncedLimiters and one LimiterService actor: calls need no actor round trip, but a 429
    seen by one worker shrinks both workers' windows and pauses both; the actor counts every outcome."""
    import asyncio
    import time

    import ray

    from ecab.llm.limits import NEW_CALL_GRACE, LimiterService, LimiterSettings, SyncedLimiter

    settings = LimiterSettings(max_concurrency=8, decrease=0.5)
    actor = ray.remote(LimiterService).options(num_cpus=0).remote({"max_concurrency": 8, "decrease": 0.5})

    async def scenario():
        a, b = SyncedLimiter(actor, "a", settings), SyncedLimiter(actor, "b", settings)
        for limiter in (a, b):               # both report once, so the actor knows two workers share it
            await limiter.acquire()
            limiter.release("ok")
            await limiter.flush()
        await a.flush()                      # a reported before b existed; now it hears of b
        assert a.local.window == b.local.window == 4.0      # 8 shared by 2 active workers
        await a.acquire()
        # Timed from the 429 itself, so the Ray round trips of the flushes (slow on a loaded machine) fall
        # inside the pause: a lower bound only, which load cannot break.
        started = time.monotonic()
        a.release("throttled", retry_after=0.3)            # only worker a saw the 429
        await a.flush()
        await b.flush()
        # One call was in flight when the 429 came back: the window drops to what was in use, halved,
        # floored at one call per worker.
        assert b.local.window == 1.0 and a.local.window == 1.0
        await b.acquire()                                  # b waits out the pause it never saw itself
        waited = time.monotonic() - started
        b.release("ok")
        await a.flush()
        await b.flush()
        return waited

    waited = asyncio.run(scenario())
    assert waited >= 0.3 * (1 + NEW_CALL_GRACE) - 0.1
    stats = ray.get(actor.stats.remote())
    # The endpoint window itself stays at the 2 calls the endpoint had just served (AimdWindow.served_window).
    assert stats["ok"] == 3 and stats["throttled"] == 1 and stats["min_window"] == 2.0


def test_a_tasks_units_go_to_one_worker_and_an_idle_worker_takes_from_the_longest_queue():
    from ecab.runner.ray_driver import TaskAffineQueue

    units = [{"task_id": f"t{t}", "trial": k} for k in range(3) for t in range(8)]
    queue = TaskAffineQueue(units, 2)
    homes = {u["task_id"]: queue.home(u) for u in units}
    assert set(homes.values()) == {0, 1}
    taken = [queue.pop_for(0) for _ in range(sum(1 for u in units if homes[u["task_id"]] == 0))]
    assert {homes[u["task_id"]] for u in taken} == {0}          # its own tasks first, in order
    assert [u["trial"] for u in taken if u["task_id"] == taken[0]["task_id"]] == [0, 1, 2]
    stolen = queue.pop_for(0)                                   # nothing of its own left: steals
    assert homes[stolen["task_id"]] == 1 and len(queue) == len(units) - len(taken) - 1
    queue.push(stolen, front=True)                              # a lost unit goes back to the front
    assert queue.pop_for(1) == stolen


@pytest.mark.slow
def test_a_one_shard_catalog_answers_a_hybrid_search_in_one_actor_call_with_the_local_pages(ray_cluster, base):
    from ecab.runner.ray_catalog import CatalogPool, remote_catalog

    catalog = open_catalog(load_config([*base, "catalog.shards=1"]))
    pool = CatalogPool(Path(catalog.path).resolve(), catalog.meta, replicas=1)
    try:
        remote = remote_catalog(catalog.meta, pool.actors, mode="hybrid")
        calls = []
        client = remote.shards[0]
        real_send = client._send
        client._send = lambda method, *args: calls.append(method) or real_send(method, *args)
        for query, offset in [("wireless earbuds", 0), ("stainless steel water bottle", 10), ("gift for a cook", 0)]:
            here = catalog.search(query, limit=10, offset=offset, mode="hybrid")
            there = remote.search(query, limit=10, offset=offset, mode="hybrid")
            assert [(h.product_id, round(h.score, 6)) for h in there.hits] == \
                [(h.product_id, round(h.score, 6)) for h in here.hits] and there.total == here.total
        assert calls == ["hybrid_candidates"] * 3
    finally:
        pool.shutdown()

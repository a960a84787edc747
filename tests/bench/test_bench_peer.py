"""The peer benchmark (ecab/bench/peer.py): its ecab side, its figures and its identical-calls check.

The fast tests run ecab's side in this process (peer_case.run_side, what the side's own process runs) on a
few tasks of a small catalog against the simulator, and check the comparison on their records. inspect_ai's
side needs its own virtual environment (peer_env.py: inspect_ai and its dependencies, ~360 MB, one to a few
minutes of pip), so the end-to-end run of `python -m ecab.bench.peer` with both sides is marked slow: it
makes that environment once in the default cache (<cache_dir>/bench/peer-venv, reused by later runs and by
the benchmark itself) and is skipped, with pip's reason, when it cannot be made - except under CI=true,
where it fails, since CI reaches the package registry.
"""
from __future__ import annotations

import copy
import json
import os

import pytest

from ecab.bench.peer import main as peer_main, side_row
from ecab.bench.peer_case import run_side
from ecab.bench.peer_records import identical_calls
from ecab.bench.throughput import sim_config, sim_model_cfg
from ecab.sim.process import SimProcess

IN_CI = os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")
TASKS = 4


@pytest.fixture(scope="module")
def small_overrides(tmp_path_factory):
    cache = tmp_path_factory.mktemp("peer-cache")
    return ["catalog.products=600", "benchmark.n_per_intent=1", f"benchmark.limit={TASKS}", f"cache_dir={cache}"]


@pytest.fixture(scope="module")
def ecab_results(small_overrides):
    """ecab's side at C=2 and C=4 (two waves of the 4 tasks, then one), against one simulator."""
    with SimProcess(sim_config(0.01, None)) as sim:
        spec = {"side": "ecab", "base_url": sim.base_url, "budget": 100, "overrides": small_overrides,
                "model_id": sim_model_cfg(sim.base_url, 1).model_id}
        results = [run_side({**spec, "concurrency": c, "episodes": TASKS}) for c in (2, 4)]
    return results, sim.stats


@pytest.mark.slow
def test_ecab_side_runs_every_episode_and_records_its_calls(ecab_results):
    (at2, at4), stats = ecab_results
    for result in (at2, at4):
        assert result["units"] == len(result["episodes"]) == TASKS and result["errors"] == []
        assert {r["task_id"] for r in result["episodes"]} and not any(r["failed"] for r in result["episodes"])
        for record in result["episodes"]:
            assert record["turns"] >= len(record["calls"]) > 1
            assert record["calls"][-1][0] == "recommend_product"
            name, arguments, digest = record["calls"][0]
            assert json.loads(arguments) is not None and len(digest) == 16
        assert result["cpu_s"] > 0 and result["peak_rss_mb"] > 0
    row = side_row(at4, stats["admitted_per_ds"], 0.01)
    assert row["failed"] == 0 and row["turns_per_episode"] > 1
    assert row["eps_per_s"] > 0 and row["ideal_eps_per_s"] == 4 / (row["turns_per_episode"] * 0.01)
    assert row["cpu_ms_per_turn"] > 0


@pytest.mark.slow
def test_same_tasks_make_identical_calls_at_any_concurrency(ecab_results):
    (at2, at4), _ = ecab_results
    check = identical_calls({"ecab@2": at2["episodes"], "ecab@4": at4["episodes"]})
    assert check == {"tasks": TASKS, "identical": TASKS, "differing": []}


@pytest.mark.slow
def test_a_different_call_result_or_a_failure_is_not_identical(ecab_results):
    (at2, at4), _ = ecab_results
    other = copy.deepcopy(at4["episodes"])
    changed, failed = other[0]["task_id"], other[1]["task_id"]
    other[0]["calls"][0][2] = "0" * 16                   # one result differs
    other[1]["failed"] = True
    check = identical_calls({"a": at2["episodes"], "b": other})
    assert check["identical"] == TASKS - 2 and set(check["differing"]) == {changed, failed}
    missing = identical_calls({"a": at2["episodes"], "b": other[2:]})   # a task run on one side only
    assert changed in missing["differing"] and failed in missing["differing"]


def test_rates_are_measured_while_every_slot_was_busy():
    # 4 episodes of 10 turns at C=2, started at t=100 s: 20 requests per second admitted until the second
    # finish (t=101 s), when fewer than C were left; the ramp-down after it does not count.
    bins = {str(1000 + ds): 2 for ds in range(10)}
    bins.update({str(1010 + ds): 1 for ds in range(10)})
    bins["990"] = 50                                      # another case's requests, before this one started
    records = [{"task_id": str(i), "trial": 0, "finished_at": t, "turns": 10, "failed": False, "calls": []}
               for i, t in enumerate((100.5, 101.0, 101.5, 102.0))]
    result = {"concurrency": 2, "units": 4, "episodes": records, "started_at": 100.0, "cpu_s": 0.4,
              "rss_before_mb": 1.0, "peak_rss_mb": 1.0, "wall_s": 2.0, "errors": [], "versions": {}}
    row = side_row(result, bins, latency_s=0.1)
    assert row["llm_turns_per_s"] == 20.0 and row["eps_per_s"] == 2.0
    assert row["ideal_eps_per_s"] == 2 / (10 * 0.1) and row["share_of_ideal"] == 1.0
    assert row["cpu_ms_per_turn"] == 10.0


@pytest.mark.slow
def test_peer_benchmark_end_to_end_with_inspect_ai(small_overrides, tmp_path, capsys):
    from ecab.bench.peer_env import PeerEnvError, ensure_peer_env

    try:
        ensure_peer_env()
    except PeerEnvError as exc:
        if IN_CI:
            raise
        pytest.skip(f"inspect_ai's virtual environment could not be made: {exc}")
    out = tmp_path / "peer.json"
    assert peer_main(["--concurrency", "2", "--latency", "0.01", "--out", str(out), *small_overrides]) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    (case,) = report["cases"]
    assert case["identical"] == {"tasks": 2, "identical": 2, "differing": []}
    for side in ("ecab", "inspect"):
        row = case["sides"][side]
        assert row["failed"] == 0 and row["episodes"] == 2 and row["eps_per_s"] > 0, row
    assert case["sides"]["inspect"]["versions"]["inspect_ai"]
    printed = capsys.readouterr().out
    assert "identical tool calls and results per task: 2/2" in printed and str(out) in printed

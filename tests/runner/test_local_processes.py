"""runner=local over several episode processes (ecab/runner/local_processes.py): the units' split, the shares of
the limiter window, `runner.processes`, and end to end: the same results as one process, one part file per
process, a killed episode process ending the run with one line and a rerun resuming, and children that exit
with their parent."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import SMALL_RUN, untimed
from ecab.config import ConfigError, load_config, parse
from ecab.core.unit import make_units
from ecab.llm.limits import LimiterSettings
from ecab.run import main_job
from ecab.runner.factory import EPISODES_PER_LOOP, episode_processes
from ecab.runner.factory import make_runner
from ecab.runner.local_processes import limiter_share, merge_admission, merge_limiter_stats, split_units
from ecab.runs import RunFolder
from ecab.runs.records import read_part

ROOT = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------------------------------------ pure parts

def test_split_keeps_a_tasks_units_together_balances_and_keeps_the_order():
    units = make_units([f"t{i}" for i in range(7)], "m", 10, 0, 3)      # 21 units, 3 per task
    shares = split_units(units, 2)
    assert sorted(len(s) for s in shares) == [9, 12]
    assert sorted(u.key for s in shares for u in s) == sorted(u.key for u in units), "every unit exactly once"
    homes = [{u.task_id for u in share} for share in shares]
    assert not homes[0] & homes[1], "a task's units are in one share"
    order = {u.key: i for i, u in enumerate(units)}
    for share in shares:
        assert [order[u.key] for u in share] == sorted(order[u.key] for u in share)


def test_split_never_makes_an_empty_share():
    units = make_units(["only"], "m", 10, 0, 4)
    assert [len(s) for s in split_units(units, 3)] == [4]


def test_limiter_shares_add_up_to_the_configured_window():
    limits = LimiterSettings(max_concurrency=1025, initial=7)
    shares = [limiter_share(limits, 2, i) for i in range(2)]
    assert sum(s.max_concurrency for s in shares) == 1025
    assert sum(s.initial for s in shares) == 7
    assert all(s.min_concurrency <= s.max_concurrency for s in shares)


def test_merged_limiter_figures_add_counts_and_span_both_children():
    merged = merge_limiter_stats([
        {"ok": 10, "throttled": 1, "failed": 0, "peak_in_flight": 4, "window": 5.0, "min_window": 2.0,
         "first_at": 100.0, "last_at": 110.0, "paused_s": 1.0},
        {"ok": 30, "throttled": 0, "failed": 2, "peak_in_flight": 6, "window": 7.0, "min_window": 3.0,
         "first_at": 101.0, "last_at": 120.0, "paused_s": 0.5}])
    assert (merged["ok"], merged["throttled"], merged["failed"], merged["peak_in_flight"]) == (40, 1, 2, 10)
    assert (merged["first_at"], merged["last_at"]) == (100.0, 120.0)
    assert merged["ok_per_s"] == 2.0


@pytest.mark.parametrize("setting, concurrency, cores, expected", [
    ("auto", 32, 2, 1), ("auto", EPISODES_PER_LOOP, 2, 1), ("auto", 2 * EPISODES_PER_LOOP, 2, 2),
    ("auto", 4096, 2, 2), ("auto", 4096, 8, 8), (None, 1024, 4, 4), (3, 10, 2, 3), ("2", 10, 2, 2)])
def test_auto_processes_grow_with_the_episodes_in_flight_up_to_the_cores(setting, concurrency, cores, expected):
    assert episode_processes(setting, concurrency, cores) == expected


@pytest.mark.parametrize("setting", [0, -1, "two", "1.5", 2.5])
def test_a_bad_processes_setting_is_one_config_error_naming_the_key(setting):
    with pytest.raises(ConfigError, match="runner.processes"):
        episode_processes(setting, 64, 2)


def test_a_bad_admission_override_is_one_config_error_naming_the_key():
    with pytest.raises(ConfigError, match="runner.admission: unknown key.*targt"):
        make_runner(parse(load_config(["runner.name=local", "+runner.admission.targt=1"])))


def test_merged_admission_adds_the_childrens_episodes_and_keeps_the_worst_delay():
    a = {"enabled": True, "limit": 3, "mean_in_flight": 2.5, "peak_in_flight": 3, "window": 3.0, "decreases": 1,
         "delay_p95_ms": 20.0}
    b = {**a, "limit": 2, "mean_in_flight": 1.0, "peak_in_flight": 2, "delay_p95_ms": 80.0}
    assert merge_admission([a, b]) == {"enabled": True, "limit": 5, "peak_in_flight": 5, "decreases": 2,
                                       "mean_in_flight": 3.5, "window": 6.0, "delay_p95_ms": 80.0}
    assert merge_admission([a]) == a and merge_admission([]) is None


# ------------------------------------------------------------------------------------------------ end to end

@pytest.fixture(scope="module")
def one_process(small_run_cache, tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("runs")
    cfg = load_config([*SMALL_RUN, f"cache_dir={small_run_cache}", f"run.dir={run_dir}", "run.name=one",
                       "model=heuristic", "runner.processes=1"])
    return run_dir / "one", main_job(cfg)


@pytest.mark.slow
def test_two_processes_give_the_results_of_one(small_run_cache, one_process, tmp_path):
    folder_one, summary_one = one_process
    cfg = load_config([*SMALL_RUN, f"cache_dir={small_run_cache}", f"run.dir={tmp_path}", "run.name=two",
                       "model=heuristic", "runner.processes=2", "runner.concurrency=4"])
    summary_two = main_job(cfg)
    folder = RunFolder(tmp_path / "two")
    assert sorted(p.name for p in folder.part_files()) == ["part-local-p0.jsonl.gz", "part-local-p1.jsonl.gz"]
    manifest = json.loads(folder.manifest_path.read_text())
    assert manifest["runner_stats"]["processes"] == 2
    admission = manifest["runner_stats"]["admission"]      # each child admitted its own share of the 4
    assert admission["enabled"] and admission["limit"] == 4 and 1 <= admission["peak_in_flight"] <= 4
    assert untimed(summary_two) == untimed(summary_one)
    one = RunFolder(folder_one).latest_trajectories()
    two = folder.latest_trajectories()
    assert list(two) == list(one)
    assert [t.predicted_product_id for t in two.values()] == [t.predicted_product_id for t in one.values()]
    assert [[s.tool for s in t.steps] for t in two.values()] == [[s.tool for s in t.steps] for t in one.values()]


def episode_children(pid: int) -> list[int]:
    """The spawned episode processes of `pid` (not multiprocessing's resource tracker)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if int(stat[stat.rindex(")") + 2:].split()[1]) == pid and b"spawn_main" in cmdline \
                and b"resource_tracker" not in cmdline:
            found.append(int(entry))
    return found


def start_slow_run(small_run_cache, run_dir: Path, name: str) -> subprocess.Popen:
    # Slow episodes (a knob that never changes results) so that kills land mid-run.
    args = [*SMALL_RUN, f"cache_dir={small_run_cache}", f"run.dir={run_dir}", f"run.name={name}",
            "model=heuristic", "runner.processes=2", "runner.concurrency=2", "runner.step_delay_s=0.1"]
    return subprocess.Popen([sys.executable, "-m", "ecab.run", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})


def wait_for(predicate, proc: subprocess.Popen, what: str, timeout: float = 180):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        if proc.poll() is not None:
            raise AssertionError(f"the run ended before {what}:\n{proc.stdout.read()}\n{proc.stderr.read()}")
        time.sleep(0.1)
    proc.kill()
    raise AssertionError(f"no {what} after {timeout} s")


def records_in(folder: Path) -> int:
    parts = sorted((folder / "trajectories").glob("part-local-p*.jsonl.gz"))
    return sum(1 for part in parts for _ in read_part(part))


@pytest.mark.slow
def test_a_killed_episode_process_ends_the_run_in_one_line_and_a_rerun_resumes(small_run_cache, one_process,
                                                                                 tmp_path):
    proc = start_slow_run(small_run_cache, tmp_path, "killed")
    try:
        wait_for(lambda: records_in(tmp_path / "killed") >= 2, proc, "two finished episodes")
        children = wait_for(lambda: episode_children(proc.pid), proc, "episode processes")
        os.kill(children[0], signal.SIGKILL)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    lines = [line for line in err.splitlines() if line.startswith("ecab: error:")]
    assert proc.returncode != 0 and len(lines) == 1, err
    assert "episode process" in lines[0] and "exited with code -9" in lines[0] and "resume" in lines[0]
    assert "Traceback" not in err
    saved = records_in(tmp_path / "killed")
    assert saved >= 2, "finished episodes are kept"

    cfg = load_config([*SMALL_RUN, f"cache_dir={small_run_cache}", f"run.dir={tmp_path}", "run.name=killed",
                       "model=heuristic", "runner.processes=2", "runner.concurrency=2"])
    summary = main_job(cfg)   # the same run again: resumes
    manifest = json.loads(RunFolder(tmp_path / "killed").manifest_path.read_text())
    assert manifest["runner_stats"]["resumed_units"] >= 2
    assert untimed(summary) == untimed(one_process[1])


@pytest.mark.slow
def test_episode_processes_exit_when_their_parent_is_killed(small_run_cache, tmp_path):
    proc = start_slow_run(small_run_cache, tmp_path, "orphans")
    try:
        children = wait_for(lambda: len(episode_children(proc.pid)) == 2 and episode_children(proc.pid), proc,
                            "two episode processes")
        wait_for(lambda: records_in(tmp_path / "orphans") >= 1, proc, "a finished episode")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in children):
        time.sleep(0.1)
    alive = [pid for pid in children if Path(f"/proc/{pid}").exists()
             and Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"]
    assert not alive, f"episode processes {alive} outlived their parent"

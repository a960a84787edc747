"""What `python -m ecab.run` must refuse or report instead of looking like success (issue 14, items 6-12):
repeated task ids, bad UTF-8 and over-long lines in a benchmark file; out-of-range numeric knobs; two runs
in one run folder (and a lock left by `kill -9`); runs whose units are left in infra_error; an endpoint
that refuses the key or the model; simulated faults that differ between runs or end episodes; and
`run.resume=false` over a finished run.

The benchmark is a small hand-made task file (no released data needed) over catalog=targets: its targets
plus 150 synthetic distractors, built once for the module."""
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ecab.env.agent_protocol import EndpointRefused
from ecab.config import ConfigError, load_config
from ecab.run import main_job, validate
from ecab.runs import RunFolder
from ecab.schema import FormatError, read_tasks

ROOT = Path(__file__).resolve().parents[1]
N_TASKS = 6
GOODS = [("Braided USB-C Charger Cable 6ft", "Electronics", "Black"),
         ("Cast Iron Skillet 12 inch Pre-Seasoned", "Home & Kitchen", "Black"),
         ("Stainless Steel Water Bottle 32 oz", "Sports & Outdoors", "Blue"),
         ("Wireless Ergonomic Mouse", "Electronics", "Gray"),
         ("Bamboo Cutting Board Set of 3", "Home & Kitchen", "Natural"),
         ("Waterproof Hiking Backpack 40L", "Sports & Outdoors", "Green")]


def tiny_task(i: int) -> dict:
    title, category, color = GOODS[i % len(GOODS)]
    return {"id": f"tiny-{i:02d}", "intent_category": "product_search",
            "user_query": f"I am looking for a {color.lower()} {title.lower()} under ${30 + i}.",
            "target_product": {"product_id": f"TINY{i:03d}", "title": f"Tinyco {title} ({color})",
                               "main_category": category, "store": "Tinyco", "average_rating": 4.6,
                               "rating_number": 120, "price": 20.0 + i, "features": [f"{title}, {color}"],
                               "description": [], "details": {"Color": color, "Brand": "Tinyco"}},
            "rubrics": []}


def write_lines(path: Path, lines: list) -> Path:
    path.write_bytes(b"".join((line if isinstance(line, bytes) else json.dumps(line).encode()) + b"\n"
                             for line in lines))
    return path


@pytest.fixture(scope="module")
def bench(tmp_path_factory) -> Path:
    return write_lines(tmp_path_factory.mktemp("bench") / "tiny.jsonl", [tiny_task(i) for i in range(N_TASKS)])


@pytest.fixture(scope="module")
def base(bench, tmp_path_factory) -> list[str]:
    cache = tmp_path_factory.mktemp("guards-cache")
    return ["catalog=targets", "benchmark=file", f"benchmark.path={bench}", "catalog.products=150",
            "budget=30", "run.progress=false", f"cache_dir={cache}"]


@pytest.fixture(scope="module")
def first_run(base, tmp_path_factory):
    """A finished heuristic run (it also builds the module's catalog)."""
    run_dir = tmp_path_factory.mktemp("runs")
    summary = main_job(load_config([*base, f"run.dir={run_dir}", "run.name=first"]))
    return run_dir, summary


def cli(*args, env=None, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ecab.run", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def records(folder: Path) -> list[dict]:
    return [t.to_dict() for t in RunFolder(folder).iter_trajectories()]


# ------------------------------------------------------------------------------- 6, 9: the benchmark file

def test_a_repeated_task_id_names_the_id_and_both_lines(tmp_path, base):
    path = write_lines(tmp_path / "dup.jsonl", [tiny_task(0), tiny_task(1), tiny_task(2), tiny_task(1)])
    with pytest.raises(FormatError) as info:
        read_tasks(path)
    assert str(info.value) == f"{path}:4: duplicate task id 'tiny-01' (first at {path}:2)"
    with pytest.raises(FormatError, match=r"dup\.jsonl:4: duplicate task id 'tiny-01'"):
        main_job(load_config([*base, f"benchmark.path={path}", f"run.dir={tmp_path}/runs"]))
    assert not (tmp_path / "runs").exists()


def test_invalid_utf8_is_a_format_error_naming_the_line(tmp_path, base):
    line = json.dumps(tiny_task(1)).encode().replace(b"Tinyco", b"Tiny\xff\xfeco", 1)
    path = write_lines(tmp_path / "latin.jsonl", [tiny_task(0), line])
    with pytest.raises(FormatError, match=r"latin\.jsonl:2: not valid UTF-8 \(byte 0xff"):
        main_job(load_config([*base, f"benchmark.path={path}", f"run.dir={tmp_path}/runs"]))


def test_a_line_over_the_cap_is_an_error_and_nothing_is_copied(tmp_path, base):
    big = tiny_task(1)
    big["target_product"]["description"] = ["x" * 5000]
    path = write_lines(tmp_path / "big.jsonl", [tiny_task(0), big])
    with pytest.raises(FormatError, match=r"big\.jsonl:2: line longer than the cap of 4000 bytes "
                                          r"\(benchmark\.max_line_bytes\)"):
        main_job(load_config([*base, f"benchmark.path={path}", f"run.dir={tmp_path}/runs",
                              "benchmark.max_line_bytes=4000"]))
    assert not (tmp_path / "runs").exists()
    huge = write_lines(tmp_path / "huge.jsonl", [b'{"id": "' + b"h" * (5 * 2**20) + b'"}'])   # default: 4 MB
    with pytest.raises(FormatError, match=r"huge\.jsonl:1: line longer than the cap of 4194304 bytes"):
        read_tasks(huge)
    assert len(read_tasks(path, max_line_bytes=None)) == 2


# ----------------------------------------------------------------------------- 10: every numeric knob

@pytest.mark.parametrize("overrides, message", [
    (["benchmark.limit=-5"], "benchmark.limit must be a positive integer (or null), got -5"),
    (["benchmark.limit=0"], "benchmark.limit must be a positive integer (or null), got 0"),
    (["runner.concurrency=0"], "runner.concurrency must be a positive integer, got 0"),
    (["runner.concurrency=2.5"], "runner.concurrency must be a positive integer, got 2.5"),
    (["runner=ray", "runner.workers=0"], "runner.workers must be a positive integer, got 0"),
    (["runner.max_attempts=0"], "runner.max_attempts must be a positive integer, got 0"),
    (["runner=ray", "runner.limits.decrease=1.5"], "runner.limits.decrease must be a number in (0, 1), got 1.5"),
    (["catalog.shards=0"], "catalog.shards must be a positive integer, got 0"),
    (["catalog.replicas=-1"], "catalog.replicas must be a positive integer, got -1"),
    (["trials=0"], "trials must be a positive integer, got 0"),
    (["budget=true"], "budget must be a positive integer, got True"),
    (["episode.wall_clock_s=-1"], "episode.wall_clock_s must be a number > 0 (or null), got -1"),
    (["model=sim", "model.timeout_s=0"], "model.timeout_s must be a number > 0, got 0"),
    (["model=sim", "model.max_attempts=0"], "model.max_attempts must be a positive integer, got 0"),
    (["model=sim", "model.sim.rate_5xx=1.5"], "model.sim.rate_5xx must be a number in [0, 1], got 1.5"),
    (["judge.concurrency=0", "judge=llm", "judge.model=sim"], "judge.concurrency must be a positive integer"),
    (["benchmark.max_line_bytes=0"], "benchmark.max_line_bytes must be a positive integer, got 0"),
])
def test_numeric_knobs_are_checked_with_one_line_naming_the_key(overrides, message):
    with pytest.raises(ConfigError) as info:
        validate(load_config(overrides))
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


# ---------------------------------------------------------------------------------- 7: the run lock

def wait_for(predicate, proc, timeout=180.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        if proc.poll() is not None:
            raise AssertionError(f"the run ended early:\n{proc.stdout.read()}")
        time.sleep(0.05)
    raise AssertionError("timed out")


@pytest.mark.slow
def test_a_second_run_is_refused_and_a_killed_runs_lock_is_taken_over(base, first_run, tmp_path, capsys):
    overrides = [*base, f"run.dir={tmp_path}", "run.name=shared"]
    slow = [*overrides, "runner.step_delay_s=0.2", "runner.concurrency=1"]   # never changes a result
    proc = subprocess.Popen([sys.executable, "-m", "ecab.run", *slow], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    folder = tmp_path / "shared"
    try:
        wait_for(lambda: len(records(folder)) >= 1 if (folder / "trajectories").is_dir() else False, proc)
        holder = f"in use by pid {proc.pid} on host {socket.gethostname()}"
        for runner in ([], ["runner=ray"]):   # the Ray driver takes the same lock, before Ray starts
            with pytest.raises(ConfigError, match=holder):
                main_job(load_config([*overrides, *runner]))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    done_before = len(records(folder))
    assert 1 <= done_before < N_TASKS, "the kill must land mid-run"
    capsys.readouterr()

    summary = main_job(load_config(overrides))    # the lock of the killed run is stale: taken over, resumed

    out = capsys.readouterr().out
    assert f"taking over from a run that ended without releasing it (pid {proc.pid} on host" in out
    assert f"resuming: {done_before} of {N_TASKS} episodes already done" in out
    assert len(records(folder)) == N_TASKS, "no unit ran twice"
    assert summary["total_samples"] == N_TASKS
    assert main_job(load_config(overrides))["total_samples"] == N_TASKS   # released at the end: a rerun may lock


# ------------------------------------------------------------------------------------- 8: failures

@pytest.mark.slow
def test_infra_errors_are_in_the_headline_the_exit_code_and_the_retry_count(base, first_run, tmp_path):
    proc = cli(*base, "model=sim", "model.sim.rate_5xx=1.0", "model.max_attempts=3", "runner.max_attempts=1",
               "benchmark.limit=3", f"run.dir={tmp_path}", "run.name=broken")
    assert proc.returncode == 3, proc.stderr[-2000:]
    errors = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and errors[0].startswith("ecab: error: 3 of 3 episodes ended in infra_error (first: "
                                                     "model sim (ecab-sim-heuristic): gave up after 3 attempt(s)")
    assert "INFRA ERRORS: 3 of 3 episodes did not finish (first: model sim" in proc.stdout
    trajectories = records(tmp_path / "broken")
    assert [t["termination"] for t in trajectories] == ["infra_error"] * 3
    recorded = sum(t["usage"]["retries"] for t in trajectories)
    assert recorded == 3 * 2 == sum(1 for t in trajectories for e in t["reasoning_trace"] if e["type"] == "retry")
    summary = json.loads((tmp_path / "broken" / "summary.json").read_text())
    assert summary["latency"]["llm_retries"] == recorded


def test_a_wrong_key_stops_the_run_at_once_with_one_line(base, first_run, tmp_path):
    key = "sk-wrong-key-DO-NOT-LEAK"
    proc = cli(*base, "model=sim", "model.sim.api_key=the-right-key", "model.api_key_env=ECAB_TEST_WRONG_KEY",
               "runner.concurrency=1", f"run.dir={tmp_path}", "run.name=badkey", env={"ECAB_TEST_WRONG_KEY": key})
    assert proc.returncode == 2
    errors = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and errors[0].startswith("ecab: error: model sim (ecab-sim-heuristic): authentication "
                                                     "or permission refused (check ECAB_TEST_WRONG_KEY)")
    assert "401" in errors[0] and key not in proc.stdout + proc.stderr
    assert records(tmp_path / "badkey") == [], "nothing recorded: a resume runs every unit"


def test_an_unknown_model_stops_the_run_and_records_nothing(base, first_run, tmp_path):
    cfg = load_config([*base, "model=sim", "model.model_id=gpt-nope", "model.sim.models=[ecab-sim-heuristic]",
                       f"run.dir={tmp_path}", "run.name=nomodel"])
    with pytest.raises(EndpointRefused, match=r"model sim \(gpt-nope\): not found at http://127\.0\.0\.1:\d+/v1"):
        main_job(cfg)
    assert records(tmp_path / "nomodel") == []
    assert not (tmp_path / "nomodel" / ".lock").read_text(), "the lock is released"


# ----------------------------------------------------------------------- 11: reproducible model=sim runs

def test_sim_runs_are_identical_at_any_concurrency_and_faults_never_end_an_episode(base, first_run, tmp_path):
    faults = "model.sim.malformed={invalid_json: 0.1, two_calls: 0.1, no_tool_call: 0.3, unknown_tool: 0.1}"
    runs = {}
    for concurrency in (1, 6):
        main_job(load_config([*base, "model=sim", "model.sim.latency_ms=0", faults, "budget=60",
                              f"runner.concurrency={concurrency}", f"run.dir={tmp_path}", f"run.name=c{concurrency}"]))
        runs[concurrency] = {t.id: t for t in RunFolder(tmp_path / f"c{concurrency}").latest_trajectories().values()}

    def outcome(t):
        return (t.termination, t.predicted_product_id,
                [(s.tool, json.dumps(s.arguments, sort_keys=True), s.is_error) for s in t.steps])

    assert {k: outcome(t) for k, t in runs[1].items()} == {k: outcome(t) for k, t in runs[6].items()}
    trajectories = list(runs[1].values())
    assert len(trajectories) == N_TASKS
    assert all(t.termination == "recommended" for t in trajectories), [t.termination for t in trajectories]
    assert sum(s.tool is None for t in trajectories for s in t.steps) >= 3, "text-only faults were injected"
    assert sum(s.is_error for t in trajectories for s in t.steps) >= 3, "tool-call faults were injected"


# ------------------------------------------------------------------------ 12: resume=false moves aside

def test_resume_false_moves_the_old_run_aside_and_says_so(base, first_run, capsys):
    run_dir, first = first_run
    old = (run_dir / "first" / "summary.json").read_text()
    capsys.readouterr()
    main_job(load_config([*base, f"run.dir={run_dir}", "run.name=first", "run.resume=false"]))
    out = capsys.readouterr().out
    [aside] = [p for p in run_dir.iterdir() if p.name.startswith("first.")]
    assert f"run.resume=false: the previous run in {run_dir / 'first'} was moved to {aside}" in out
    assert (aside / "summary.json").read_text() == old and len(records(aside)) == N_TASKS
    assert "resuming" not in out and len(records(run_dir / "first")) == N_TASKS

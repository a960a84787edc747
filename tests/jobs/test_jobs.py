"""jobs/ as jobs/README.md runs them (`python jobs/sweep.py ...`, `python jobs/budget_study.py ...`), in a child
process from the repository root, on the small generated benchmark the `python -m ecab.run` tests share
(tests/conftest.py: SMALL_RUN, small_run_cache). Without RAY_ADDRESS the jobs run on this machine: the sweep
with runner=local, the budget study on the local Ray it starts."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SMALL_RUN

ROOT = Path(__file__).resolve().parents[2]
JOBS = ROOT / "jobs"


def job(script: str, *args: str, cache: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}   # never a cluster of the caller's
    env["ECAB_CACHE_DIR"] = str(cache)
    done = subprocess.run([sys.executable, str(JOBS / script), *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    return done


def summary(folder: Path) -> dict:
    return json.loads((folder / "summary.json").read_text(encoding="utf-8"))


def test_sweep_argv_is_a_ray_multirun_unless_told_otherwise():
    spec = importlib.util.spec_from_file_location("sweep", JOBS / "sweep.py")
    sweep = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sweep)
    assert sweep.sweep_argv(["model=a,b"]) == ["ecab.run", "-m", "runner=ray", "model=a,b"]
    assert sweep.sweep_argv(["-m", "runner=local"]) == ["ecab.run", "-m", "runner=local"]


@pytest.mark.slow
def test_a_sweep_writes_one_run_folder_per_combination(small_run_cache, tmp_path):
    runs = tmp_path / "runs"
    done = job("sweep.py", "model=oracle,random", "benchmark.limit=2", "runner=local", *SMALL_RUN,
               f"run.dir={runs}", cache=small_run_cache)
    assert "Launching 2 jobs" in done.stdout + done.stderr
    # run names carry every setting that differs from the defaults (ecab/config/naming.py)
    oracle_name, random_name = (f"{m}-b100-generated-products600-n_per_intent2-limit2" for m in ("oracle", "random"))
    oracle, rand = summary(runs / oracle_name), summary(runs / random_name)
    assert oracle["total_samples"] == rand["total_samples"] == 2
    assert oracle["overall_accuracy"] == 1.0 and rand["overall_accuracy"] < 1.0
    for name in (oracle_name, random_name):
        assert (runs / name / "report.html").is_file() and (runs / name / "manifest.json").is_file()
    sweep_dirs = [p for p in runs.iterdir() if p.name.startswith("sweep-model=oracle,random")]
    assert len(sweep_dirs) == 1 and (sweep_dirs[0] / "multirun.yaml").is_file()


@pytest.mark.xdist_group("ray")   # starts a Ray: one at a time under pytest-xdist
@pytest.mark.slow
def test_a_budget_study_tabulates_every_budget_on_a_local_ray(small_run_cache, tmp_path):
    runs = tmp_path / "runs"
    done = job("budget_study.py", "--budgets", "2,50", "model=oracle", "benchmark.limit=2", "runner.workers=1",
               *SMALL_RUN, f"run.dir={runs}", cache=small_run_cache)
    folder = runs / "oracle-b2,50-generated-products600-n_per_intent2-limit2-budget-study"
    study = json.loads((folder / "budget_study.json").read_text(encoding="utf-8"))
    rows = study["rows"]
    assert [r["budget"] for r in rows] == [2, 50] and all(r["episodes"] == 2 for r in rows)
    assert rows[0]["cap_reached_rate"] == 1.0 and rows[1]["accuracy"] == 1.0
    assert rows[1]["accuracy_ci"]["method"] == "wilson" and rows[1]["accuracy_ci"]["low"] < 1.0
    assert "| 50 | 100.0% [" in (folder / "budget_study.md").read_text(encoding="utf-8")
    small, large = (Path(run) for run in study["runs"])
    assert summary(small)["total_samples"] == 2 and summary(small)["budget"]["budget"] == 2
    assert summary(large)["overall_accuracy"] == 1.0
    assert "name: ray" in (large / "config.yaml").read_text(encoding="utf-8"), done.stdout[-2000:]   # on Ray


# ------------------------------------------------------------------ a real Ray head, as jobs/README.md submits

def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def ray_head():
    """A local Ray head with token authentication on (RAY_AUTH_MODE=token, the token in RAY_AUTH_TOKEN), as
    jobs/README.md sets up a cluster: {"dashboard": its URL, "env": the environment of a user who holds the
    token, "gcs": the address a driver joins}. `ray start --block` in a process group of its own, so that stopping it stops only this head (never
    `ray stop`, which stops every Ray of the machine); its temp dir is short (Unix socket paths)."""
    import secrets
    import shutil
    import signal
    import tempfile
    import time
    import urllib.error
    import urllib.request

    temp = Path(tempfile.mkdtemp(prefix="ecab-ray-", dir="/tmp"))
    dashboard_port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH") and k != "RAY_ADDRESS"}
    env.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(16), RAY_USAGE_STATS_ENABLED="0")
    ray = str(Path(sys.executable).with_name("ray"))
    gcs_port = free_port()
    # every port a fixed default would give (10001, 52365, ...) is a free one: another Ray on the machine (a
    # test's local cluster) may hold the defaults, and a job agent without its port never takes a job
    ports = [f"--{name}={free_port()}" for name in ("ray-client-server-port", "dashboard-agent-listen-port",
                                                    "dashboard-agent-grpc-port", "runtime-env-agent-port",
                                                    "metrics-export-port")]
    head = subprocess.Popen([ray, "start", "--head", "--block", f"--port={gcs_port}", "--num-cpus=4",
                             "--dashboard-host=127.0.0.1", f"--dashboard-port={dashboard_port}", *ports,
                             f"--temp-dir={temp}", "--disable-usage-stats"],
                            env=env, cwd=temp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    handle = {"dashboard": f"http://127.0.0.1:{dashboard_port}", "gcs": f"127.0.0.1:{gcs_port}", "env": env}
    try:
        # Up when it takes a job: its dashboard answers some seconds before its job agent has registered ("No
        # available agent to submit job"). The deadline guards against a head that never comes up.
        deadline = time.monotonic() + 180
        while True:
            try:
                urllib.request.urlopen(f"{handle['dashboard']}/api/version", timeout=5)
            except urllib.error.HTTPError:      # it answers (401 without the token)
                pass
            except OSError:
                assert head.poll() is None, f"ray start exited with {head.returncode}"
                assert time.monotonic() < deadline, "the Ray head's dashboard did not come up"
                time.sleep(0.5)
                continue
            probe = submit(handle, "true")
            if probe.returncode == 0:
                break
            assert "No available agent" in probe.stdout + probe.stderr and time.monotonic() < deadline, \
                (probe.stdout + probe.stderr)[-3000:]
            time.sleep(1)
        yield handle
    finally:
        head.send_signal(signal.SIGTERM)      # --block: ray start stops the node's processes
        try:
            head.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(head.pid, signal.SIGKILL)    # whatever of this head's group is left
        except ProcessLookupError:
            pass
        head.wait()
        shutil.rmtree(temp, ignore_errors=True)


def submit(head: dict, *entrypoint: str, token: bool = True) -> subprocess.CompletedProcess:
    """`ray job submit --address <dashboard> -- <entrypoint>` from the repository root, by a user who holds the
    cluster's token (RAY_AUTH_MODE=token and RAY_AUTH_TOKEN, jobs/README.md) or, token=False, by one who does
    not."""
    env = dict(head["env"]) if token else {k: v for k, v in head["env"].items() if not k.startswith("RAY_AUTH")}
    ray = str(Path(sys.executable).with_name("ray"))
    # `ray job submit` quotes each word after `--` and runs them in the head's session folder: one `sh -c` that
    # goes to the repository first (no --working-dir: it would upload the repository, .venv and all)
    import shlex

    command = f"cd {shlex.quote(str(ROOT))} && {shlex.join(entrypoint)}"
    return subprocess.run([ray, "job", "submit", "--address", head["dashboard"], "--", "sh", "-c", command],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)


@pytest.mark.xdist_group("ray")   # starts a Ray: one at a time under pytest-xdist
@pytest.mark.slow
def test_a_sweep_submitted_with_the_token_runs_on_the_ray_head(ray_head, small_run_cache, tmp_path):
    runs = tmp_path / "runs"
    refused = submit(ray_head, "true", token=False)
    assert refused.returncode != 0 and "Authentication" in refused.stdout + refused.stderr
    done = submit(ray_head, sys.executable, "jobs/sweep.py", "model=oracle", "benchmark.limit=2",
                  "runner.workers=1", *SMALL_RUN, f"cache_dir={small_run_cache}", f"run.dir={runs}")
    out = done.stdout + done.stderr
    assert done.returncode == 0 and "succeeded" in out, out[-4000:]
    # the sweep's one run folder (its name may carry the swept overrides)
    folders = [f.parent for f in runs.glob("oracle-b100-generated*/summary.json")]
    assert len(folders) == 1, out[-6000:]
    assert summary(folders[0])["total_samples"] == 2 and summary(folders[0])["overall_accuracy"] == 1.0
    manifest = json.loads((folders[0] / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["runner_stats"]["runner"] == "ray"
    # the driver joined this head (RAY_ADDRESS, set by `ray job submit`) rather than starting a Ray of its own:
    # the head knows the run's episode workers
    ray = str(Path(sys.executable).with_name("ray"))
    actors = subprocess.run([ray, "list", "actors", "--address", ray_head["dashboard"], "--format", "json",
                             "--limit", "1000"], env=ray_head["env"], capture_output=True, text=True, timeout=120)
    assert actors.returncode == 0, actors.stderr[-2000:]
    assert any(a.get("class_name") == "EpisodeWorkerService" for a in json.loads(actors.stdout)), actors.stdout[-2000:]


@pytest.mark.xdist_group("ray")   # starts a Ray: one at a time under pytest-xdist
@pytest.mark.slow
def test_a_sweep_without_the_token_is_refused_in_one_line(ray_head, tmp_path):
    env = {k: v for k, v in ray_head["env"].items() if not k.startswith("RAY_AUTH")}
    env["RAY_ADDRESS"] = ray_head["gcs"]
    done = subprocess.run([sys.executable, str(JOBS / "sweep.py"), "model=oracle", f"run.dir={tmp_path / 'runs'}",
                           f"cache_dir={tmp_path / 'cache'}"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and lines, done.stderr[-3000:]
    # Ray's own warnings may come first; the sweep ends in its one line, no traceback, before any work
    assert lines[-1].startswith("ecab: error: could not join the Ray cluster at RAY_ADDRESS=")
    assert "RAY_AUTH_MODE=token" in lines[-1] and "RAY_AUTH_TOKEN" in lines[-1]
    assert "Traceback" not in done.stderr and not (tmp_path / "runs").exists() and not (tmp_path / "cache").exists()

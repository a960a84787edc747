"""A stopped run keeps its in-flight episodes' turns (issue 31, item 5): `run_episode`'s `on_turn`, the runners'
`TurnCheckpoints` (ecab/runner/episode.py), the checkpoints of trajectories/inflight/ (ecab/runs/folder.py) and
the report of a run in progress that counts them (ecab/view/status.py).

(a) a run killed mid-episode leaves checkpoints holding the turns so far, and resuming it finishes every unit
once and leaves none; (b) a finished run leaves none; (c) a checkpoint is never read as a finished episode. The
runs are real, on a small hand-made benchmark over catalog=targets (as tests/test_run_guards.py)."""
import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ecab import schema
from ecab.agents.base import tool_call_message
from ecab.catalog.base import SearchHit, SearchPage
from ecab.config import load_config
from ecab.core.unit import unit_key
from ecab.env.agent_protocol import AgentTurn
from ecab.env.episode import EpisodeSettings, run_episode
from ecab.env.tools import ToolBox
from ecab.run import main_job
from ecab.runner.episode import TurnCheckpoints
from ecab.runs import RunFolder
from ecab.runs.folder import INFLIGHT_TERMINATION
from ecab.schema import FormatError, Step, TERMINATIONS, Trajectory
from ecab.view.live import source_files
from ecab.view.status import run_status
from test_run_guards import tiny_task   # the tiny benchmark's tasks (its first four)

ROOT = Path(__file__).resolve().parents[2]
N_TASKS = 4


def record(task_id: str, **fields) -> Trajectory:
    unit = {"task_id": task_id, "model": "m", "budget": 30, "seed": 1, "trial": 0}
    return Trajectory(id=task_id, unit=unit, **fields)


def wait_for(predicate, proc: subprocess.Popen, timeout: float = 300.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        if proc.poll() is not None:
            raise AssertionError(f"the run ended before it was killed:\n{proc.stdout.read()}")
        time.sleep(0.05)
    raise AssertionError("timed out")


# ------------------------------------------------------------------------------- on_turn and TurnCheckpoints

class TinyCatalog:
    """Just enough CatalogReader for one scripted episode: one product, no reviews."""

    product = schema.Product(product_id="L1", title="Acme Laptop", store="Acme", main_category="Computers",
                             details={}, average_rating=4.5, rating_number=10, price=9.99, features=[],
                             description=[])

    def get_product(self, product_id):
        return self.product if product_id == "L1" else None

    def get_products(self, product_ids):
        return [self.product for i in product_ids if i == "L1"]

    def search(self, query, *, limit=20, offset=0, mode=None, where=None):
        return SearchPage([SearchHit("L1", "Acme Laptop")], 1)


TASK = schema.Task.from_dict({
    "id": "t1", "intent_category": "product_search", "user_query": "a laptop",
    "user_persona": {"user_id": "U1", "demographics": {}, "lifestyle": {}, "shopping_habits": {},
                     "product_requirements": {}},
    "clarification_script": {"clarification_slots": [], "max_clarification_turns": 2},
    "target_product": TinyCatalog.product.target_view(), "rubrics": [],
})


class ScriptedAgent:
    name = "scripted"

    def __init__(self, messages):
        self.messages = list(messages)

    async def act(self, messages, tools):
        return AgentTurn(message=self.messages.pop(0), input_tokens=1, output_tokens=1)


def test_on_turn_sees_every_turn_that_does_not_end_the_episode():
    agent = ScriptedAgent([tool_call_message("c1", "search_products", {"query": "laptop"}),
                           {"role": "assistant", "content": "thinking aloud"},        # a text-only turn
                           tool_call_message("c2", "search_products", {"query": "acme"}),
                           tool_call_message("c3", "recommend_product", {"product_id": "L1", "reasoning": "x"})])
    seen = []
    traj = asyncio.run(run_episode(TASK, agent, ToolBox(TinyCatalog(), TASK), EpisodeSettings(budget=10),
                                   on_turn=lambda t: seen.append((len(t.steps), t.total_tool_calls,
                                                                  t.trajectory[-1]["role"]))))
    # After a tool turn the tool result is in; after a text-only turn its reminder; the last turn is the record's.
    assert seen == [(1, 1, "tool"), (2, 1, "user"), (3, 2, "tool")]
    assert traj.termination == "recommended" and len(traj.steps) == 4


def test_checkpoints_are_throttled_by_their_clock():
    now, written = [0.0], []

    async def turns():
        checkpoints = TurnCheckpoints(lambda t: written.append(len(t.steps)), every_s=5.0, clock=lambda: now[0])
        traj = record("t1")
        for turn in range(1, 8):          # a turn every 2 s of the fake clock
            traj.steps.append(Step(index=turn))
            now[0] = 2.0 * turn
            checkpoints(traj)
            await checkpoints.settle()
        return checkpoints

    checkpoints = asyncio.run(turns())
    assert written == [1, 4, 7], "the first turn's, then one per 5 s"
    assert (checkpoints.written, checkpoints.failed) == (3, 0)

    written.clear()
    now[0] = 0.0
    asyncio.run(_every_turn(written))
    assert written == [1, 2, 3], "every_s=0: every turn"


async def _every_turn(written):
    checkpoints = TurnCheckpoints(lambda t: written.append(len(t.steps)), every_s=0, clock=lambda: 0.0)
    traj = record("t1")
    for turn in range(1, 4):
        traj.steps.append(Step(index=turn))
        checkpoints(traj)
        await checkpoints.settle()


def test_a_checkpoint_is_a_snapshot_written_off_the_loop_one_at_a_time_and_never_fails_the_episode():
    release, started, written = threading.Event(), threading.Event(), []

    def slow_write(traj):
        written.append((threading.current_thread() is threading.main_thread(), len(traj.steps),
                        len(traj.trajectory), dict(traj.usage)))
        started.set()
        release.wait(30)

    async def turns():
        checkpoints = TurnCheckpoints(slow_write, every_s=0)
        traj = record("t1", trajectory=[{"role": "user", "content": "q"}], usage={"input_tokens": 1})
        traj.steps.append(Step(index=1))
        checkpoints(traj)
        await asyncio.to_thread(started.wait, 30)
        # The loop goes on while the write is under way: the next turns change the record...
        traj.steps.append(Step(index=2))
        traj.trajectory.append({"role": "assistant", "content": "a"})
        traj.usage["input_tokens"] = 2
        checkpoints(traj)                   # ...and write nothing while the first write runs
        release.set()
        await checkpoints.settle()
        return checkpoints

    checkpoints = asyncio.run(turns())
    assert written == [(False, 1, 1, {"input_tokens": 1})], "the record as it was at its turn, in a tool thread"
    assert checkpoints.written == 1

    def broken(traj):
        raise OSError("disk full")

    async def failing():
        checkpoints = TurnCheckpoints(broken, every_s=0)
        checkpoints(record("t1"))
        await checkpoints.settle()
        return checkpoints

    assert asyncio.run(failing()).failed == 1


# ------------------------------------------------------------------------- (c) never read as finished

def test_checkpoints_are_never_read_as_finished_episodes(tmp_path):
    folder = RunFolder(tmp_path / "run").create()
    done = record("t1", termination="recommended", predicted_product_id="P1", steps=[Step(index=1)])
    folder.append_trajectory("local", done)
    folder.write_inflight(record("t2", steps=[Step(index=1), Step(index=2)]))   # termination: the default's
    folder.write_inflight(record("we/ird id!", steps=[Step(index=1)]))

    assert [p.parent.name for p in folder.inflight_paths()] == ["inflight", "inflight"]
    assert [p.name for p in folder.part_files()] == ["part-local.jsonl.gz"]
    assert [t.id for t in folder.iter_trajectories()] == ["t1"]
    assert list(folder.latest_trajectories()) == [unit_key(done.unit)]
    assert [t.id for t in folder.read_trajectories()] == ["t1"]

    inflight = folder.inflight_trajectories()
    assert [key[0] for key in inflight] == ["t2", "we/ird id!"]
    assert {t.termination for t in inflight.values()} == {INFLIGHT_TERMINATION}
    assert INFLIGHT_TERMINATION not in TERMINATIONS, "no reducer counts a checkpoint's ending"
    assert len(inflight[unit_key(record("t2").unit)].steps) == 2

    # A checkpoint put among the part files by hand is refused by reduce's reader, not counted.
    (folder.trajectories_dir / "part-moved.jsonl").write_bytes(folder.inflight_paths()[0].read_bytes())
    with pytest.raises(FormatError, match="unknown termination"):
        folder.read_trajectories()
    (folder.trajectories_dir / "part-moved.jsonl").unlink()

    # Unreadable checkpoints are skipped; appending a unit's final record removes its checkpoint.
    (folder.inflight_dir / "torn.json").write_text('{"id": "t3", "unit": ')
    cut = folder.inflight_path(unit_key(record("t4").unit))
    cut.with_name(cut.name + ".tmp").write_text('{"id": "t4"')    # a checkpoint write a kill cut short
    assert [key[0] for key in folder.inflight_trajectories()] == ["t2", "we/ird id!"]
    folder.append_trajectory("local", record("t2", termination="recommended", predicted_product_id="P2"))
    assert [key[0] for key in folder.inflight_trajectories()] == ["we/ird id!"]
    assert folder.clear_inflight([unit_key(record("t9").unit)]) == 0
    assert folder.clear_inflight() == 2 and list(folder.inflight_dir.iterdir()) == []


def test_the_report_of_a_run_in_progress_counts_its_episodes_in_flight(tmp_path):
    folder = RunFolder(tmp_path / "run").create()
    folder.write_manifest({"n_tasks": 3, "tasks_path": "tasks.jsonl"})
    folder.append_trajectory("local", record("t1", termination="recommended"))
    status = run_status(folder)
    assert (status.in_flight, status.last_turn_s_ago) == (0, None)
    assert status.text() == "in progress: 1 of 3 episodes"

    path = folder.write_inflight(record("t2", steps=[Step(index=1, call_index=1)], total_tool_calls=1))
    folder.write_inflight(record("t3", steps=[Step(index=1)]))
    status = run_status(folder, now=path.stat().st_mtime + 42)
    assert status.in_flight == 2
    assert status.text().startswith("in progress: 1 of 3 episodes, 2 in flight, last turn ")
    assert status.text().endswith(" s ago")
    assert status.to_dict()["in_flight_units"][0] == {"task_id": "t2", "trial": 0, "turns": 1, "tool_calls": 1}
    json.dumps(status.to_dict())    # status.json
    assert path in source_files(folder), "--serve renders the page again when a checkpoint is written"


# ------------------------------------------------------------------------------------- real runs

@pytest.fixture(scope="module")
def base(tmp_path_factory) -> list[str]:
    tmp = tmp_path_factory.mktemp("inflight")
    bench = tmp / "tiny.jsonl"
    bench.write_text("".join(json.dumps(tiny_task(i)) + "\n" for i in range(N_TASKS)))
    return ["catalog=targets", "benchmark=file", f"benchmark.path={bench}", "catalog.products=150",
            "budget=30", "run.progress=false", f"cache_dir={tmp / 'cache'}"]


@pytest.fixture(scope="module")
def finished(base, tmp_path_factory):
    """A finished run (it also builds the module's catalog)."""
    run_dir = tmp_path_factory.mktemp("runs")
    written: list[Path] = []
    real = RunFolder.write_inflight

    def counted(self, traj):
        written.append(real(self, traj))
        return written[-1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(RunFolder, "write_inflight", counted)
        summary = main_job(load_config([*base, f"run.dir={run_dir}", "run.name=finished"]))
    return RunFolder(run_dir / "finished"), summary, written


@pytest.mark.slow
def test_a_finished_run_leaves_no_checkpoint(finished):
    folder, summary, written = finished
    assert summary["total_samples"] == N_TASKS
    assert written and all(p.parent == folder.inflight_dir for p in written), "checkpointed while they ran"
    assert folder.inflight_paths() == [] and not folder.inflight_dir.exists(), "no checkpoint, no empty folder"
    status = run_status(folder)
    assert status.finished and status.in_flight == 0


@pytest.mark.slow
def test_a_killed_run_keeps_its_turns_in_flight_and_its_resume_runs_each_unit_once(base, finished, tmp_path):
    overrides = [*base, f"run.dir={tmp_path}", "run.name=killed"]
    slow = [*overrides, "runner.step_delay_s=0.5", "runner.concurrency=2"]   # never changes a result
    proc = subprocess.Popen([sys.executable, "-m", "ecab.run", *slow], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    folder = RunFolder(tmp_path / "killed")
    try:
        # A checkpoint written again since the episode's first turn (TurnCheckpoints' 5 s apart): the turns so far.
        wait_for(lambda: any(len(t.steps) >= 2 for t in folder.inflight_trajectories().values()), proc)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL

    inflight = folder.inflight_trajectories()
    assert inflight, "the killed run's episodes in flight are on disk"
    recorded = folder.latest_trajectories()
    assert len(recorded) < N_TASKS, "the kill must land mid-run"
    assert not set(inflight) & set(recorded), "a unit is in flight or finished, never both"
    for key, traj in inflight.items():
        assert traj.termination == INFLIGHT_TERMINATION and traj.unit["task_id"] == key[0]
        assert traj.trajectory[0]["role"] == "system" and traj.trajectory[1]["role"] == "user"
        if traj.steps:   # the turns so far: each executed call with its result in the conversation
            assert len([m for m in traj.trajectory if m["role"] == "tool"]) == traj.total_tool_calls >= 1
    status = run_status(folder)
    assert not status.finished and status.in_flight == len(inflight)
    assert f"{len(inflight)} in flight, last turn " in status.text()

    summary = main_job(load_config(overrides))    # the same command again, not slowed: resumes

    assert folder.inflight_paths() == [], "every unit finished: no checkpoint left"
    assert summary["total_samples"] == N_TASKS
    latest = folder.latest_trajectories()
    assert len(latest) == N_TASKS and set(inflight) <= set(latest)
    assert all(t.termination in TERMINATIONS for t in latest.values())
    assert len(list(folder.iter_trajectories())) == N_TASKS, "no unit ran twice"
    # The resumed units ran from the start: the same episodes as the run that was never stopped.
    reference = finished[0].latest_trajectories()
    assert {k: (t.predicted_product_id, t.total_tool_calls) for k, t in latest.items()} == \
        {k: (t.predicted_product_id, t.total_tool_calls) for k, t in reference.items()}
    assert run_status(folder).finished

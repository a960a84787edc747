"""Issue 30 item 2: one episode's python_execute calls must not starve everyone else's. Real sandboxes.

The pool serves episodes in turn (a burst waits behind other episodes' calls), keeps a slot that an episode
looping CPU-bound code cannot take, and reports the wait for a slot (`queued_s`) apart from the run
(`run_s`, what the wall limit counts). Order is read from each result's `dispatch_index` (the n-th call the
pool took from its queue), never from timing.
"""
from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "env"))
from sandbox_support import new_box  # noqa: E402  (tests/env is not a package)
from test_tools import TASK, FakeCatalog  # noqa: E402

from ecab.env.sandbox import Sandbox, SandboxLimits  # noqa: E402
from ecab.env.tools import ToolBox  # noqa: E402

LOOP = "while True:\n    pass"
# Loops end at the 0.4 s wall limit (the CPU limit is further off), so an owner that sent one is heavy
# (its average run 0.2 s >= the threshold, a quarter of the wall limit) whatever the machine's load.
LOOP_LIMITS = dict(cpu_seconds=5, wall_seconds=0.4)


@pytest.fixture
def box_of():
    boxes = []

    def make(scheduler: str = "fair", **limits) -> Sandbox:
        boxes.append(new_box(SandboxLimits(**limits), scheduler=scheduler))
        return boxes[-1]
    yield make
    for box in boxes:
        box.close()


def test_a_burst_does_not_delay_another_episodes_call_behind_its_backlog(box_of):
    box = box_of(max_parallel=1)
    burst = [box.submit(f"print({n})", owner="burst") for n in range(6)]
    other = box.submit("print('other')", owner="other")
    other_index = other.result().dispatch_index
    burst_indexes = [f.result().dispatch_index for f in burst]
    assert other.result().output == "other\n"
    # At most one turn late: after the burst call already running and at most one more of its calls.
    assert other_index <= 2
    assert sum(index > other_index for index in burst_indexes) >= 4
    assert sorted(burst_indexes + [other_index]) == list(range(7))


def test_fifo_shows_what_the_fair_queue_fixes(box_of):
    box = box_of("fifo", max_parallel=1)
    burst = [box.submit(f"print({n})", owner="burst") for n in range(6)]
    other = box.submit("print('other')", owner="other")
    assert other.result().dispatch_index == max(f.result().dispatch_index for f in burst) + 1


def test_an_episode_of_loops_cannot_take_the_last_slot(box_of):
    box = box_of(max_parallel=2, **LOOP_LIMITS)
    assert box.execute(LOOP, owner="loops").kind == "timeout"   # now a heavy owner
    with box._cond:   # all queued before a slot takes any (the pool's lock is reentrant)
        loops = [box.submit(LOOP, owner="loops") for _ in range(3)]
        benign = box.submit("print(1)", owner="benign")
    first_loop = loops[0].result().dispatch_index
    assert benign.result().output == "1\n"
    # The loops hold one slot; the other is kept for light owners, so the benign call is next, not third.
    assert benign.result().dispatch_index == first_loop + 1
    assert all(f.result().kind == "timeout" for f in loops)


def test_queueing_is_reported_apart_and_does_not_eat_the_wall_limit(box_of):
    box = box_of(max_parallel=1, **LOOP_LIMITS)
    with box._cond:   # both queued before the one slot takes either (the pool's lock is reentrant)
        loop = box.submit(LOOP, owner="a")
        after = box.submit("print('after')", owner="b")
    looped, answered = loop.result(), after.result()
    assert looped.kind == "timeout" and looped.run_s >= LOOP_LIMITS["wall_seconds"]
    # One slot: the second call was sent only once the loop had run out its wall limit, so it queued at least
    # that long; it still had its whole limit to run (the limit counts the run only).
    assert answered.output == "after\n"
    assert answered.queued_s >= looped.run_s >= LOOP_LIMITS["wall_seconds"]
    assert 0 < answered.run_s < LOOP_LIMITS["wall_seconds"]


def test_a_call_cancelled_while_queued_never_runs(box_of):
    box = box_of(max_parallel=1, **LOOP_LIMITS)
    with box._cond:   # nothing dispatched until the cancel is done
        running = box.submit(LOOP, owner="a")
        dropped = box.submit("print('dropped')", owner="a")
        kept = box.submit("print('kept')", owner="a")
        assert dropped.cancel()
    assert kept.result().output == "kept\n"
    assert kept.result().dispatch_index == running.result().dispatch_index + 1


class RecordingSandbox(Sandbox):
    """A real sandbox that records the owner each call was submitted under."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.owners: list[object] = []

    def submit(self, code, owner="direct"):
        self.owners.append(owner)
        return super().submit(code, owner)


def test_each_episode_submits_under_its_own_key():
    sandbox = new_box()
    sandbox.close()   # new_box skips (or fails under CI) where no sandbox can run
    sandbox = RecordingSandbox()
    first, second = (ToolBox(FakeCatalog([], []), TASK, sandbox=sandbox) for _ in range(2))
    try:
        async def episode_calls():
            for box in (first, second, first):
                result = await box.call("python_execute", {"code": "print(2 + 2)"})
                assert result.content == {"output": "4\n", "error": None}
        asyncio.run(episode_calls())
    finally:
        sandbox.close()
    assert sandbox.owners[0] == sandbox.owners[2] != sandbox.owners[1]
    assert "direct" not in sandbox.owners

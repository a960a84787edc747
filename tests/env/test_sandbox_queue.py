"""The sandbox pool's scheduling policy alone (ecab/env/sandbox_queue.py): no sandbox, no threads, no clock."""
from __future__ import annotations

import pytest

from ecab.env.sandbox_queue import REMEMBERED_OWNERS, FairQueue


def take_all(queue: FairQueue, finish=None) -> list:
    """Dispatch until nothing more may start; `finish(turn)` -> run time ends each call at once (None: keep
    them running)."""
    order = []
    while (turn := queue.get()) is not None:
        order.append(turn.item)
        if finish is not None:
            queue.done(turn, finish(turn))
    return order


def test_round_robin_across_owners_fifo_within_an_owner():
    queue = FairQueue(slots=100)
    for item in ("a1", "a2", "a3"):
        queue.put("a", item)
    for item in ("b1", "b2"):
        queue.put("b", item)
    queue.put("c", "c1")
    assert take_all(queue) == ["a1", "b1", "c1", "a2", "b2", "a3"]
    assert len(queue) == 0


def test_a_burst_delays_another_owners_first_call_by_one_turn_at_most():
    queue = FairQueue(slots=100)
    for n in range(50):
        queue.put("burst", f"burst{n}")
    queue.put("late", "late1")
    order = take_all(queue)
    assert order.index("late1") == 1          # after the one burst call already first in turn
    # Arriving while a backlog is being served, a newcomer waits for one more burst call, not the backlog.
    for n in range(50):
        queue.put("burst", f"again{n}")
    queue.get()
    queue.put("newcomer", "n1")
    assert take_all(queue).index("n1") == 1


def test_fifo_is_first_come_first_served():
    queue = FairQueue(slots=100, fair=False)
    for n in range(5):
        queue.put("burst", f"burst{n}")
    queue.put("late", "late1")
    assert take_all(queue) == [f"burst{n}" for n in range(5)] + ["late1"]


def test_a_heavy_owner_never_takes_the_reserved_slot():
    queue = FairQueue(slots=3, heavy_run_s=0.5, reserved=1)
    queue.put("loops", "warm-up")
    queue.done(queue.get(), run_s=1.5)       # its first call ran into the wall limit: heavy from now on
    assert queue.is_heavy("loops")
    for n in range(5):
        queue.put("loops", f"loop{n}")
    assert take_all(queue) == ["loop0", "loop1"]   # two heavy slots; the third stays free
    queue.put("benign", "print")
    assert take_all(queue) == ["print"]


def test_a_skipped_heavy_owner_keeps_its_turn():
    queue = FairQueue(slots=2, heavy_run_s=0.5, reserved=1)
    queue.put("loops", "warm-up")
    queue.done(queue.get(), run_s=1.5)
    queue.put("loops", "loop0")
    queue.put("loops", "loop1")
    running = queue.get()                      # loop0 holds the one heavy slot
    for n in range(3):
        queue.put(f"light{n}", f"light{n}")
    assert queue.get().item == "light0"        # loop1 skipped: no heavy slot free
    queue.done(running, run_s=1.5)             # the heavy slot frees: loop1 is first in turn again
    assert queue.get().item == "loop1"


def test_an_owner_alternating_loops_and_one_liners_stays_heavy():
    queue = FairQueue(slots=4, heavy_run_s=0.25 * 1.5)   # the pool's threshold at the default 1.5 s wall limit
    for run_s in (1.5, 0.01, 1.5, 0.01, 1.5, 0.01):
        queue.put("sly", "call")
        queue.done(queue.get(), run_s)
        assert queue.is_heavy("sly")


def test_an_owner_whose_calls_turn_light_is_light_again():
    queue = FairQueue(slots=4, heavy_run_s=0.4)
    for run_s in (1.5, 0.01, 0.01, 0.01):
        queue.put("reformed", "call")
        queue.done(queue.get(), run_s)
    assert not queue.is_heavy("reformed")


def test_one_slot_reserves_nothing():
    queue = FairQueue(slots=1, heavy_run_s=0.5, reserved=1)
    queue.put("loops", "warm-up")
    queue.done(queue.get(), run_s=1.5)
    queue.put("loops", "loop0")
    assert queue.get().item == "loop0"


def test_owners_are_forgotten_beyond_the_limit():
    queue = FairQueue(slots=2, heavy_run_s=0.5)
    queue.put("first", "call")
    queue.done(queue.get(), run_s=1.5)
    for n in range(REMEMBERED_OWNERS):
        queue.put(n, "call")
        queue.done(queue.get(), run_s=0.01)
    assert not queue.is_heavy("first")
    assert len(queue._cost) == REMEMBERED_OWNERS


@pytest.mark.parametrize("fair", [True, False])
def test_every_call_put_is_dispatched_exactly_once(fair):
    queue = FairQueue(slots=3, heavy_run_s=0.5, fair=fair)
    items = [(owner, f"{owner}{n}") for n in range(7) for owner in ("a", "b", "c", "d")]
    for owner, item in items:
        queue.put(owner, item)
    order = take_all(queue, finish=lambda turn: 1.0 if turn.owner in ("a", "b") else 0.01)
    assert sorted(order) == sorted(item for _, item in items)

"""Which waiting python_execute call the sandbox pool runs next: fair across episodes (issue 30 item 2).

The pool runs `slots` calls at once. First come, first served let one episode's burst, or a crowd of episodes
sending CPU-bound loops, hold every slot while a benign `print(1)` waited seconds behind them. Two rules here:

- *Round-robin across owners.* Calls are queued per owner (an episode's key), first in, first out within an
  owner; each dispatch serves the next owner in turn, so an owner with many waiting calls delays another
  owner's first call by at most one of its own.
- *A slot kept for light owners.* An owner is heavy while its calls' run time (a running average, weight 1/2
  per call) is at least `heavy_run_s`: its calls may take every slot but `reserved`. Episodes that loop
  CPU-bound code therefore cannot fill the pool: a benign call finds a slot that only owners whose calls end
  quickly may take. Averaging over calls rather than looking at the last one keeps an owner that
  alternates loops with one-liners heavy.

Why a wait is bounded: an owner keeps its place in the turn order while it is skipped (heavy, no heavy slot
free), and every dispatched call ends within the sandbox's start and wall limits, so a heavy slot frees within
those limits and the skipped owner is then first in turn. A call therefore waits at most (owners waiting) x
(its position in its owner's queue) dispatches, each bounded by the limits; none waits for ever.

No threads and no clock here: the pool (ecab/env/sandbox.py) holds the lock, calls `get` when a slot is free and
`done` when a call ends, with the call's run time as it measured it.
"""
from __future__ import annotations

import collections
from dataclasses import dataclass
from typing import Generic, Hashable, TypeVar

Item = TypeVar("Item")
REMEMBERED_OWNERS = 4096   # owners whose run-time average is kept; the least recently served one is forgotten
SHARED = "shared"          # the one owner of every call under `fair=False` (first come, first served)


@dataclass(frozen=True)
class Turn(Generic[Item]):
    """A dispatched call: hand it back to `done` when it ends."""
    owner: Hashable
    item: Item
    heavy: bool          # its owner was heavy when it was dispatched (it holds a heavy slot)


class FairQueue(Generic[Item]):
    """Round-robin over owners with waiting calls, FIFO within an owner, `reserved` slots kept for light owners.

    `fair=False` is the pool before issue 30 (every call one owner, no heavy owners): first come, first served,
    kept so that the bench can show both schedulers in one run."""

    def __init__(self, slots: int, *, heavy_run_s: float = float("inf"), reserved: int = 1, fair: bool = True):
        self.slots = max(1, slots)
        self.fair = fair
        # With one slot nothing can be reserved, or heavy owners would never run.
        self.reserved = min(max(0, reserved), self.slots - 1) if fair else 0
        self.heavy_run_s = heavy_run_s if fair else float("inf")
        self._waiting: dict[Hashable, collections.deque[Item]] = {}
        self._turns: collections.deque[Hashable] = collections.deque()   # owners with waiting calls, next first
        self._cost: collections.OrderedDict[Hashable, float] = collections.OrderedDict()
        self._heavy_running = 0

    def __len__(self) -> int:
        return sum(len(items) for items in self._waiting.values())

    def put(self, owner: Hashable, item: Item) -> None:
        owner = owner if self.fair else SHARED
        if owner not in self._waiting:
            self._waiting[owner] = collections.deque()
            self._turns.append(owner)     # a newly waiting owner takes its turn after those already waiting
        self._waiting[owner].append(item)

    def get(self) -> Turn[Item] | None:
        """The next call to run in a slot that just freed, or None: nothing waits, or only heavy owners wait and
        every slot they may take is taken."""
        heavy_allowed = self._heavy_running < self.slots - self.reserved
        for position, owner in enumerate(self._turns):
            heavy = self.is_heavy(owner)
            if heavy and not heavy_allowed:
                continue                  # skipped, but keeps its place: first in turn once a heavy slot frees
            del self._turns[position]
            items = self._waiting[owner]
            item = items.popleft()
            if items:
                self._turns.append(owner)
            else:
                del self._waiting[owner]
            self._heavy_running += heavy
            return Turn(owner, item, heavy)
        return None

    def done(self, turn: Turn[Item], run_s: float | None) -> None:
        """A dispatched call ended after running `run_s` seconds (its wait for a slot not counted); None: it
        never ran (cancelled while queued), which must not make its owner look light."""
        self._heavy_running -= turn.heavy
        if not self.fair or run_s is None:
            return
        cost = self._cost.pop(turn.owner, 0.0)
        self._cost[turn.owner] = (cost + run_s) / 2
        if len(self._cost) > REMEMBERED_OWNERS:   # an episode long over; a forgotten owner starts light again
            self._cost.popitem(last=False)

    def is_heavy(self, owner: Hashable) -> bool:
        return self._cost.get(owner, 0.0) >= self.heavy_run_s

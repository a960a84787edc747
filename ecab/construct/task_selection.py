"""Which of a benchmark's tasks a run holds: `benchmark.ids`, `benchmark.shuffle` and `benchmark.limit`
(issue 29 item 4), decided here and nowhere else.

- `ids=[...]`: exactly those tasks, in the given order; an id the benchmark lacks is one error naming it and
  the file; with limit or shuffle it is refused when the config is parsed (config/schema.py), not ignored.
- `shuffle=true`: the tasks in an order drawn from the run's `seed` (core/seeds.py), before the limit.
- `limit=N`: N tasks spread evenly over the intents, round-robin over the intents in the order they first
  appear in the file (for a generated benchmark: construct.intents), each intent's tasks in file (or shuffled)
  order. Taking the first N would cover only the first intents of a file written intent by intent.

`per_intent_needed` says how many tasks of each intent a limited selection can reach, so a generated
benchmark need only construct that many (benchmark_cache.py); the selection from such a partial benchmark is
the selection from the full one (the first k accepted tasks of an intent do not depend on how many are built).
"""
from __future__ import annotations

import math
import random
from typing import Sequence

from ecab.config import ConfigError
from ecab.core.seeds import construction_seed
from ecab.schema import Task


def select_tasks(tasks: Sequence[Task], *, limit: int | None = None, ids: Sequence[str] | None = None,
                 shuffle: bool = False, seed: int = 0, source: str = "the benchmark") -> list[Task]:
    """The run's tasks out of `tasks` (the runnable ones, in file order). `source` names the file in errors."""
    if ids is not None:
        return by_ids(tasks, ids, source)
    ordered = shuffled(tasks, seed) if shuffle else list(tasks)
    return stratified(ordered, limit) if limit is not None else ordered


def by_ids(tasks: Sequence[Task], ids: Sequence[str], source: str) -> list[Task]:
    """Exactly the tasks named, in the order named (a repeated id once)."""
    index = {t.id: t for t in tasks}
    missing = [i for i in ids if i not in index]
    if missing:
        raise ConfigError(f"benchmark.ids: {', '.join(map(str, missing))} not among the runnable tasks of {source}")
    return [index[i] for i in dict.fromkeys(ids)]


def shuffled(tasks: Sequence[Task], seed: int) -> list[Task]:
    """The tasks in a seeded order: the same seed gives the same order on any machine."""
    out = list(tasks)
    # seeds.py's construction recipe, with parts of its own: no other seed is drawn from ("order", seed).
    random.Random(construction_seed("order", seed)).shuffle(out)
    return out


def intents_in_order(tasks: Sequence[Task]) -> list[str]:
    """The intent categories in the order they first appear (the round-robin's order)."""
    return list(dict.fromkeys(t.intent_category for t in tasks))


def stratified(tasks: Sequence[Task], limit: int) -> list[Task]:
    """`limit` tasks round-robin over the intents: the first task of every intent, then the second, ...;
    an intent with no tasks left is passed over. The result keeps the round-robin order."""
    queues: dict[str, list[Task]] = {i: [] for i in intents_in_order(tasks)}
    for t in tasks:
        queues[t.intent_category].append(t)
    out: list[Task] = []
    depth = 0
    while len(out) < limit and any(depth < len(q) for q in queues.values()):
        out.extend(q[depth] for q in queues.values() if depth < len(q))
        depth += 1
    return out[:limit]


def per_intent_needed(limit: int, n_intents: int) -> int:
    """Tasks per intent that a stratified `limit` over `n_intents` intents takes when none runs short."""
    return max(1, math.ceil(limit / max(1, n_intents)))


def needs_more(tasks: Sequence[Task], limit: int, built: int) -> bool:
    """Is a construction of at most `built` tasks per intent (`tasks`) too small for a stratified `limit`?
    Its round-robin levels 0..built-1 are the full benchmark's (an intent with fewer than `built` ran out of
    candidates, so it has all it will ever have), so it falls short only when it holds fewer than `limit`
    tasks while some intent got all `built`: that intent's pool may hold more, which the full benchmark's
    round-robin would take."""
    counts = {i: 0 for i in intents_in_order(tasks)}
    for t in tasks:
        counts[t.intent_category] += 1
    return len(tasks) < limit and any(c >= built for c in counts.values())

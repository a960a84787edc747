"""benchmark.limit (stratified over intents), benchmark.ids, benchmark.shuffle (ecab/construct/task_selection.py),
through load_tasks as every command reads a task set, and a limited run's smaller construction
(benchmark_cache.ensure_benchmark) over the session's small catalog (conftest.py)."""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from ecab.config import ConfigError, load_config, parse
from ecab.construct.benchmark_cache import ensure_benchmark
from ecab.construct.task_selection import needs_more, stratified
from ecab.construct.task_set import load_tasks
from ecab.schema import read_tasks

N = 2   # tasks per intent of the full benchmark


def config(cache: Path, *overrides: str):
    return parse(load_config([f"benchmark.n_per_intent={N}", "construct.max_matches=3", "construct.workers=1",
                              "run.progress=false", f"cache_dir={cache}", *overrides]))


def with_selection(cfg, **kw):
    return dataclasses.replace(cfg, benchmark=dataclasses.replace(cfg.benchmark, **kw))


@pytest.fixture(scope="module")
def full(small_catalog, tmp_path_factory):
    """The whole benchmark (2 tasks per intent) in a cache of its own, and the config that built it."""
    cfg = config(tmp_path_factory.mktemp("selection-cache"))
    return cfg, load_tasks(cfg, small_catalog)


def intents(tasks) -> list[str]:
    return list(dict.fromkeys(t.intent_category for t in tasks))


def test_limit_spreads_over_intents_round_robin(full, small_catalog):
    cfg, tasks = full
    order = intents(tasks)
    assert len(order) == 8 and len(tasks) == 8 * N
    for n in (3, 8, 11):
        picked = load_tasks(with_selection(cfg, limit=n), small_catalog)
        assert len(picked) == n
        assert len(intents(picked)) == min(n, 8)            # the first N would cover ceil(N / 2) intents
    picked = load_tasks(with_selection(cfg, limit=11), small_catalog)
    first_round = [next(t for t in tasks if t.intent_category == i) for i in order]
    assert picked[:8] == first_round                        # every intent's first task, in the file's intent order
    assert [t.intent_category for t in picked[8:]] == order[:3]
    assert all(a.id < b.id for a, b in zip(picked, picked[8:]))   # then each intent's next one, in file order


def test_ids_select_exactly_and_refuse_unknown(full, small_catalog):
    cfg, tasks = full
    wanted = [tasks[5].id, tasks[0].id]
    assert [t.id for t in load_tasks(with_selection(cfg, ids=wanted), small_catalog)] == wanted
    with pytest.raises(ConfigError, match=r"benchmark\.ids: ecab_nope_0001 not among .*benchmark\.jsonl"):
        load_tasks(with_selection(cfg, ids=[tasks[0].id, "ecab_nope_0001"]), small_catalog)


def test_shuffle_is_seeded(full, small_catalog):
    cfg, tasks = full
    shuffled = load_tasks(with_selection(cfg, shuffle=True), small_catalog)
    assert [t.id for t in shuffled] == [t.id for t in load_tasks(with_selection(cfg, shuffle=True), small_catalog)]
    assert sorted(t.id for t in shuffled) == sorted(t.id for t in tasks)
    assert [t.id for t in shuffled] != [t.id for t in tasks]
    other_seed = load_tasks(dataclasses.replace(with_selection(cfg, shuffle=True), seed=1), small_catalog)
    assert [t.id for t in other_seed] != [t.id for t in shuffled]
    limited = load_tasks(with_selection(cfg, shuffle=True, limit=4), small_catalog)
    assert limited == stratified(shuffled, 4)               # shuffled first, then limited


def test_a_limited_run_constructs_only_what_its_selection_needs(full, small_catalog, tmp_path):
    cfg, tasks = full
    limited = with_selection(config(tmp_path), limit=8)       # one task per intent reaches 8
    picked = load_tasks(limited, small_catalog)
    assert picked == stratified(tasks, 8)                    # the same tasks as from the full benchmark
    folders = [p for p in (tmp_path / "benchmarks").iterdir() if p.is_dir()]
    assert len(folders) == 1
    built = read_tasks(folders[0] / "benchmark.jsonl")
    assert len(built) == 8 < len(tasks)                      # constructed: 1 per intent, not N
    # The full benchmark is cached under a folder of its own; a limited run then reads it instead.
    whole = ensure_benchmark(config(tmp_path), small_catalog, tmp_path, progress=False)
    assert whole.parent != folders[0] and len(read_tasks(whole)) == len(tasks)
    assert ensure_benchmark(limited, small_catalog, tmp_path, progress=False) == whole
    assert load_tasks(limited, small_catalog) == picked


def test_a_smaller_build_is_too_small_only_when_a_capped_intent_is_short(full):
    _, tasks = full
    first = stratified(tasks, 8)                             # a build of 1 per intent
    assert not needs_more(first, 8, built=1)
    assert needs_more(first[:7], 8, built=1)                 # 7 intents got their 1: more may exist
    assert not needs_more(first[:7], 7, built=1)
    assert not needs_more(tasks, 20, built=N + 1)            # every intent ran out below the build: complete


def test_ids_refuse_an_empty_list_and_a_limit_or_shuffle_they_would_ignore():
    for overrides, says in ((["benchmark.ids=[]"], "benchmark.ids=[] selects no task"),
                            (["benchmark.ids=[a]", "benchmark.limit=3"], "benchmark.limit does not apply"),
                            (["benchmark.ids=[a]", "benchmark.shuffle=true"], "benchmark.shuffle does not apply")):
        with pytest.raises(ConfigError, match=re.escape(says)):
            parse(load_config(overrides))


def test_selection_keys_parse_and_stay_out_of_an_unset_run_identity():
    from ecab.run import identity_of, redact, stable_hash

    def identity(*overrides):
        return identity_of(redact(dataclasses.asdict(parse(load_config(list(overrides))))))

    cfg = parse(load_config(["benchmark.ids=[ecab_product_search_0001,ecab_review_driven_0003]"]))
    assert cfg.benchmark.ids == ["ecab_product_search_0001", "ecab_review_driven_0003"]
    assert parse(load_config(["benchmark.shuffle=true"])).benchmark.shuffle
    plain = identity()
    # unset, they leave the config hash of runs recorded before them as it was (those runs resume)
    assert "ids" not in plain["benchmark"] and "shuffle" not in plain["benchmark"]
    assert stable_hash(identity("benchmark.ids=[a]")) != stable_hash(plain)
    assert stable_hash(identity("benchmark.shuffle=true")) != stable_hash(plain)

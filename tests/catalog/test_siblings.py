"""catalog=targets hard-negative siblings (ecab/catalog/siblings/, issue 15 deliverable 3): each rubric of each
released task has siblings that fail exactly it, the target stays the only product a task accepts, and an
attacker looking at ids, key sets, review counts, catalog order, rating statistics, prices or the family's
consensus cannot tell the real target from its generated siblings."""
from __future__ import annotations

import json
import math
import random
import re
import statistics
from collections import Counter

import pytest

from ecab.catalog.targets import iter_targets, targets_and_siblings
from ecab.catalog.build import catalog_fingerprint
from ecab.catalog.siblings.listing_text import replace_phrase
from ecab.catalog.siblings.make import DEFAULT_PER_RUBRIC
from ecab.catalog.review_match import default_review_checker
from ecab.judge.rules import check_rubric
from ecab.schema import read_tasks, write_jsonl

ASIN = re.compile(r"^B0[0-9A-Z]{8}$")
# A task whose rubrics cannot all be violated alone is possible (a budget a listed price under a cap can
# never exceed after the voucher); the released samples have two such rubrics (v3_sample_0971 r11 and
# v3_sample_0972 r3), reported by the build. No more than this many may go without siblings.
MAX_RUBRICS_WITHOUT_SIBLINGS = 2


@pytest.fixture(scope="module")
def world(released_samples):
    tasks = read_tasks(released_samples)
    real, distractors, line = targets_and_siblings(released_samples, n_distractors=300, seed=0)
    return tasks, real, distractors, line


def _families(tasks, real):
    """task -> [(product, reviews, is_target)] in catalog order."""
    by_id = {p.product_id: (p, rv) for p, rv, s in real if s is None}
    out = {}
    for task in tasks:
        target_id = task.target_product.product_id
        members = [(p, rv, s is None) for p, rv, s in real
                   if (s is not None and s.task_id == task.id) or (s is None and p.product_id == target_id)]
        assert by_id[task.target_product.product_id]
        out[task.id] = members
    return out


def _verdicts(task, product, reviews):
    checker = default_review_checker()
    return {r.id: check_rubric(r, product, voucher=task.voucher, reviews=reviews,
                               review_checker=checker).satisfied is True for r in task.rubrics}


def test_every_rubric_has_siblings_that_fail_only_it(world):
    tasks, real, _, line = world
    families = _families(tasks, real)
    missing = []
    for task in tasks:
        siblings = [(p, rv) for p, rv, is_target in families[task.id] if not is_target]
        per_rubric = Counter()
        query_only = 0
        for product, reviews in siblings:
            failed = {rid for rid, ok in _verdicts(task, product, reviews).items() if not ok}
            assert failed, (task.id, product.product_id)          # never a second product matching everything
            if len(failed) == 1:
                per_rubric[next(iter(failed))] += 1
            else:   # a query-only sibling: every query rubric holds
                assert all(r.info_source != "query" for r in task.rubrics if r.id in failed), (task.id, failed)
                query_only += 1
        for r in task.rubrics:
            if per_rubric[r.id] < DEFAULT_PER_RUBRIC:
                missing.append(f"{task.id} {r.id}")
        assert query_only >= 1, task.id
    assert len(missing) <= MAX_RUBRICS_WITHOUT_SIBLINGS, missing
    assert all(m.split()[0] + " " + m.split()[1] in line for m in missing)   # and the build says which


def test_target_stays_the_only_product_a_task_accepts(world):
    tasks, real, distractors, _ = world
    for task in tasks:
        products = [(p, rv) for p, rv, _ in real] + list(distractors)
        accepted = [p.product_id for p, rv in products if p.main_category == task.target_product.main_category
                    and all(check_rubric(r, p, voucher=task.voucher).satisfied is True
                            for r in task.rubrics if r.type != "review_opinion")
                    and all(_verdicts(task, p, rv)[r.id] for r in task.rubrics if r.type == "review_opinion")]
        assert accepted == [task.target_product.product_id], task.id


def test_siblings_have_the_form_of_real_listings(world):
    tasks, real, distractors, _ = world
    ids = [p.product_id for p, _, _ in real] + [p.product_id for p, _ in distractors]
    assert len(ids) == len(set(ids))
    families = _families(tasks, real)
    for task in tasks:
        target = task.target_product
        for p, reviews, is_target in families[task.id]:
            assert ASIN.match(p.product_id) and p.product_id[:4] == target.product_id[:4]
            assert list(p.details) == list(target.details)                     # same keys, same order
            assert p.main_category == target.main_category
            assert len(p.features) == len(target.features) and len(p.description) == len(target.description)
            assert (p.price is None) == (target.price is None)
            assert p.average_rating is not None and p.rating_number
            assert {r.product_id for r in reviews} == {p.product_id}
    # review counts follow one rule for targets and siblings
    counts = Counter((is_target, len(rv)) for fam in families.values() for _, rv, is_target in fam)
    assert {n for (t, n) in counts if t} <= {n for (t, n) in counts if not t}


def _attack_hits(families, target_of, score) -> tuple[float, float]:
    """(expected hits of picking a family's member by `score`'s lowest value, by chance), ties shared."""
    hits = chance = 0.0
    for tid, members in families.items():
        values = [(score(p, rv), p.product_id) for p, rv, _ in members]
        values = [(v, pid) for v, pid in values if v is not None]
        if len(values) < 3:
            continue
        best = min(v for v, _ in values)
        picked = [pid for v, pid in values if v == best]
        hits += (target_of[tid] in picked) / len(picked)
        chance += 1 / len(values)
    return hits, chance


def test_an_attacker_cannot_tell_the_target_from_its_siblings(world):
    tasks, real, _, _ = world
    families = _families(tasks, real)
    target_of = {t.id: t.target_product.product_id for t in tasks}
    position = {p.product_id: i for i, (p, _, _) in enumerate(real)}

    def median_distance(get):
        def score_for(tid):
            values = [get(p, rv) for p, rv, _ in families[tid] if get(p, rv) is not None]
            med = statistics.median(values) if values else None
            return lambda p, rv: None if get(p, rv) is None else abs(get(p, rv) - med)
        return score_for

    numbers = {
        "average_rating": lambda p, rv: p.average_rating,
        "log rating_number": lambda p, rv: math.log(p.rating_number),
        "price": lambda p, rv: p.price,
        "catalog position": lambda p, rv: position[p.product_id],
        "id digits": lambda p, rv: sum(c.isdigit() for c in p.product_id[4:]),
        "id value": lambda p, rv: int(p.product_id[4:], 36),
        "title length": lambda p, rv: len(p.title),
        "helpful votes": lambda p, rv: sum(r.helpful_vote for r in rv),
        "review stars": lambda p, rv: statistics.mean(r.rating for r in rv),
        "earliest review": lambda p, rv: min(r.timestamp for r in rv),
    }
    report = {}
    for name, get in numbers.items():
        for how, score in (("lowest", get), ("highest", lambda p, rv, g=get: None if g(p, rv) is None else -g(p, rv))):
            report[f"{how} {name}"] = _attack_hits(families, target_of, score)
        med = median_distance(get)
        hits = chance = 0.0
        for tid in families:
            h, c = _attack_hits({tid: families[tid]}, target_of, med(tid))
            hits, chance = hits + h, chance + c
        report[f"median {name}"] = (hits, chance)

    # consensus: the member agreeing with the family's most common value on the most fields
    hits = chance = 0.0
    for tid, members in families.items():
        members = list(members)
        random.Random(tid).shuffle(members)
        keys = list(members[0][0].details)
        common = {k: Counter(json.dumps(p.details.get(k), sort_keys=True) for p, _, _ in members).most_common(1)[0][0]
                  for k in keys}
        title = Counter(p.title for p, _, _ in members).most_common(1)[0][0]
        store = Counter(p.store for p, _, _ in members).most_common(1)[0][0]
        agree = {p.product_id: sum(json.dumps(p.details.get(k), sort_keys=True) == common[k] for k in keys)
                 + (p.title == title) + (p.store == store) for p, _, _ in members}
        top = max(agree.values())
        picked = [pid for pid, a in agree.items() if a == top]
        hits += (target_of[tid] in picked) / len(picked)
        chance += 1 / len(members)
    report["consensus"] = (hits, chance)

    # centrality: closest to the family's middle on every number at once and agreeing with its consensus
    hits = chance = 0.0
    for tid, members in families.items():
        spread = {}
        for name, get in numbers.items():
            values = [get(p, rv) for p, rv, _ in members if get(p, rv) is not None]
            if len(values) == len(members) and name not in ("catalog position", "id value", "id digits"):
                med = statistics.median(values)
                mad = statistics.median(abs(v - med) for v in values) or 1.0
                spread[name] = (get, med, mad)
        score = {p.product_id: sum(abs(get(p, rv) - med) / mad for get, med, mad in spread.values())
                 for p, rv, _ in members}
        top = min(score.values())
        picked = [pid for pid, v in score.items() if v == top]
        hits += (target_of[tid] in picked) / len(picked)
        chance += 1 / len(members)
    report["centrality"] = (hits, chance)

    # 34 families of ~35: chance is ~1 hit (about Poisson(1): 6 or more happens 0.06% of the time); a rule
    # that tells the target apart hits far more often
    cheats = {name: f"{h:.1f} hits (chance {c:.1f})" for name, (h, c) in report.items() if h > max(5.0, 4 * c)}
    assert not cheats, cheats


def test_siblings_are_deterministic_from_the_seed(released_samples, tmp_path):
    subset = tmp_path / "five.jsonl"
    write_jsonl(subset, read_tasks(released_samples)[::7])
    dump = lambda batches: [([p.to_dict() for p in b.products], [r.to_dict() for r in b.reviews]) for b in batches]
    once = dump(iter_targets(subset, n_distractors=20, seed=5, siblings=2, query_only_siblings=1))
    again = dump(iter_targets(subset, n_distractors=20, seed=5, siblings=2, query_only_siblings=1))
    other = dump(iter_targets(subset, n_distractors=20, seed=6, siblings=2, query_only_siblings=1))
    assert once == again and once != other
    assert sum(len(products) for products, _ in once) > 5 * 2 * 8       # 5 targets, 2 siblings per rubric, ...


def test_siblings_are_part_of_the_catalog_fingerprint(released_samples):
    base = {"source": "targets", "path": str(released_samples), "products": 10, "seed": 0}
    prints = {catalog_fingerprint({**base, "siblings": k, "query_only_siblings": q}) for k, q in
              ((3, 3), (0, 0), (2, 3), (3, 0))}
    assert len(prints) == 4
    assert catalog_fingerprint(base) == catalog_fingerprint({**base, "siblings": 3, "query_only_siblings": 3})


def test_replacing_a_value_follows_the_judges_spelling():
    assert replace_phrase("Connect USB Type-C devices", "USB Type C", "Lightning") == "Connect Lightning devices"
    assert replace_phrase("Works with Android, iOS.", "Android,Ios", "Windows 10") == "Works with Windows 10."
    assert replace_phrase("a bumper case", "Bumper", "Wallet") == "a wallet case"
    assert replace_phrase("Allowing all access", "All", "Oily") == "Allowing oily access"

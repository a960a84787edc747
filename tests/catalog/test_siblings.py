"""catalog=targets families (ecab/catalog/siblings/; issue 15 deliverable 3, issue 27 deliverable 2): the
listings matching each task's query are the full factorial over its hidden rubrics with the target re-listed
as the all-right vertex, listings failing one query rubric are spread evenly over the vertices, every hidden
field splits the query's matches in half, violations are real (no twin key or text keeps the required value),
the target stays the only product a task accepts, and an attacker reading only form (ids, key sets, review
counts, order, ratings, counts, prices and their cents, titles, the family's consensus, centrality) cannot
tell the target from its siblings."""
from __future__ import annotations

import itertools
import json
import math
import random
import re
import statistics
from collections import Counter

import pytest

from ecab.catalog.build import catalog_fingerprint
from ecab.catalog.review_match import default_review_checker
from ecab.catalog.siblings.checks import key_form, nominal_violation
from ecab.catalog.siblings.cube import MAX_CUBE_RUBRICS, design
from ecab.catalog.siblings.family import VARIED_FACTS
from ecab.catalog.siblings.listing_text import replace_phrase
from ecab.catalog.siblings.violate import Choice, apply
from ecab.catalog.targets import iter_targets, targets_and_siblings
from ecab.core.text import normalize, value_text
from ecab.judge.rules import check_rubric
from ecab.schema import Product, Rubric, Task, read_tasks, write_jsonl

ASIN = re.compile(r"^B0[0-9A-Z]{8}$")
HIDDEN = ("persona", "clarification")
PER_VERTEX = 1
# Rubrics no listing can fail alone in the released samples, reported by the build: a budget a listed price
# under a cap can never exceed after the voucher (v3_sample_0971 r11, v3_sample_0972 r3) and a brand the
# entity rubric names in the title (v3_sample_0003 r2: a listing of another brand titled "Oneplus" would
# still read as a OnePlus). None of them is hidden; no more than this many may go without a violator.
MAX_RUBRICS_NOBODY_FAILS_ALONE = 3


def _world(released_samples, seed):
    tasks = read_tasks(released_samples)
    real, distractors, line = targets_and_siblings(released_samples, n_distractors=300, seed=seed,
                                                   siblings=PER_VERTEX, query_only_siblings=1)
    return tasks, real, distractors, line


def _verdicts(tasks, real):
    """(task id, product id) -> the ids of the rubrics the listing fails, for every listing of every family."""
    checker = default_review_checker()
    out = {}
    for task in tasks:
        for p, reviews, _ in _family(task, real):
            out[(task.id, p.product_id)] = frozenset(
                r.id for r in task.rubrics if check_rubric(r, p, voucher=task.voucher, reviews=reviews,
                                                           review_checker=checker).satisfied is not True)
    return out


@pytest.fixture(scope="module")
def world(released_samples):
    return _world(released_samples, 0)


@pytest.fixture(scope="module")
def verdicts(world):
    tasks, real, _, _ = world
    return _verdicts(tasks, real)


def _family(task, real):
    """The task's family in catalog order: its siblings and its target's listing, as (product, reviews, record)."""
    target_id = task.target_product.product_id
    return [(p, rv, s) for p, rv, s in real
            if (s is not None and s.task_id == task.id) or p.product_id == target_id]


def _hidden(task):
    return {r.id for r in task.rubrics if r.info_source in HIDDEN}


def _matches(task, real, verdicts):
    """The family's listings matching every query rubric: what a perfect query-reader is left with."""
    hidden = _hidden(task)
    return [(p, rv, s) for p, rv, s in _family(task, real) if verdicts[(task.id, p.product_id)] <= hidden]


def _target_listing(task, real):
    return next(p for p, _, _ in real if p.product_id == task.target_product.product_id)


@pytest.mark.slow
def test_the_query_matches_are_the_full_factorial_over_the_hidden_rubrics(world, verdicts):
    tasks, real, _, line = world
    for task in tasks:
        hidden = _hidden(task)
        configurations = Counter(verdicts[(task.id, p.product_id)] for p, _, _ in _matches(task, real, verdicts))
        subsets = {frozenset(c) for n in range(len(hidden) + 1) for c in itertools.combinations(sorted(hidden), n)}
        assert set(configurations) == subsets and set(configurations.values()) == {1}, (task.id, configurations)
        assert verdicts[(task.id, task.target_product.product_id)] == frozenset(), task.id
    assert "34 targets re-listed" in line


def test_each_hidden_field_splits_the_query_matches_in_half_with_one_wrong_value(world, verdicts):
    tasks, real, _, _ = world
    for task in tasks:
        matches = _matches(task, real, verdicts)
        for r in task.rubrics:
            if r.info_source not in HIDDEN:
                continue
            right = [p for p, _, _ in matches if r.id not in verdicts[(task.id, p.product_id)]]
            assert len(right) * 2 == len(matches), (task.id, r.id, len(right), len(matches))
            if r.type == "attribute_match":
                field = r.field.split(".", 1)[1]
                wrong = {normalize(value_text(p.details.get(field))) for p, _, _ in matches
                         if r.id in verdicts[(task.id, p.product_id)] and field in p.details}
                assert len(wrong) <= 1, (task.id, r.id, wrong)       # the family's one wrong value


def test_query_violators_are_spread_evenly_over_the_vertices(world, verdicts):
    tasks, real, _, line = world
    nobody = []
    for task in tasks:
        hidden = _hidden(task)
        per_vertex = Counter()
        witnessed = Counter()
        for p, _, _ in _family(task, real):
            failed = verdicts[(task.id, p.product_id)]
            if failed <= hidden:
                witnessed.update(failed if len(failed) == 1 else ())
                continue
            assert len(failed - hidden) == 1, (task.id, p.product_id, failed)   # one query rubric, no more
            per_vertex[failed & hidden] += 1
            if not failed & hidden:
                witnessed.update(failed)
        assert len(per_vertex) == 2 ** len(hidden) and set(per_vertex.values()) == {PER_VERTEX}, (task.id, per_vertex)
        assert all(witnessed[r] == 1 for r in hidden), task.id            # every hidden rubric: its vertex e_i
        assert sum(witnessed[r.id] for r in task.rubrics if r.id not in hidden) == PER_VERTEX, task.id
        nobody += [f"{task.id} {r.id}" for r in task.rubrics if f"{task.id} {r.id} (" in line]
    assert len(nobody) <= MAX_RUBRICS_NOBODY_FAILS_ALONE, nobody


def test_target_stays_the_only_product_a_task_accepts(world):
    tasks, real, distractors, _ = world
    checker = default_review_checker()
    products = [(p, rv) for p, rv, _ in real] + list(distractors)
    for task in tasks:
        accepted = [p.product_id for p, rv in products if p.main_category == task.target_product.main_category
                    and all(check_rubric(r, p, voucher=task.voucher).satisfied is True
                            for r in task.rubrics if r.type != "review_opinion")
                    and all(check_rubric(r, p, voucher=task.voucher, reviews=rv, review_checker=checker).satisfied
                            is True for r in task.rubrics if r.type == "review_opinion")]
        assert accepted == [task.target_product.product_id], task.id


def test_the_target_is_re_listed_like_its_siblings(world):
    """Same id, same keys, every rubric kept; but its numbers and varied facts are the family's draws, not
    the file's values (the file's target is the fixed point the old siblings were perturbed from)."""
    tasks, real, _, _ = world
    moved = Counter()
    for task in tasks:
        listing, file = _target_listing(task, real), task.target_product
        record = next(s for p, _, s in real if p.product_id == file.product_id)
        assert record is not None and record.kind == "target" and record.violates == ()
        assert list(listing.details) == list(file.details) and listing.features == file.features
        moved["rating"] += listing.average_rating != file.average_rating
        moved["count"] += listing.rating_number != file.rating_number
        moved["price"] += file.price is not None and listing.price != file.price
        moved["date"] += listing.details.get("Date First Available") != file.details.get("Date First Available")
    priced = sum(t.target_product.price is not None for t in tasks)
    assert moved["count"] >= 0.8 * len(tasks) and moved["price"] >= 0.8 * priced, moved
    assert moved["rating"] >= 0.5 * len(tasks), moved      # coarse, and pinned by "min 5.0" rubrics
    assert moved["date"] >= 0.5 * len(tasks), moved


def test_prices_are_rendered_with_one_cents_distribution(world, verdicts):
    """Every query match's price, the target's included, ends in cents the file's real prices end in: a real
    price's ending (.22, .50) is as likely on any listing as on the target. (A listing failing a price rubric
    may need other cents to stay within a budget: 5.01 over a "< 5" cap with a 4.34 budget after 14% off.)"""
    tasks, real, _, _ = world
    cents = lambda price: int(round(float(price) * 100)) % 100       # noqa: E731
    file_cents = {cents(t.target_product.price) for t in tasks if t.target_product.price is not None}
    seen = Counter()
    unique_hits = chance = 0.0
    for task in tasks:
        matches = _matches(task, real, verdicts)
        match_ids = {p.product_id for p, _, _ in matches}
        for p, _, _ in _family(task, real):
            assert (p.price is None) == (task.target_product.price is None), (task.id, p.product_id)
            if p.price is not None and p.product_id in match_ids:
                assert cents(p.price) in file_cents, (task.id, p.product_id, p.price)
                seen[cents(p.price)] += 1
        priced = [p for p, _, _ in matches if p.price is not None]
        if len(priced) < 3:
            continue
        count = Counter(cents(p.price) for p in priced)
        unique = [p.product_id for p in priced if count[cents(p.price)] == 1]
        if unique:
            unique_hits += (task.target_product.product_id in unique) / len(unique)
            chance += 1 / len(priced)
    assert len(seen) >= 3                                   # the file's own spread, not one fixed ending
    assert unique_hits <= max(3.0, 2 * chance), (unique_hits, chance)


def test_drifted_facts_split_the_query_matches_in_half(world, verdicts):
    """On every fact no rubric reads that takes two values among the query's matches, each value is held by
    half of them: the target's value is neither a minority nor a majority (issue 27, cue 1). Varied facts
    (rank, date, weight, model number) are drawn per listing and are not checked here."""
    tasks, real, _, _ = world
    checked = 0
    for task in tasks:
        read = {key_form(r.field.split(".", 1)[-1]) for r in task.rubrics}
        matches = _matches(task, real, verdicts)
        keys = {k for p, _, _ in matches for k in p.details if k not in VARIED_FACTS and key_form(k) not in read}
        for key in keys:
            values = Counter(json.dumps(p.details.get(key), sort_keys=True) for p, _, _ in matches)
            if len(values) == 2:
                assert sorted(values.values()) == [len(matches) // 2] * 2, (task.id, key, values)
                checked += 1
    assert checked >= len(tasks)            # most families drift two facts


def test_violations_are_real(world, verdicts):
    """A listing failing a detail rubric keeps no near-duplicate key with the required value and no text
    stating it (issue 27, cue 5: v3_sample_0002's siblings changed "Special Feature" but kept "Special
    features": Activity Tracker, Pedometer); near-duplicate keys agree wherever the file's target's did."""
    tasks, real, _, _ = world
    for task in tasks:
        rubrics = {r.id: r for r in task.rubrics}
        twins_agree = {f for f, vs in _twin_values(task.target_product).items() if len(vs) == 1}
        for p, _, _ in _family(task, real):
            for rid in verdicts[(task.id, p.product_id)]:
                assert nominal_violation(rubrics[rid], p, task) is None, (task.id, p.product_id, rid)
            for f, vs in _twin_values(p).items():
                assert f not in twins_agree or len(vs) == 1, (task.id, p.product_id, f, vs)
    task = next(t for t in tasks if t.id == "v3_sample_0002")
    failing = [p for p, _, _ in _family(task, real) if "r11" in verdicts[(task.id, p.product_id)]]
    assert failing and all(normalize(p.details["Special features"]) != normalize("Activity Tracker, Pedometer")
                           for p in failing)


def _twin_values(product):
    out = {}
    for k, v in product.details.items():
        out.setdefault(key_form(k), set()).add(normalize(value_text(v)))
    return out


def test_a_nominal_violation_is_refused():
    task = Task(id="t", intent_category="product_search", user_query="q", target_product=Product(product_id="X"),
                rubrics=[Rubric(id="r1", type="attribute_match", field="details.Special Feature",
                                expected_value="Waterproof", info_source="persona"),
                         Rubric(id="r2", type="entity_match", field="title", expected_value="watch",
                                info_source="query")])
    product = Product(product_id="B0AAAA0001", title="Waterproof Sport Watch", main_category="C",
                      features=["Fully waterproof to 50 m"],
                      details={"Special Feature": "Waterproof", "Special features": "Waterproof, Lightweight"})
    nominal = Product.from_dict({**product.to_dict(), "details": {"Special Feature": "Lightweight",
                                                                   "Special features": "Waterproof"}})
    assert "Special features" in nominal_violation(task.rubrics[0], nominal, task)
    assert "text" in nominal_violation(task.rubrics[0], Product.from_dict(
        {**product.to_dict(), "details": {"Special Feature": "Lightweight"}}), task)
    assert apply(product, task.rubrics[0], Choice("r1", "Shockproof"), task, [task.rubrics[1]])
    assert product.details == {"Special Feature": "Shockproof", "Special features": "Shockproof, Lightweight"}
    assert product.title == "Shockproof Sport Watch" and product.features == ["Fully shockproof to 50 m"]
    assert nominal_violation(task.rubrics[0], product, task) is None


def test_the_cube_design():
    def rubrics(n, source):
        return [Rubric(id=f"{source[0]}{i}", type="attribute_match", field=f"details.F{source[0]}{i}",
                       expected_value="x", info_source=source) for i in range(n)]
    query = rubrics(5, "query")
    slots = design(rubrics(4, "persona"), query, ["A", "B"], random.Random(1), per_vertex=2, cube=True)
    matches = [s for s in slots if s.query is None]
    assert len(matches) == 16 and len({s.wrong for s in matches}) == 16 and matches[0].is_target
    assert sum(s.is_target for s in slots) == 1 and not matches[0].wrong
    violators = Counter(s.wrong for s in slots if s.query is not None)
    assert set(violators.values()) == {2} and len(violators) == 16
    for v in violators:     # a vertex's violators fail different query rubrics; each query rubric about as often
        assert len({s.query for s in slots if s.wrong == v and s.query}) == 2
    assert max(Counter(s.query for s in slots if s.query).values()) <= math.ceil(32 / 5)
    for key in ("A", "B"):
        assert sum(key in s.drift for s in matches) == 8
        assert sum(key in s.drift for s in slots if s.query) == 16
    big = design(rubrics(MAX_CUBE_RUBRICS + 1, "persona"), query, [], random.Random(2), per_vertex=0, cube=True)
    extra = [r for r in (f"p{i}" for i in range(MAX_CUBE_RUBRICS + 1))
             if sum(r in s.wrong for s in big) == 2 ** (MAX_CUBE_RUBRICS - 1) + 1]
    assert len(big) == 2 ** MAX_CUBE_RUBRICS + 1 and len(extra) == 1      # parity bit + its one witness
    assert {s.wrong for s in design(rubrics(4, "persona"), query, [], random.Random(3), per_vertex=1,
                                    cube=False)} == {frozenset()}


def test_siblings_have_the_form_of_real_listings(world):
    tasks, real, distractors, _ = world
    ids = [p.product_id for p, _, _ in real] + [p.product_id for p, _ in distractors]
    assert len(ids) == len(set(ids))
    for task in tasks:
        target = task.target_product
        for p, reviews, _ in _family(task, real):
            assert ASIN.match(p.product_id) and p.product_id[:4] == target.product_id[:4]
            assert list(p.details) == list(target.details)                     # same keys, same order
            assert p.main_category == target.main_category
            assert len(p.features) == len(target.features) and len(p.description) == len(target.description)
            assert (p.price is None) == (target.price is None)
            assert p.average_rating is not None and p.rating_number
            assert {r.product_id for r in reviews} == {p.product_id}
    # review counts follow one rule for targets and siblings
    counts = Counter((s.kind == "target", len(rv)) for _, rv, s in real if s is not None)
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


# A hidden rubric on a number (a rating floor, a price cap) puts the target in the better half of the query's
# matches on it: "the best rated" then finds it at twice chance in those tasks. That is a shopper's prior
# about hidden wishes, not a form cue; a number's attacks leave such tasks out (docs/decisions.md#target-siblings).
_HIDDEN_NUMBER = {"average_rating": "average_rating", "log rating_number": "rating_number", "price": "price"}


@pytest.mark.slow
def test_an_attacker_cannot_tell_the_target_from_its_siblings(world, verdicts, released_samples):
    """A perfect query-reader is left with the family's query matches (the cube); the attacks below pick one
    of them by form alone, in two catalogs (seeds 0 and 1: 68 families). The cues of issue 27 found the
    target at 2.5-4.5 times chance in the families it describes."""
    second = _world(released_samples, 1)
    report: dict[str, tuple[float, float]] = {}
    for one, its_verdicts in ((world, verdicts), (second, _verdicts(second[0], second[1]))):
        _attack(one, its_verdicts, report)
    # 68 families of 16: chance is ~4 hits (about Poisson(4.2): 13 or more happens 0.03% of the time);
    # the old siblings' "minority on two-valued keys, majority on the others" made 13-14 of them
    cheats = {name: f"{h:.1f} hits (chance {c:.1f})" for name, (h, c) in report.items() if h > max(9.0, 3 * c)}
    assert not cheats, cheats
    assert len(report) >= 50


def _attack(world, verdicts, report):
    """Every attack's (expected hits, chance) over one catalog's families, added into `report`."""
    tasks, real, _, _ = world
    families = {t.id: _matches(t, real, verdicts) for t in tasks}
    target_of = {t.id: t.target_product.product_id for t in tasks}
    numeric_hidden = {t.id: {r.field if r.type == "numeric_range" else "price" for r in t.rubrics
                             if r.info_source in HIDDEN and r.type in ("numeric_range", "budget_match")}
                      for t in tasks}
    position = {p.product_id: i for i, (p, _, _) in enumerate(real)}
    cents = lambda p: None if p.price is None else int(round(p.price * 100)) % 100     # noqa: E731

    def add(name, result):
        h, c = report.get(name, (0.0, 0.0))
        report[name] = (h + result[0], c + result[1])

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
        "feature chars": lambda p, rv: sum(len(f) for f in p.features),
        "price cents": lambda p, rv: cents(p),
    }
    for name, get in numbers.items():
        fams = {tid: m for tid, m in families.items() if _HIDDEN_NUMBER.get(name) not in numeric_hidden[tid]}
        for how, score in (("lowest", get), ("highest", lambda p, rv, g=get: None if g(p, rv) is None else -g(p, rv))):
            add(f"{how} {name}", _attack_hits(fams, target_of, score))
        hits = chance = 0.0
        for tid, members in fams.items():
            values = [get(p, rv) for p, rv, _ in members if get(p, rv) is not None]
            if not values:
                continue
            med = statistics.median(values)
            h, c = _attack_hits({tid: members}, target_of,
                                lambda p, rv: None if get(p, rv) is None else abs(get(p, rv) - med))
            hits, chance = hits + h, chance + c
        add(f"median {name}", (hits, chance))

    def pick(scores: dict[str, float], tid: str, n: int) -> tuple[float, float]:
        top = max(scores.values())
        picked = [pid for pid, v in scores.items() if v == top]
        return (target_of[tid] in picked) / len(picked), 1 / n

    for task in tasks:
        tid = task.id
        members = list(families[tid])
        random.Random(tid).shuffle(members)
        n = len(members)
        ids = [p.product_id for p, _, _ in members]
        # the value attacks read each key within the query matches, then within the whole family (the
        # violators of a query rubric are listings an agent finds too), in normalized form (as the judge reads)
        for where, context in (("matches", [p for p, _, _ in members]), ("family", [p for p, _, _ in
                                                                                  _family(task, real)])):
            size = len(context)
            keys = sorted({k for p in context for k in p.details})
            column = {k: [normalize(value_text(p.details.get(k))) for p in context] for k in keys}
            column = {k: c for k, c in column.items() if 1 < len(set(c)) < size}
            counts = {k: Counter(c) for k, c in column.items()}
            title = Counter(normalize(p.title) for p in context)
            store = Counter(normalize(p.store) for p in context)
            mine = {p.product_id: {k: normalize(value_text(p.details.get(k))) for k in column} for p, _, _ in members}
            # consensus: the most common value on the most fields, title and store included
            add(f"consensus ({where})", pick(
                {pid: sum(counts[k][mine[pid][k]] == max(counts[k].values()) for k in column)
                 + (title[normalize(m[0].title)] == max(title.values()))
                 + (store[normalize(m[0].store)] == max(store.values())) for pid, m in zip(ids, members)}, tid, n))
            # issue 27, cue 1: the minority on two-valued keys, the majority on the others
            add(f"minority on two-valued keys, majority on the others ({where})", pick(
                {pid: sum((counts[k][mine[pid][k]] * 2 < size) if len(counts[k]) == 2
                          else counts[k][mine[pid][k]] == max(counts[k].values()) for k in column)
                 for pid in ids}, tid, n))
            add(f"minority on two-valued keys ({where})", pick(
                {pid: sum(counts[k][mine[pid][k]] * 2 < size for k in column if len(counts[k]) == 2)
                 for pid in ids}, tid, n))
            # listings within one value (centrality); the most common / the rarest title
            table = [tuple(column[k][i] for k in column) for i in range(size)]
            add(f"central ({where})", pick(
                {pid: sum(sum(a != b for a, b in zip(tuple(mine[pid][k] for k in column), other)) <= 1
                          for other in table) for pid in ids}, tid, n))
            add(f"most common title ({where})", pick(
                {pid: title[normalize(m[0].title)] for pid, m in zip(ids, members)}, tid, n))
            add(f"rarest title ({where})", pick(
                {pid: -title[normalize(m[0].title)] for pid, m in zip(ids, members)}, tid, n))
        store = Counter(p.store for p, _, _ in members)
        price_cents = Counter(cents(p) for p, _, _ in members)
        for what, counter, get in (("store", store, lambda p: p.store), ("price cents", price_cents, cents)):
            add(f"most common {what}", pick({pid: counter[get(m[0])] for pid, m in zip(ids, members)}, tid, n))
            add(f"rarest {what}", pick({pid: -counter[get(m[0])] for pid, m in zip(ids, members)}, tid, n))
        add("price ending outside .99/.95/.49/.69/.29/.89", pick(
            {pid: float(cents(m[0]) is not None and cents(m[0]) not in (99, 95, 49, 69, 29, 89))
             for pid, m in zip(ids, members)}, tid, n))


def test_siblings_are_deterministic_from_the_seed(released_samples, tmp_path):
    subset = tmp_path / "five.jsonl"
    write_jsonl(subset, read_tasks(released_samples)[::7])
    dump = lambda batches: [([p.to_dict() for p in b.products], [r.to_dict() for r in b.reviews]) for b in batches]
    once = dump(iter_targets(subset, n_distractors=20, seed=5, siblings=1, query_only_siblings=1))
    again = dump(iter_targets(subset, n_distractors=20, seed=5, siblings=1, query_only_siblings=1))
    other = dump(iter_targets(subset, n_distractors=20, seed=6, siblings=1, query_only_siblings=1))
    assert once == again and once != other
    assert sum(len(products) for products, _ in once) > 5 * 16 + 20      # 5 families (thin pools: smaller cubes)


def test_without_siblings_the_targets_are_the_files(released_samples):
    tasks = read_tasks(released_samples)
    real, _, line = targets_and_siblings(released_samples, n_distractors=0, siblings=0, query_only_siblings=0)
    assert not line and [p.to_dict() for p, _, _ in real] == [t.target_product.to_dict() for t in tasks]


def test_siblings_are_part_of_the_catalog_fingerprint(released_samples):
    base = {"source": "targets", "path": str(released_samples), "products": 10, "seed": 0}
    prints = {catalog_fingerprint({**base, "siblings": k, "query_only_siblings": q}) for k, q in
              ((3, 3), (0, 0), (2, 3), (3, 0))}
    assert len(prints) == 4
    assert catalog_fingerprint(base) == catalog_fingerprint({**base, "siblings": 1, "query_only_siblings": 1})


def test_replacing_a_value_follows_the_judges_spelling():
    assert replace_phrase("Connect USB Type-C devices", "USB Type C", "Lightning") == "Connect Lightning devices"
    assert replace_phrase("Works with Android, iOS.", "Android,Ios", "Windows 10") == "Works with Windows 10."
    assert replace_phrase("a bumper case", "Bumper", "Wallet") == "a wallet case"
    assert replace_phrase("Allowing all access", "All", "Oily") == "Allowing oily access"
    assert replace_phrase("1.69 Inch HD screen", "1.69 Inches", "1.4 Inches") == "1.4 Inches HD screen"

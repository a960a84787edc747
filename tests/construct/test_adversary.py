"""The validity audit's adversaries (ecab/construct/adversary/, issue 27): the attacker's view, the blind dual-path
floor, the form cues, the learned attacker, the report's verdict and the audit CLI's options.

Product sets are built in memory, each with a planted cue (the cue must find the target) or none (every cue
must score chance); one test goes through the real audit on the tiny audit catalog (tests/conftest.py)."""
from __future__ import annotations

import random

import pytest

from conftest import AUDIT_PRODUCTS
from ecab.construct.adversary import CUES, learned_attack, summarize, task_view, verdict
from ecab.construct.adversary.cues import cue_hits, cue_key, cue_row, expected_hit
from ecab.construct.adversary.features import features, twin_conflicts
from ecab.construct.adversary.report import attack_table, headline_part
from ecab.schema import Product, Task

COLORS = ("Black", "Red", "Blue")


def listing(pid: str, *, title: str | None = None, price: float | None = 19.99, store: str = "Acme",
            rating: float = 4.5, count: int = 100, **details) -> Product:
    base = {"Color": "Black", "Material": "Steel", "Style": "Modern"}
    return Product(product_id=pid, title=title or f"Acme desk lamp {pid}", main_category="Home", store=store,
                   average_rating=rating, rating_number=count, price=price, details={**base, **details})


def view(products: list[Product], target: str = "T", correct: tuple[str, ...] = (), query: str = "a desk lamp"):
    """The attacker's view of `products` as the query's matches (and the whole category)."""
    return task_view(task_id="t", intent="product_search", target_id=target, query=query, matches=products,
                     all_rubrics=[p.product_id in correct or p.product_id == target for p in products],
                     category=products)


def hit(v, cue: str, direction: str = "max") -> float:
    return cue_hits(v)[cue_key(cue, direction)]


# ---------------------------------------------------------------------------------------------------------
# The floor
# ---------------------------------------------------------------------------------------------------------

def test_the_blind_floor_counts_every_all_rubric_candidate():
    products = [listing("T"), listing("A"), listing("B"), listing("C")]
    assert view(products).floor() == 0.25
    both = view(products, correct=("B",))             # B satisfies every rubric: a pick of B is correct too
    assert both.floor() == 0.5 and both.correct == [True, False, True, False]
    row = cue_row(both)
    assert (row["candidates"], row["correct"], row["floor"], row["target_candidate"]) == (4, 2, 0.5, True)
    # no candidate at all: no pick can be right, every cue included
    empty = cue_row(view([]))
    assert empty["floor"] == 0.0 and set(empty["cues"].values()) == {0.0} and len(empty["cues"]) == 2 * len(CUES)


def test_the_audit_labels_candidates_by_the_dual_path_rule(audit_catalog):
    from test_validity import TASK

    from ecab.construct.validity import audit_task

    views: list = []
    audit = audit_task(TASK, audit_catalog, include_reviews=False, views=views)
    (v,) = views
    # without reviews the query matches the target, BLUE, NOREVIEW and NYLON-BLUE (LOWRATED fails the rating);
    # NOREVIEW then satisfies every audited rubric, so it is correct beside the target
    assert {c.product_id for c in v.candidates} == {"AUD-TARGET", "AUD-BLUE", "AUD-NOREVIEW", "AUD-NYLON-BLUE"}
    assert {c.product_id for c in v.candidates if c.correct} == {"AUD-TARGET", "AUD-NOREVIEW"}
    assert audit.adversary["floor"] == 0.5 and audit.adversary["correct"] == 2
    assert audit.adversary["candidates"] == audit.match_query
    assert not v.searched and "search_rank:min" not in audit.adversary["cues"]   # no tool features by default
    assert any(p.product_id == "AUD-SPONGE" for p in AUDIT_PRODUCTS)
    assert "AUD-SPONGE" not in {p.product_id for p in v.family}     # another title: not in the family
    # with the tools' features: the search for the query ranks candidates
    with_tools: list = []
    audit_task(TASK, audit_catalog, include_reviews=False, tool_features=True, views=with_tools)
    assert with_tools[0].searched and all(c.reviews is not None for c in with_tools[0].candidates)


# ---------------------------------------------------------------------------------------------------------
# Cues: a planted cue is found, an exchangeable set gives chance
# ---------------------------------------------------------------------------------------------------------

def test_minority_on_a_two_valued_key_finds_the_target():
    # the siblings drifted Style; the target kept its value and so holds the minority
    products = [listing("T"), *[listing(f"S{i}", Style="Classic") for i in range(5)]]
    v = view(products)
    assert hit(v, "drift_minority@set") == 1.0
    assert hit(v, "drift_minority@set", "min") == 0.0
    assert hit(v, "consensus@set") == 1.0


def test_consensus_reads_drift_and_violations_together():
    # Style: drift (the target is the minority); Color: a violated rubric held by one sibling (the target
    # holds the majority); Finish: three values, the target the most common
    products = [listing("T", Finish="Matte"), listing("A", Style="Classic", Finish="Matte"),
                listing("B", Style="Classic", Color="Red", Finish="Gloss"),
                listing("C", Style="Classic", Finish="Satin"), listing("D", Style="Classic", Finish="Matte"),
                listing("E", Finish="Gloss", Style="Classic")]
    assert hit(view(products), "consensus@set") == 1.0


def test_a_unique_price_ending_finds_the_target():
    products = [listing("T", price=23.17), *[listing(f"S{i}", price=p) for i, p in
                                             enumerate([19.99, 21.99, 22.95, 18.95, 24.99])]]
    v = view(products)
    assert hit(v, "price_odd_ending") == 1.0
    assert hit(v, "price_cents@set", "min") == 1.0


def test_copied_titles_find_the_target_and_its_relistings():
    # the target's re-listings copy its title and satisfy every rubric: a pick of any is correct
    same = "Acme Pro LED Desk Lamp with USB Port"
    products = [listing("T", title=same), listing("R1", title=same), listing("R2", title=same),
                *[listing(f"O{i}", title=f"Lumo lamp {w}") for i, w in enumerate(["arc", "clip", "floor"])]]
    v = view(products, correct=("R1", "R2"))
    assert v.floor() == 0.5
    assert hit(v, "title_copies@set") == 1.0
    assert hit(v, "title_copies@set", "min") == 0.0
    # without the re-listings counted, only the target is right among three tied copies
    assert hit(view(products), "title_copies@set") == pytest.approx(1 / 3)


def test_a_near_duplicate_key_with_another_value_gives_a_sibling_away():
    target = listing("T", **{"Special Feature": "Dimmable", "Special features": "Dimmable"})
    sibling = listing("S", **{"Special Feature": "Timer", "Special features": "Dimmable"})
    assert twin_conflicts(target) == (1, 0) and twin_conflicts(sibling) == (1, 1)
    v = view([sibling, target])
    assert hit(v, "twin_conflicts", "min") == 1.0 and hit(v, "twin_conflicts", "max") == 0.0


def test_search_rank_and_ratings_are_cues_too():
    products = [listing("A", rating=4.1), listing("T", rating=4.9), listing("B", rating=4.3)]
    v = view(products)
    for c, rank in zip(v.candidates, (3, 1, None)):
        c.search_rank = rank
    v.searched = True
    assert hit(v, "search_rank", "min") == 1.0 and hit(v, "average_rating") == 1.0


def test_an_exchangeable_set_gives_every_cue_chance():
    # Two colours x two materials x two styles, every listing alike in price, title shape, store and ratings:
    # no cue can tell one from another, so each cue's pick is a coin among eight (ids differ in one digit).
    grid = [listing(f"P{i}", title="Acme desk lamp", Color=c, Material=m, Style=s)
            for i, (c, m, s) in enumerate((c, m, s) for c in ("Black", "Red") for m in ("Steel", "Wood")
                                          for s in ("Modern", "Classic"))]
    order_cues = {"catalog_order"}     # build order differs by construction; checked over positions below
    for target in (grid[0].product_id, grid[5].product_id):
        hits = cue_hits(view(grid, target=target))
        for cue in CUES:
            if cue.name in order_cues or cue_key(cue, "max") not in hits:
                continue
            for d in ("max", "min"):
                assert hits[cue_key(cue, d)] == pytest.approx(1 / 8), (cue.name, d)


def test_no_cue_reads_the_label():
    # Over every position of the target, any score that ignores the labels hits exactly 1/n on average:
    # a cue above that would be reading which candidate is the target.
    rng = random.Random(3)
    products = [listing(f"X{rng.randint(100, 999)}{i}", price=round(rng.uniform(5, 40), 2),
                        rating=round(rng.uniform(3, 5), 1), count=rng.randint(1, 500), Color=rng.choice(COLORS),
                        Style=rng.choice(["Modern", "Classic"]), store=rng.choice(["Acme", "Lumo"]))
                for i in range(7)]
    totals: dict[str, float] = {}
    for p in products:
        for k, h in cue_hits(view(products, target=p.product_id)).items():
            totals[k] = totals.get(k, 0.0) + h
    assert totals and all(t / len(products) == pytest.approx(1 / 7, abs=1e-5) for t in totals.values())


def test_expected_hit_breaks_ties_at_random_and_never_prefers_missing_values():
    assert expected_hit([1, 3, 3, 2], [False, True, False, False]) == 0.5
    assert expected_hit([1, 3, 3, 2], [True, False, False, False], "min") == 1.0
    nan = float("nan")
    assert expected_hit([nan, 2.0], [True, False]) == 0.0 and expected_hit([nan, 2.0], [True, False], "min") == 0.0
    assert expected_hit([nan, nan], [True, False]) == 0.5


# ---------------------------------------------------------------------------------------------------------
# The learned attacker
# ---------------------------------------------------------------------------------------------------------

def _random_task(rng: random.Random, n: int, tid: int, planted: bool):
    products = [listing(f"P{tid:03d}{i}", price=rng.choice([19.99, 24.95, 21.49, 29.99, 17.69]),
                        rating=round(rng.uniform(3.5, 5.0), 1), count=rng.randint(5, 900),
                        Color=rng.choice(COLORS), Style=rng.choice(["Modern", "Classic"]),
                        title=f"Acme desk lamp {rng.choice(['arc', 'clip', 'pro', 'mini'])}")
                for i in range(n)]
    target = rng.randrange(n)
    if planted:       # the target's price alone ends in .37
        products[target] = listing(products[target].product_id, price=23.37,
                                   rating=products[target].average_rating, count=products[target].rating_number,
                                   title=products[target].title, **products[target].details)
    return view(products, target=products[target].product_id)


def test_the_learned_attacker_finds_a_planted_cue():
    rng = random.Random(11)
    views = [_random_task(rng, 8, t, planted=True) for t in range(40)]
    got = learned_attack(views, seed=0)
    assert got["floor"] == pytest.approx(1 / 8)
    assert got["accuracy"] >= 0.9 and got["tasks"] == 40
    assert learned_attack(views, seed=0) == got          # deterministic


def test_the_learned_attacker_scores_about_chance_on_exchangeable_sets():
    rng = random.Random(12)
    views = [_random_task(rng, 8, t, planted=False) for t in range(60)]
    got = learned_attack(views, seed=0)
    assert got["accuracy"] <= 1 / 8 + 0.15, got["models"]


# ---------------------------------------------------------------------------------------------------------
# The set's figures, the headline, the verdict, the CLI
# ---------------------------------------------------------------------------------------------------------

def test_the_summary_and_the_headline_carry_floor_and_best_cue():
    planted = [listing("T", price=23.17), *[listing(f"S{i}", price=19.99) for i in range(3)]]
    rows = [cue_row(view(planted)), cue_row(view([listing("T"), listing("A")], correct=("A",))), None]
    s = summarize(rows)
    assert s["tasks"] == 2 and s["floor"] == pytest.approx((0.25 + 1.0) / 2)
    assert s["tasks_multi_correct"] == 1
    assert s["cues"][cue_key("price_odd_ending", "max")] == pytest.approx((1.0 + 1.0) / 2)
    assert s["best_cue"]["accuracy"] == 1.0 and s["best_cue"]["x_chance"] == pytest.approx(1 / 0.625)
    assert set(headline_part(s)) == {"tasks", "floor", "tasks_multi_correct", "best_cue"}
    assert summarize([None]) is None

    from ecab.construct.load_bearing import TaskAudit
    from ecab.construct.validity import headline_record
    from ecab.construct.validity_report import aggregate, headline_of

    audit = TaskAudit("t", "product_search", "Home", "T", 4, 4, 2, 1, True, True, False, adversary=rows[0])
    summary = aggregate([TaskAudit.from_dict(audit.to_dict())])
    assert "a blind pick among them is correct in 25.0%" in headline_of(summary)
    record = headline_record(summary, "computed for this run")
    assert record["adversary"]["floor"] == 0.25 and record["adversary"]["best_cue"]["accuracy"] == 1.0


def test_the_chance_p_value_is_a_poisson_binomial_tail():
    from ecab.construct.adversary.report import chance_tail

    assert chance_tail([0.5, 0.5], 1) == pytest.approx(0.75) and chance_tail([0.5, 0.5], 2) == pytest.approx(0.25)
    assert chance_tail([0.1] * 30, 0) == 1.0
    assert chance_tail([0.1] * 30, 12) < 1e-4 < chance_tail([0.1] * 30, 4)
    rows = [cue_row(view([listing("T", price=23.17), *[listing(f"S{i}", price=19.99) for i in range(3)]]))] * 8
    s = summarize(rows)
    assert s["cue_p"][cue_key("price_odd_ending", "max")] == pytest.approx(0.25 ** 8, abs=1e-6)
    assert s["best_cue"]["p_bonferroni"] == pytest.approx(min(1.0, 0.25 ** 8 * len(s["cues"])), abs=1e-4)


def test_the_verdict_checks_issue_27s_criteria():
    s = {"floor": 0.08, "best_cue": {"cue": "price_odd_ending:max", "accuracy": 0.15, "x_chance": 1.875}}
    base = {"heuristic": {"overall": 0.35}, "query-only": {"overall": 0.12}, "oracle": {"overall": 1.0}}
    ok = {c["criterion"]: c["ok"] for c in verdict(s, {"accuracy": 0.13}, base, generated=True)}
    assert all(ok.values()), ok
    bad = {c["criterion"]: c["ok"] for c in verdict({**s, "floor": 0.2}, {"accuracy": 0.3},
                                                     {**base, "oracle": {"overall": 0.9}}, generated=True)}
    assert bad == {"learned attacker <= floor + 5 points": False, "query-only agent <= floor + 5 points": True,
                   "floor <= 10% (generated world)": False, "no cue > 2x chance": True,
                   "heuristic - query-only >= 15 points": True, "oracle 100%": False}
    # released tasks: the 10% floor is not required; without baselines their criteria are not measured
    rel = {c["criterion"]: c["ok"] for c in verdict(s, None, None, generated=False)}
    assert rel["floor <= 10% (generated world)"] is None and rel["oracle 100%"] is None


def test_the_attack_table_lists_every_cue_the_learned_attacker_and_the_baselines():
    rows = [cue_row(view([listing("T", price=23.17), *[listing(f"S{i}") for i in range(3)]]))]
    md = attack_table(summarize(rows), {"accuracy": 0.5, "models": {"gbdt": {"accuracy": 0.5}}, "features": 10},
                      {"query-only": {"overall": None, "error": "conf/model/query-only.yaml does not exist"},
                       "heuristic": {"overall": 0.2, "catalog": "b" * 64}},
                      world="w", catalog="a" * 64)
    assert "**blind floor**" in md and "**learned attacker**" in md and "price_odd_ending" in md
    assert "model=query-only" in md and "does not exist" in md and "verdict: FAIL" in md
    assert "on catalog bbbbbbbbbbbb, not the audit's aaaaaaaaaaaa" in md


def test_audit_options(monkeypatch):
    from ecab.construct.__main__ import BASELINE_MODELS, parse_audit_args, run_baselines

    assert {"random", "heuristic", "query-only", "oracle"} <= set(BASELINE_MODELS)
    flags, path, overrides = parse_audit_args(["--no-reviews", "--json", "out/a.json", "benchmark.limit=5"])
    assert flags == {"--no-reviews"} and path == "out/a.json" and overrides == ["benchmark.limit=5"]
    assert parse_audit_args(["--json=x.json"])[1] == "x.json"
    with pytest.raises(SystemExit):
        parse_audit_args(["--bogus"])
    with pytest.raises(SystemExit):
        parse_audit_args(["--json"])
    # a model without its config file is reported, not run
    got = run_baselines([], models=("no-such-model",))
    assert got["no-such-model"]["overall"] is None and "does not exist" in got["no-such-model"]["error"]


def test_features_cover_what_the_tools_show():
    v = view([listing("T", **{"Date First Available": "March 3, 2021"}), listing("A")])
    f = features(v)
    assert f["date_first_available"][1] != f["date_first_available"][1]      # NaN: A has no date
    assert {"price_cents", "title_copies@family", "store_share@set", "id_prefix@set", "rating_number"} <= set(f)
    assert all(len(values) == 2 for values in f.values())


def test_a_task_round_trips_through_the_view():
    # the view is built from plain products and a task's ids only: nothing of the profile or clarification
    task = Task.from_dict({"id": "t1", "intent_category": "product_search", "user_query": "a lamp",
                           "target_product": listing("T").to_dict(), "rubrics": []})
    v = task_view(task_id=task.id, intent=task.intent_category, target_id=task.target_product.product_id,
                  query=task.user_query, matches=[listing("T"), listing("A")], all_rubrics=[True, False])
    assert v.correct == [True, False] and v.family == [c.product for c in v.candidates]

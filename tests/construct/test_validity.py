"""The validity audit (ecab/construct/validity.py, issue 15): load-bearing rubrics, match counts, the query
singling out the target, on a tiny LanceDB catalog whose products differ from the target in known ways
(tests/conftest.py AUDIT_PRODUCTS), and the early-stopping core against a brute-force count."""
from __future__ import annotations

import random
from pathlib import Path

from conftest import AUDIT_OPINION, AUDIT_PRODUCTS, all_products
from ecab.construct.load_bearing import TaskAudit, audit_products
from ecab.construct.structural_picks import structural_picks
from ecab.construct.validity import audit_task, audit_tasks
from ecab.construct.validity_report import aggregate, headline_of
from ecab.judge.rules import check_rubric
from ecab.schema import Product, Task

TARGET = AUDIT_PRODUCTS[0]


def rubric(rid: str, kind: str, field: str, expected, source: str = "query", **extras) -> dict:
    return {"id": rid, "type": kind, "field": field, "expected_value": expected, "info_source": source, **extras}


def make_task(tid: str, rubrics: list[dict], intent: str = "product_search", target: Product = TARGET) -> Task:
    return Task.from_dict({"id": tid, "intent_category": intent, "user_query": "a face mask brush",
                           "target_product": target.to_dict(), "rubrics": rubrics})


ENTITY = rubric("r0", "entity_match", "title", "face mask brush", title_span="Face Mask Brush")

# r1 brand (query): every product shares it -> no product fails only it -> not load-bearing.
# r2 rating (query): AUD-LOWRATED fails only it -> load-bearing.
# r3 review (query): AUD-NOREVIEW fails only it -> load-bearing.
# r4 color (persona): AUD-BLUE fails only it -> load-bearing.
# r5 material (clarification): AUD-NYLON-BLUE fails it AND color -> not load-bearing.
TASK = make_task("t-hidden", [
    ENTITY,
    rubric("r1", "attribute_match", "details.Brand", "Glowbrush"),
    rubric("r2", "numeric_range", "average_rating", {"min": 4.0}),
    rubric("r3", "review_opinion", "review", AUDIT_OPINION),
    rubric("r4", "attribute_match", "details.Color", "Pink", "persona"),
    rubric("r5", "attribute_match", "details.Material", "Silicone", "clarification"),
])

# Everything in the query: only the target satisfies it, so the query alone singles it out.
TASK_QUERY_ONLY = make_task("t-query", [
    ENTITY,
    rubric("r1", "attribute_match", "details.Color", "Pink"),
    rubric("r2", "numeric_range", "average_rating", {"min": 4.0}),
    rubric("r3", "review_opinion", "review", AUDIT_OPINION),
    rubric("r4", "attribute_match", "details.Material", "Silicone"),
    rubric("r5", "attribute_match", "details.Brand", "Glowbrush", "persona"),
], intent="feature_combination")


def flags(audit: TaskAudit) -> dict[str, bool | None]:
    return {r.id: r.load_bearing for r in audit.rubrics}


def test_load_bearing_rubrics_are_the_ones_a_product_fails_alone(audit_catalog):
    audit = audit_task(TASK, audit_catalog)
    assert flags(audit) == {"r0": False, "r1": False, "r2": True, "r3": True, "r4": True, "r5": False}
    assert {r.id: r.witnesses for r in audit.rubrics}["r4"] == 1   # AUD-BLUE only
    assert audit.candidates == len(AUDIT_PRODUCTS)                 # the target's main category only
    # query: target, BLUE, NYLON-BLUE; + persona (Pink): target only; all: target only
    assert (audit.match_query, audit.match_query_persona, audit.match_all) == (3, 1, 1)
    assert audit.target_in_catalog and audit.target_satisfies_all
    assert not audit.query_singles_out
    assert audit.load_bearing_share("persona") == 1.0 and audit.load_bearing_share("clarification") == 0.0


def test_query_alone_singles_out_the_target(audit_catalog):
    audit = audit_task(TASK_QUERY_ONLY, audit_catalog)
    assert audit.query_singles_out and audit.match_query == 1
    assert flags(audit)["r5"] is False           # a hidden rubric the query already implies
    assert flags(audit)["r1"] is True            # AUD-BLUE fails only the color


def test_reviews_left_out_are_reported_not_guessed(audit_catalog):
    audit = audit_task(TASK, audit_catalog, include_reviews=False)
    assert flags(audit)["r3"] is None            # not audited
    assert audit.match_all == 2                  # AUD-NOREVIEW now matches every audited rubric
    assert audit.skipped and "r3" in audit.skipped[0]
    summary = aggregate([audit], include_reviews=False)
    assert summary["overall"]["rubrics_not_audited"] == 1
    assert "left out" in headline_of(summary)


def test_report_groups_by_intent_source_and_type(audit_catalog):
    report = audit_tasks([TASK, TASK_QUERY_ONLY], audit_catalog)
    s = report.summary()
    o = s["overall"]
    assert o["tasks"] == 2 and o["query_singles_out"] == 0.5
    assert o["load_bearing"]["persona"] == {"rubrics": 2, "load_bearing": 1, "share": 0.5}
    assert o["load_bearing"]["clarification"]["share"] == 0.0
    assert o["load_bearing_by_type"]["review_opinion"]["share"] == 1.0
    assert set(s["by_intent"]) == {"product_search", "feature_combination"}
    assert s["by_intent"]["feature_combination"]["query_singles_out"] == 1.0
    md = report.markdown({"random": {"overall": 0.1, "by_intent": {"product_search": 0.0}}})
    assert "| **overall** | 2 |" in md and "random acc." in md and "review_opinion" in md
    # rows round-trip (what a benchmark folder stores) and aggregate to the same figures
    rows = [TaskAudit.from_dict(r) for r in report.rows()]
    assert aggregate(rows) == s
    assert report.timing()["checks"] > 0


def test_a_target_missing_from_the_catalog_is_still_audited(audit_catalog):
    ghost = Product.from_dict({**TARGET.to_dict(), "product_id": "AUD-GHOST"})
    task = make_task("t-ghost", TASK.to_dict()["rubrics"], target=ghost)
    audit = audit_task(task, audit_catalog, include_reviews=False)
    assert not audit.target_in_catalog and audit.target_satisfies_all
    assert audit.match_all == 2                   # AUD-TARGET (the ghost's twin) and AUD-NOREVIEW
    assert not audit.query_singles_out
    # with reviews: the catalog has none for the ghost, and the audit says the target fails its rubrics
    assert not audit_task(task, audit_catalog).target_satisfies_all


# ---------------------------------------------------------------------------------------------------------
# The early-stopping core counts exactly what a brute-force pass of the judge counts
# ---------------------------------------------------------------------------------------------------------

def _random_task(rng: random.Random, product: Product, k: int) -> Task:
    rubrics = []
    details = [(key, value) for key, value in product.details.items() if isinstance(value, str) and value.strip()]
    for n, (key, value) in enumerate(rng.sample(details, min(k, len(details)))):
        source = rng.choice(["query", "query", "persona", "clarification"])
        option = value.split(",")[0].strip() or value
        rubrics.append(rubric(f"a{n}", "attribute_match", f"details.{key}", option, source))
    if product.average_rating is not None:
        rubrics.append(rubric("n1", "numeric_range", "average_rating",
                              {"min": max(1.0, round(float(product.average_rating) - 0.5, 1))},
                              rng.choice(["query", "clarification"])))
    words = [w for w in (product.title or "").split() if w.isalpha() and len(w) > 3]
    if words:
        rubrics.append(rubric("e", "entity_match", "title", rng.choice(words)))
    return make_task(f"rand-{product.product_id}", rubrics, target=product)


def _brute_force(task: Task, products: list[Product]) -> dict:
    sat = {p.product_id: [check_rubric(r, p, voucher=task.voucher).satisfied is True for r in task.rubrics]
           for p in products}
    src = [r.info_source for r in task.rubrics]
    tid = task.target_product.product_id
    q = [pid for pid, s in sat.items() if all(ok for ok, so in zip(s, src) if so == "query")]
    qp = [pid for pid, s in sat.items() if all(ok for ok, so in zip(s, src) if so != "clarification")]
    witnesses = [sum(1 for pid, s in sat.items() if pid != tid and not s[i] and sum(s) == len(s) - 1)
                 for i in range(len(task.rubrics))]
    return {"match_query": len(q), "match_query_persona": len(qp),
            "match_all": sum(all(s) for s in sat.values()), "witnesses": witnesses,
            "query_singles_out": all(pid == tid for pid in q)}


def test_early_stopping_matches_brute_force(small_catalog):
    products = all_products(small_catalog)
    by_category: dict[str, list[Product]] = {}
    for p in products:
        by_category.setdefault(p.main_category, []).append(p)
    rng = random.Random(5)
    for product in rng.sample(products, 25):
        task = _random_task(rng, product, rng.randint(2, 7))
        pool = by_category[product.main_category]
        got = audit_products(task.rubrics, task.target_product, pool, voucher=task.voucher, include_reviews=False)
        want = _brute_force(task, pool)
        assert (got.match_query, got.match_query_persona, got.match_all, got.query_singles_out) == \
            (want["match_query"], want["match_query_persona"], want["match_all"], want["query_singles_out"]), task.id
        assert [r.witnesses for r in got.rubrics] == want["witnesses"], task.id


# ---------------------------------------------------------------------------------------------------------
# At the end of construction, and in a run's summary
# ---------------------------------------------------------------------------------------------------------

def test_construction_writes_the_audit_and_a_run_reads_it(small_catalog, tmp_path):
    import json

    from ecab.construct.benchmark_folder import AUDIT_FILE, REJECTIONS_TABLE, REPORT_FILE
    from ecab.construct.pipeline import construct
    from ecab.construct.validity import read_rows, task_digest, task_set_audit

    cfg = {"construct": {"seed": 0, "n_per_intent": 1, "intents": ["product_search", "review_driven"],
                         "max_matches": 3, "workers": 1, "max_attempts": 3, "verbalizer": "template"}}
    out = tmp_path / "bench"
    result = construct(cfg, small_catalog, out_dir=out, progress=False)
    rows = read_rows(out / AUDIT_FILE)
    assert [(r.task_id, r.digest) for r in rows] == [(t.id, task_digest(t)) for t in result.tasks]
    # review_opinion is left out at construction by default, and said so
    assert all(r.load_bearing is None for row in rows for r in row.rubrics if r.type == "review_opinion")
    report = json.loads((out / REPORT_FILE).read_text())
    assert report["audit"]["overall"]["tasks"] == len(result.tasks)
    assert "construct.audit_reviews=false" in report["audit"]["review_opinion"]
    assert report["timing"]["audit"]["checks"] > 0
    assert "## Validity audit" in (out / REJECTIONS_TABLE).read_text()

    # a run over (a subset of) those tasks takes its headline from the folder
    got = task_set_audit(result.tasks[:1], small_catalog, benchmark_dir=out)
    assert got["status"] == "audited" and got["source"] == "benchmark manifest" and got["tasks"] == 1
    # a task the folder did not audit (other rubrics): computed for the run instead
    changed = Task.from_dict({**result.tasks[0].to_dict(), "rubrics": result.tasks[0].to_dict()["rubrics"][:-1]})
    got = task_set_audit([changed], small_catalog, benchmark_dir=out)
    assert got["source"] == "computed for this run" and got["tasks"] == 1
    # too big a catalog to audit at run time: not audited, with the reason
    got = task_set_audit([changed], small_catalog, benchmark_dir=None, max_products=10)
    assert got["status"] == "not audited" and "products" in got["reason"]


def test_reduce_shows_the_audit_of_the_run_manifest(tmp_path):
    import json
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reduce"))   # tests/reduce is not a package
    from test_reduce import make_run, write_run_folder

    from ecab.construct.validity import headline_record
    from ecab.reduce import reduce_run

    run_dir = write_run_folder(tmp_path, make_run())
    manifest = json.loads((run_dir / "manifest.json").read_text())
    summary = aggregate([TaskAudit("t", "product_search", "c", "p", 10, 3, 2, 1, True, True, False)])
    manifest["task_audit"] = headline_record(summary, "benchmark manifest")
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    got = reduce_run(run_dir, plots=False)
    assert got["task_audit"]["headline"] == headline_of(summary)
    md = (run_dir / "summary.md").read_text()
    assert "## Task-set audit" in md and headline_of(summary) in md and "| product_search | 0.0% |" in md


# --- structural picks: what a script picking among the query's matches without asking would score ----------

def _listing(pid: str, rating: float = 4.5, **details) -> Product:
    base = {"Color": "Black", "Material": "Steel", "Style": "Modern", "Item model number": f"M-{pid}"}
    return Product(product_id=pid, title="lamp", main_category="Home", average_rating=rating, rating_number=10,
                   details={**base, **details})


def test_a_star_of_one_value_variants_gives_the_target_away():
    # Every other listing is the target with one value changed: the target holds every majority value and
    # is one value from all of them (the model number differs everywhere and carries no structure).
    star = [_listing("T"), _listing("A", Color="Red"), _listing("B", Material="Wood"),
            _listing("C", Style="Classic")]
    rand, typical, central = structural_picks(star, "T")
    assert (rand, typical, central) == (0.25, 1.0, 1.0)


def test_a_symmetric_grid_does_not():
    # Two colors x two materials: every listing looks alike; ratings tie, so a pick is a coin among four.
    grid = [_listing("T"), _listing("A", Color="Red"), _listing("B", Material="Wood"),
            _listing("C", Color="Red", Material="Wood")]
    assert structural_picks(grid, "T") == (0.25, 0.25, 0.25)
    # Ties go to the best rated: a better-rated twin takes the pick from the target.
    rated = grid[:3] + [_listing("C", rating=4.9, Color="Red", Material="Wood")]
    assert structural_picks(rated, "T")[1:] == (0.0, 0.0)


def test_the_target_outside_the_matches_is_never_picked():
    assert structural_picks([_listing("A"), _listing("B")], "T") == (0.0, 0.0, 0.0)
    assert structural_picks([], "T") == (0.0, 0.0, 0.0)


def test_the_summary_and_headline_carry_the_picks():
    row = TaskAudit(task_id="t", intent="product_search", category="Home", target_id="T", candidates=4,
                    match_query=4, match_query_persona=2, match_all=1, target_in_catalog=True,
                    target_satisfies_all=True, query_singles_out=False,
                    pick_query_match=0.25, pick_typical=1.0, pick_central=0.5)
    summary = aggregate([row, TaskAudit.from_dict({**row.to_dict(), "pick_typical": None})])
    picks = summary["overall"]["structural_picks"]
    assert picks == {"query_match": 0.25, "typical": 1.0, "central": 0.5}   # rows without picks are left out
    assert "100.0% on the most typical" in headline_of(summary)

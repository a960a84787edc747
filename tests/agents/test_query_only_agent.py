"""The query-only adversary (issue 27): real episodes on the released samples' targets catalog (it never reads
the hidden information and always recommends within its budget), its plan under failing tools, its query
reading, and its form-cue scoring on hand-made listings."""
import asyncio

import pytest

from ecab.agents import make_agent
from ecab.agents.query_only import (Listing, Query, QueryOnlyAgent, choose, families, family_cues, head_phrase,
                                    negative_phrases, structure_cost, _key_values)
from ecab.env.episode import EpisodeSettings, run_episode
from ecab.env.tools import ToolBox
from ecab.schema import Task

HIDDEN_TOOLS = {"get_user_profile", "ask_user"}


# ---------------------------------------------------------------------------------------------------------
# Real episodes
# ---------------------------------------------------------------------------------------------------------

def run(task, catalog, budget):
    agent = make_agent({"name": "query-only", "kind": "query-only"}, task, seed=0, budget=budget)
    traj = asyncio.run(run_episode(task, agent, ToolBox(catalog, task), EpisodeSettings(budget=budget),
                                   unit={"task_id": task.id}))
    return agent, traj


@pytest.mark.parametrize("budget", [100, 12, 2, 1])
def test_real_episodes_never_read_hidden_information_and_recommend_within_budget(released_tasks, released_targets_catalog,
                                                                                   budget):
    for task in released_tasks[:6]:
        agent, traj = run(task, released_targets_catalog, budget)
        tools = [s.tool for s in traj.steps]
        assert isinstance(agent, QueryOnlyAgent)
        assert not HIDDEN_TOOLS & set(tools), (task.id, tools)
        assert traj.get_profile_calls == 0 and traj.ask_user_calls == 0
        assert tools and tools[-1] == "recommend_product" and tools.count("recommend_product") == 1
        assert traj.total_tool_calls <= budget
        if budget >= 2:      # room for a search at least: a real catalog product is recommended
            assert traj.termination == "recommended" and traj.predicted_product_id is not None
        if budget >= 12:     # room to search and inspect
            assert {"search_products", "get_product_details", "get_product_review_stats"} <= set(tools)
        if budget == 100:    # it uses its budget, but stays well under it
            assert 30 <= traj.total_tool_calls <= 61 and len(agent.listings) >= 25


def test_real_episodes_are_deterministic(released_tasks, released_targets_catalog):
    task = released_tasks[1]
    first, second = run(task, released_targets_catalog, 100)[1], run(task, released_targets_catalog, 100)[1]
    assert first.predicted_product_id == second.predicted_product_id
    assert [s.arguments for s in first.steps] == [s.arguments for s in second.steps]


# ---------------------------------------------------------------------------------------------------------
# The plan against tools that fail
# ---------------------------------------------------------------------------------------------------------

def drive(agent, answer):
    """Run the agent's plan, answering every call with answer(name, args); the calls it made."""
    plan = agent.plan()
    calls = [next(plan)]
    try:
        while True:
            calls.append(plan.send(answer(*calls[-1])))
    except StopIteration:
        return calls


def task_with(query: str) -> Task:
    return Task.from_dict({"id": "t", "intent_category": "product_search", "user_query": query,
                           "target_product": {"product_id": "X"}, "rubrics": []})


@pytest.mark.parametrize("answer", [lambda n, a: {"error": "Tool call failed: boom"}, lambda n, a: None,
                                    lambda n, a: {"products": "not a list"},
                                    lambda n, a: {"products": [{"product_id": "P1", "title": "a cable"}]}
                                    if n == "search_products" else {"error": "Product not found"}])
def test_failing_tools_still_end_in_one_recommendation(answer):
    calls = drive(QueryOnlyAgent(task_with("I need a USB-C cable under $20, not white."), budget=100), answer)
    names = [n for n, _ in calls]
    assert names[-1] == "recommend_product" and names.count("recommend_product") == 1
    assert not HIDDEN_TOOLS & set(names) and len(calls) <= 61


def test_the_budget_caps_the_plan():
    def answer(name, args):
        if name == "search_products":
            return {"products": [{"product_id": f"P{i}", "title": f"cable {i}"} for i in range(20)],
                    "total_found": 20}
        if name == "get_product_details":
            pid = args["product_id"]
            return {"product": {"product_id": pid, "title": f"cable {pid}", "price": 9.99, "details": {}}}
        return {"products": [{"product_id": p, "average_rating": 4.0, "rating_number": 10}
                             for p in args.get("product_ids", [])]}

    for budget in (1, 2, 5, 30, 100):
        calls = drive(QueryOnlyAgent(task_with("a braided usb cable"), budget=budget), answer)
        assert len(calls) <= max(budget, 1) and calls[-1][0] == "recommend_product"
    calls = drive(QueryOnlyAgent(task_with("a braided usb cable"), budget=100), answer)
    assert 25 <= len(calls) <= 61 and calls[-1][1]["product_id"].startswith("P")


# ---------------------------------------------------------------------------------------------------------
# Reading the query
# ---------------------------------------------------------------------------------------------------------

def test_query_reading():
    q = Query.parse("Any suggestions for a Black mirror mount bracket? I need to avoid plastic, I do not want a "
                    "dashboard mount, and definitely no white or red options. It must cost under $50 and have "
                    "at least 4.5 stars and at least 20 ratings.")
    assert q.constraints.max_price == 50 and q.constraints.min_rating == 4.5 and q.constraints.min_ratings == 20
    assert ["plastic"] in q.negatives and ["dashboard", "mount"] in q.negatives
    assert ["white"] in q.negatives and ["red"] in q.negatives
    assert "plastic" not in q.terms and {"black", "mirror", "bracket"} <= set(q.terms)
    assert "50" not in q.terms and "stars" not in q.terms
    assert head_phrase("I'm looking for a replacement AC adapter that costs under $15.") == "AC adapter"
    assert negative_phrases("I am avoiding Swann and Lorex.") == [["swann"], ["lorex"]]

    coupon = Query.parse("Stickers under $5. I am applying a 14% brand coupon on orders over $2.19 capped at "
                         "$1.28, so the final total must stay under $4.34.")
    assert coupon.constraints.max_price == 5 and coupon.final_budget == 4.34 and coupon.coupon_fixed_off == 1.28
    assert coupon.price_verdict(4.99) and coupon.price_verdict(5.5) is False
    fixed = Query.parse("A gift box. I have a platform coupon worth $2.55 on orders over $14.33, so the final "
                        "total needs to stay under $28.26 after applying it.")
    assert fixed.constraints.max_price is None and fixed.final_budget == 28.26
    assert fixed.price_verdict(30.5) and fixed.price_verdict(31.0) is False and fixed.price_verdict(None) is None


# ---------------------------------------------------------------------------------------------------------
# Form cues on hand-made listings
# ---------------------------------------------------------------------------------------------------------

BASE = {"Brand": "Acme", "Color": "Black", "Material": "Nylon", "Connector": "USB-C", "Shape": "Round"}


def listing(pid, rrf=0.1, price=None, title="Acme Braided Charging Cable 6ft Black", **details):
    return Listing(product_id=pid, title=title, store="Acme", price=price, details={**BASE, **details},
                   rating=4.4, count=120, rrf=rrf)


def copies_family():
    """A target and its copies: three per broken requirement (each with its own wrong value), and on a fact no
    requirement reads ("Package") most copies carry another value than the target's. The target is not the
    best-ranked, nor first by id; every listing states the query's words equally."""
    target = listing("Z-TARGET", rrf=0.01, Package="Box")
    wrong = {"Color": ["Blue", "White", "Red"], "Material": ["Silicone", "Leather", "Steel"],
             "Connector": ["Lightning", "Micro USB", "USB-A"]}
    others = []
    for key, values in wrong.items():
        for j, value in enumerate(values):
            package = "Box" if j == 0 else "Bag"
            others.append(listing(f"A-{key}-{j}", rrf=0.1 - 0.01 * len(others), Package=package, **{key: value}))
    return target, others


def test_the_original_of_the_copies_wins_though_it_holds_the_minority_on_the_drifted_fact():
    target, others = copies_family()
    members = [target, *others]
    keys = _key_values(members)
    costs = {x.product_id: structure_cost(x.product_id, members, keys) for x in members}
    assert costs["Z-TARGET"] < min(c for p, c in costs.items() if p != "Z-TARGET")
    # the plain consensus would not find it: on "Package" the target holds the minority value
    assert sum(x.details["Package"] == "Box" for x in members) < len(members) / 2
    cues = family_cues(members)
    assert cues["Z-TARGET"]["structure"] == 1.0 and cues["Z-TARGET"]["drift_minority"] == 1.0
    assert max(c["structure"] for p, c in cues.items() if p != "Z-TARGET") < 1.0
    q = Query.parse("I need a braided charging cable from Acme.")
    assert choose(members, q).product_id == "Z-TARGET"
    assert [sorted(x.product_id for x in (members[i] for i in g)) for g in families(members)] == \
        [sorted(x.product_id for x in members)]


def test_the_minority_value_on_a_two_valued_key_wins_among_otherwise_identical_listings():
    members = [listing(f"A{i}", rrf=0.2 - 0.01 * i, Package="Bag") for i in range(6)]
    members += [listing(f"B{i}", rrf=0.05 - 0.01 * i, Package="Box") for i in range(4)]
    cues = family_cues(members)
    assert all(cues[f"B{i}"]["drift_minority"] == 1.0 for i in range(4))
    assert all(cues[f"A{i}"]["drift_minority"] == 0.0 for i in range(6))
    only = {"drift_minority": 1.0}
    assert choose(members, Query.parse("a braided charging cable"), only).product_id.startswith("B")
    # "A" / "A, B": the one-option value is the original whichever is rarer
    members = [listing(f"A{i}", rrf=0.2 - 0.01 * i, Feature="Waterproof") for i in range(6)]
    members += [listing(f"B{i}", rrf=0.05 - 0.01 * i, Feature="Waterproof, Lightweight") for i in range(4)]
    cues = family_cues(members)
    assert all(cues[f"A{i}"]["drift_subset"] == 1.0 for i in range(6))
    assert all(cues[f"B{i}"]["drift_subset"] == 0.0 for i in range(4))
    # ... and the listings holding "A, B" agree with it (they meet any requirement it meets), not it with them
    keys = _key_values(members)
    assert structure_cost("A0", members, keys) < structure_cost("B0", members, keys)
    # a wrong value held by a few listings is no drift
    members = [listing(f"A{i}", Package="Bag") for i in range(9)] + [listing(f"B{i}", Package="Box") for i in range(3)]
    assert all(c.get("drift_minority", 0.0) == 0.0 for c in family_cues(members).values())


def test_an_unusual_price_ending_wins_among_identical_listings():
    members = [listing(f"A{i}", price=price) for i, price in enumerate([12.99, 13.95, 11.49, 12.69, 14.99, 12.29])]
    members.append(listing("Z-REAL", price=12.37))
    cues = family_cues(members)
    assert cues["Z-REAL"]["odd_cents"] == 1.0 and cues["Z-REAL"]["rare_cents"] == 1.0
    assert all(cues[x.product_id]["odd_cents"] == 0.0 for x in members[:-1])
    assert choose(members, Query.parse("a braided charging cable")).product_id == "Z-REAL"


def test_the_most_copied_title_wins_among_a_line():
    anchor_title = "Acme Braided Charging Cable 6ft Black"
    members = [listing("Z-ANCHOR", title=anchor_title), listing("Y-RELIST", title=anchor_title)]
    members += [listing(f"A{i}", title=f"{anchor_title} Pack of {i + 2}") for i in range(4)]
    cues = family_cues(members)
    assert cues["Z-ANCHOR"]["title_mode"] == cues["Y-RELIST"]["title_mode"] == 1.0
    assert all(cues[f"A{i}"]["title_mode"] == 0.0 for i in range(4))
    assert choose(members, Query.parse("a braided charging cable")).product_id in {"Z-ANCHOR", "Y-RELIST"}


def test_what_the_query_states_comes_before_any_cue():
    target, others = copies_family()
    target.price = 25.37                      # the cue favourite, but over the stated price cap
    for x in others:
        x.price = 14.99
    q = Query.parse("I need a braided charging cable from Acme under $20.")
    assert choose([target, *others], q).product_id != "Z-TARGET"
    excluded = Query.parse("I need a braided charging cable from Acme, but not blue and no lightning.")
    picked = choose([listing("P1", Color="Blue"), listing("P2", Connector="Lightning"), listing("P3", rrf=0.0)],
                    excluded)
    assert picked.product_id == "P3"
    assert choose([], q) is None


def test_a_family_of_copies_is_read_with_its_own_weights():
    """Listings sharing an id prefix are copies of one listing (catalog=targets): there the best rated copy is
    picked; the same listings without the shared prefix (a product line) are ranked by the line's cues."""
    def family(prefix):
        out = [listing(f"{prefix}{i:06d}", Package="Bag") for i in range(8)]
        for i, x in enumerate(out):
            x.rating = 3.5 + 0.1 * i
        out[0].rating = 4.9
        return out

    copies = family("B0AA")
    cues = family_cues(copies)
    assert all(c["copies"] == 1.0 for c in cues.values())
    assert choose(copies, Query.parse("a braided charging cable")).product_id == "B0AA000000"
    line = [listing(f"{chr(65 + i)}{i}", Package="Bag") for i in range(8)]
    assert all(c["copies"] == 0.0 for c in family_cues(line).values())

"""The heuristic agent's plan stays within its call budget and its scoring reads the hidden requirements."""
from types import SimpleNamespace

import pytest

from ecab.agents.heuristic import HeuristicAgent, Requirements, score_all

QUERY = "I need a smart watch from Dotn with at least 4 stars."


def listing(pid, **details):
    return {"product_id": pid, "title": "Dotn Smart Watch", "price": 20.0, "details": details}


def drive(agent, catalog):
    """Run the plan against canned tool results; returns the calls made."""
    plan, calls, result = agent.plan(), [], None
    while True:
        try:
            name, args = plan.send(result) if calls else next(plan)
        except StopIteration:
            return calls
        calls.append((name, args))
        if name == "get_user_profile":
            result = {"profile": {"product_requirements": {"device_compatibility": "Smartphone"}}}
        elif name == "ask_user":
            asked = sum(1 for n, _ in calls if n == "ask_user")
            result = {"user_response": "I need an activity tracker and a pedometer." if asked == 1
                      else "Hmm, I'm not sure about that.", "turns_remaining": 10 - asked}
        elif name == "search_products":
            result = {"products": [{"product_id": p, "title": "Dotn Smart Watch"} for p in catalog], "total_found": 3}
        elif name == "get_product_details":
            result = {"product": catalog[args["product_id"]]}
        elif name == "get_product_review_stats":
            result = {"products": [{"product_id": p, "average_rating": 4.5, "rating_number": 10}
                                   for p in args["product_ids"]]}
        else:
            result = {}
        if name == "recommend_product":
            return calls


CATALOG = {
    "A": listing("A", **{"Special Feature": "Activity Tracker", "Compatible Devices": "Smartphone"}),
    "B": listing("B", **{"Special Feature": "Activity Tracker, Pedometer", "Compatible Devices": "Smartphone"}),
    "C": listing("C", **{"Special Feature": "Activity Tracker, Pedometer", "Compatible Devices": "Tablet"}),
}


@pytest.mark.parametrize("budget", [1, 2, 5, 10, 25, 100])
def test_plan_fits_the_budget_and_recommends(budget):
    calls = drive(HeuristicAgent(SimpleNamespace(user_query=QUERY), 0, budget=budget), CATALOG)
    assert len(calls) <= budget and calls[-1][0] == "recommend_product"


def test_default_budget_recommends_the_listing_meeting_every_hidden_requirement():
    calls = drive(HeuristicAgent(SimpleNamespace(user_query=QUERY), 0), CATALOG)
    assert calls[-1] == ("recommend_product", {"product_id": "B", "reasoning": calls[-1][1]["reasoning"]})


def test_exact_value_beats_a_wider_one():
    req = Requirements("", [], [], ["It has to connect via USB-C."])
    scores = score_all({"exact": listing("exact", **{"Connectivity Technology": "USB-C"}),
                        "wider": listing("wider", **{"Connectivity Technology": "USB-C, USB, Bluetooth"})}, {}, req)
    assert scores["exact"] > scores["wider"]

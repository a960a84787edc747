"""The loop-owning agent bridge (ecab/agents/bridge.py) through the real episode loop, tool box and a real
LanceDB catalog: calls become turns, results come back parsed, and the episode's rules (budget, termination,
record) stay ecab's whatever the agent's loop does."""
import asyncio

import pytest

from ecab.agents import AgentContext, as_agent
from ecab.env.agent_protocol import InfraError
from ecab.env.episode import EpisodeSettings, run_episode
from ecab.env.tools import ToolBox
from ecab.schema import Task

TARGET = "PROBE-USBC"


@pytest.fixture(scope="module")
def task(small_catalog) -> Task:
    target = small_catalog.get_product(TARGET)
    return Task.from_dict({"id": "bridge-1", "intent_category": "product_search",
                           "user_query": "a braided usb-c charger cable",
                           "target_product": target.target_view(),
                           "rubrics": [{"id": "r1", "type": "entity_match", "field": "title",
                                        "expected_value": "Braidex", "description": "by Braidex"}]})


def episode(task, catalog, run, budget=20):
    agent = as_agent(run, AgentContext(task=task, seed=0, budget=budget))
    traj = asyncio.run(run_episode(task, agent, ToolBox(catalog, task), EpisodeSettings(budget=budget)))
    return traj, agent


def test_calls_become_turns_and_results_come_back_parsed(task, small_catalog):
    seen = {}

    async def shop(session):
        seen["tools"] = session.tool_names
        seen["query"] = session.query
        page = await session.call("search_products", {"query": "Braidex braided charger cable"})
        seen["page"] = page
        ids = [hit["product_id"] for hit in page["products"]]
        session.report_usage(input_tokens=120, output_tokens=7, cost_usd=0.002)
        await session.call("recommend_product", {"product_id": TARGET if TARGET in ids else ids[0]})

    traj, _ = episode(task, small_catalog, shop)
    assert seen["query"] == task.user_query
    assert seen["tools"][0] == "search_products" and "recommend_product" in seen["tools"]
    assert TARGET in [hit["product_id"] for hit in seen["page"]["products"]]
    assert (traj.termination, traj.predicted_product_id, traj.total_tool_calls) == ("recommended", TARGET, 2)
    assert [s.tool for s in traj.steps] == ["search_products", "recommend_product"]
    assert traj.steps[1].input_tokens == 120 and traj.usage["cost_usd"] == pytest.approx(0.002)


def test_a_loop_past_the_budget_is_stopped_by_the_episode_not_by_itself(task, small_catalog):
    calls = []

    async def greedy(session):
        while True:                                  # never recommends, never checks the budget
            calls.append(await session.call("get_user_profile"))

    traj, agent = episode(task, small_catalog, greedy, budget=5)
    assert traj.termination == "budget_exhausted" and traj.total_tool_calls == 5
    assert len(calls) == 4                           # the fifth call's answer is never delivered
    assert agent._task.cancelled()                   # the loop was stopped when the episode ended


def test_tool_errors_reach_the_loop_as_results(task, small_catalog):
    got = []

    async def wrong(session):
        got.append(await session.call("no_such_tool", {}))
        got.append(await session.call("get_product_details", "{not json"))
        await session.call("recommend_product", {"product_id": TARGET})

    traj, _ = episode(task, small_catalog, wrong)
    assert got[0] == {"error": "Unknown tool: no_such_tool"}
    assert got[1]["error"].startswith("Invalid tool arguments JSON")
    assert traj.termination == "recommended" and traj.tool_errors == 2


def test_a_loop_that_returns_without_recommending_ends_like_a_model_that_stops_calling(task, small_catalog):
    async def quits(session):
        await session.call("get_user_profile")
        return "I could not decide."

    traj, _ = episode(task, small_catalog, quits)
    assert traj.termination == "no_tool_call" and traj.predicted_product_id is None
    assert traj.reasoning == "I could not decide."


@pytest.mark.parametrize("error, termination", [(ValueError("boom"), "agent_error"),
                                                (InfraError("endpoint down"), "infra_error")])
def test_a_loop_that_raises_is_the_episodes_error_not_the_runs(task, small_catalog, error, termination):
    async def breaks(session):
        await session.call("get_user_profile")
        raise error

    traj, _ = episode(task, small_catalog, breaks)
    assert traj.termination == termination and str(error) in traj.error
    assert traj.total_tool_calls == 1


def test_concurrent_calls_are_made_one_at_a_time(task, small_catalog):
    async def parallel(session):
        pages = await asyncio.gather(*(session.call("search_products", {"query": q})
                                       for q in ("braided cable", "usb-c charger", "phone case")))
        assert all("products" in p for p in pages)
        await session.call("recommend_product", {"product_id": TARGET})

    traj, _ = episode(task, small_catalog, parallel)
    assert [s.tool for s in traj.steps] == ["search_products"] * 3 + ["recommend_product"]
    assert all(s.extra_calls == 0 for s in traj.steps)


def test_an_object_with_run_is_a_loop_agent_and_anything_else_is_refused(task):
    from ecab.config import ConfigError

    class Looper:
        name = "looper"

        async def run(self, session):
            await session.call("recommend_product", {"product_id": TARGET})

    context = AgentContext(task=task, seed=0, budget=10)
    assert as_agent(lambda c: Looper(), context).name == "looper"
    with pytest.raises(ConfigError, match="expected an Agent"):
        as_agent(lambda c: object(), context)

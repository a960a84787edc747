"""The episode loop (docs/original-harness.md §3.2) against the real tool box and a real LanceDB catalog of the
released samples' targets (catalog=targets), plus the real-sample oracle check."""
import asyncio
import json

import pytest

from ecab.agents import make_agent
from ecab.env.agent_protocol import AgentError, AgentTurn, InfraError
from ecab.agents.base import tool_call_message
from ecab.env.episode import MULTI_CALL_ERROR, NO_TOOL_REMINDER, EpisodeSettings, run_episode
from ecab.env.tools import ToolBox
from ecab.judge.rules import RulesJudge
from ecab.catalog.review_match import ReviewChecker


@pytest.fixture(scope="module")
def real_tasks(released_tasks):
    return released_tasks


@pytest.fixture(scope="module")
def targets_catalog(released_targets_catalog):
    """The released samples' targets plus 300 synthetic distractors, in LanceDB (built once: conftest)."""
    return released_targets_catalog


class ReplayAgent:
    """Sends a fixed list of assistant messages, one per turn (or raises a given exception)."""

    name = "replay"

    def __init__(self, messages):
        self.messages = list(messages)
        self.seen = []

    async def act(self, messages, tools):
        self.seen.append([dict(m) for m in messages])
        item = self.messages.pop(0) if self.messages else {"role": "assistant", "content": "done"}
        if isinstance(item, Exception):
            raise item
        return AgentTurn(message=item, input_tokens=10, output_tokens=2)


def call(name, args, call_id="c1"):
    return tool_call_message(call_id, name, args)


def raw_call(name, arguments: str):
    return {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": name, "arguments": arguments}}]}


def run(task, catalog, messages, budget=100):
    agent = ReplayAgent(messages)
    traj = asyncio.run(run_episode(task, agent, ToolBox(catalog, task), EpisodeSettings(budget=budget),
                                   unit={"task_id": task.id}))
    return traj, agent


@pytest.fixture(scope="module")
def task(real_tasks):
    return real_tasks[0]


def test_recommend_ends_the_episode(task, targets_catalog):
    target = task.target_product.product_id
    traj, _ = run(task, targets_catalog, [call("get_user_profile", {}),
                                          call("recommend_product", {"product_id": target, "reasoning": "r"}),
                                          call("get_user_profile", {})])
    assert traj.termination == "recommended" and traj.finished
    assert traj.predicted_product_id == target and traj.total_tool_calls == 2 and traj.get_profile_calls == 1
    assert traj.recommend_call_index == 2 and traj.reasoning == "r"
    assert [s.tool for s in traj.steps] == ["get_user_profile", "recommend_product"]


def test_invalid_recommendation_finishes_without_prediction(task, targets_catalog):
    traj, _ = run(task, targets_catalog, [call("recommend_product", {"product_id": "NOPE", "reasoning": ""})])
    assert traj.termination == "invalid_recommendation" and traj.finished
    assert traj.predicted_product_id is None and traj.recommended_id == "NOPE"


def test_two_no_tool_turns_end_the_episode(task, targets_catalog):
    plain = {"role": "assistant", "content": "I think product X."}
    traj, agent = run(task, targets_catalog, [plain, plain])
    assert traj.termination == "no_tool_call" and traj.finished and traj.predicted_product_id is None
    assert traj.reasoning == "I think product X."
    assert agent.seen[1][-1] == {"role": "user", "content": NO_TOOL_REMINDER}
    assert traj.total_tool_calls == 0


def test_reminder_resets_after_a_tool_call(task, targets_catalog):
    plain = {"role": "assistant", "content": "hmm"}
    target = task.target_product.product_id
    traj, _ = run(task, targets_catalog, [plain, call("get_user_profile", {}), plain,
                                          call("recommend_product", {"product_id": target, "reasoning": ""})])
    assert traj.termination == "recommended"


def test_only_the_first_of_several_calls_runs(task, targets_catalog):
    two = call("get_user_profile", {})
    two["tool_calls"].append(call("ask_user", {"question": "What color?"}, "c2")["tool_calls"][0])
    traj, agent = run(task, targets_catalog, [two])
    assert traj.total_tool_calls == 1 and traj.ask_user_calls == 0 and traj.steps[0].extra_calls == 1
    history = agent.seen[1]
    assert len(history[2]["tool_calls"]) == 1                 # the model sees only the executed call
    assert history[-1] == {"role": "user", "content": MULTI_CALL_ERROR}
    assert len(traj.trajectory[2]["tool_calls"]) == 2          # the record keeps both


def test_original_error_results(task, targets_catalog):
    traj, _ = run(task, targets_catalog, [raw_call("ask_user", "{not json"), call("teleport", {}),
                                          call("search_products", {"page": 1})], budget=3)
    contents = [json.loads(m["content"]) for m in traj.trajectory if m["role"] == "tool"]
    assert contents[0]["error"].startswith("Invalid tool arguments JSON")
    assert contents[1] == {"error": "Unknown tool: teleport"}
    assert contents[2] == {"error": "Tool call failed: 'query'"}
    assert traj.total_tool_calls == 3 and traj.ask_user_calls == 0   # invalid JSON is not counted by name
    assert traj.tool_errors == 3 and traj.termination == "budget_exhausted"


def test_budget_caps_executed_tool_calls(task, targets_catalog):
    traj, _ = run(task, targets_catalog, [call("search_products", {"query": "case"})] * 10, budget=4)
    assert traj.total_tool_calls == 4 and traj.termination == "budget_exhausted" and not traj.finished


def test_agent_and_infra_errors_are_recorded_not_raised(task, targets_catalog):
    traj, _ = run(task, targets_catalog, [call("get_user_profile", {}), AgentError("401 bad key")])
    assert traj.termination == "agent_error" and "401" in traj.error and traj.total_tool_calls == 1
    traj, _ = run(task, targets_catalog, [InfraError("503 after retries")])
    assert traj.termination == "infra_error"


def test_ask_user_reveals_are_recorded(real_tasks, targets_catalog):
    task = next(t for t in real_tasks if t.clarification_script.clarification_slots)
    slot = task.clarification_script.clarification_slots[0]
    traj, _ = run(task, targets_catalog, [call("ask_user", {"question": f"Any {slot.trigger_keywords[0]}?"})],
                  budget=1)
    assert traj.ask_user_calls == 1 and traj.revealed_slots == [slot.slot_id]


def test_real_samples_oracle_reaches_100_percent(real_tasks, targets_catalog):
    """Issue 4 item 8: with catalog=targets the oracle is right on every released sample, and the rules
    judge finds every target satisfying all of its non-review rubrics."""
    judge = RulesJudge(review_checker=ReviewChecker())

    async def all_episodes():
        return await asyncio.gather(*(
            run_episode(t, make_agent({"kind": "oracle"}, t, 0), ToolBox(targets_catalog, t),
                        EpisodeSettings(budget=100), unit={"task_id": t.id}) for t in real_tasks))

    for task, traj in zip(real_tasks, asyncio.run(all_episodes())):
        assert traj.termination == "recommended", (task.id, traj.error)
        judgement = asyncio.run(judge.judge_episode(task, traj, targets_catalog))
        assert judgement.correct and judgement.exact_product_match
        failed = [v for v in judgement.verdicts if v.type != "review_opinion" and not v.satisfied]
        assert not failed, (task.id, [(v.rubric_id, v.evidence) for v in failed])


def test_local_runner_checkpoints_every_episode_with_the_loaded_heap_frozen(real_tasks, targets_catalog, tmp_path):
    """runner=local: each finished episode is in the part file before on_done sees it, and the objects loaded
    before the run are frozen (out of the collector's full scans) only while it runs."""
    import gc

    from ecab.core.unit import make_units
    from ecab.runner.episode import EpisodeOptions
    from ecab.runner.local import LocalRunner
    from ecab.runs import RunFolder

    folder = RunFolder(tmp_path / "run").create()
    units = make_units([t.id for t in real_tasks], "oracle", 100, 0, 1)
    seen, trajs = [], []

    def on_done(traj):
        trajs.append(traj)
        seen.append((gc.get_freeze_count(), sum(1 for _ in folder.iter_trajectories())))

    before = gc.get_freeze_count()
    runner = LocalRunner(EpisodeOptions(model_cfg={"kind": "oracle"}), concurrency=4, progress=False)
    stats = runner.run(units, {t.id: t for t in real_tasks}, targets_catalog, folder, EpisodeSettings(budget=100),
                       on_done=on_done)
    assert stats.runner == "local" and stats.retried_units == 0
    assert [t.termination for t in trajs] == ["recommended"] * len(units)
    assert all(frozen > before for frozen, _ in seen)
    assert all(lines >= n for n, (_, lines) in enumerate(seen, start=1))   # its own record is already there
    assert gc.get_freeze_count() == before
    assert len(folder.latest_trajectories()) == len(units)


class PricedReplay(ReplayAgent):
    """Replays turns, each with the cost its model's price table gave (None: no price table)."""

    def __init__(self, messages, costs):
        super().__init__(messages)
        self.costs = list(costs)

    async def act(self, messages, tools):
        turn = await super().act(messages, tools)
        turn.cost_usd = self.costs.pop(0)
        return turn


@pytest.mark.parametrize("costs,expected", [([0.25, 0.5], 0.75), ([0.25, None], None), ([None, 0.25], None)])
def test_an_episode_with_an_unpriced_reply_records_its_cost_as_unknown(real_tasks, targets_catalog, costs,
                                                                      expected):
    """A reply whose cost is unknown (an own endpoint without prices) makes the episode's usage.cost_usd None,
    never the $0 the report showed as $0.000000."""
    task = real_tasks[0]
    agent = PricedReplay([call("get_user_profile", {}, "c1"),
                          call("recommend_product", {"product_id": task.target_product.product_id}, "c2")], costs)
    traj = asyncio.run(run_episode(task, agent, ToolBox(targets_catalog, task), EpisodeSettings(budget=5),
                                   unit={"task_id": task.id}))
    assert traj.termination == "recommended" and traj.usage["cost_usd"] == expected

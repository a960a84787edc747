"""The OpenAI agent's options for locally served models (issue 31, items 2, 3, 4, 6), over real HTTP against a
small endpoint on 127.0.0.1 (tests/agents/test_text_tool_calls.py's) and real episodes over the small catalog:
`tool_choice` and `send_seed` reach the request; `context_tokens` keeps every request under it by shortening
older tool results (recorded in the trace) and ends an episode that cannot fit as agent_error naming the key;
a run whose first turns carry no tool call warns once."""
from __future__ import annotations

import asyncio
import json

from test_text_tool_calls import TASK, local_server

from ecab.agents.openai_agent import OpenAIAgent
from ecab.env.episode import EpisodeSettings, run_episode
from ecab.env.tools import ToolBox
from ecab.llm import ChatClient
from ecab.llm.context_window import estimate_tokens
from ecab.llm.settings import model_settings

SEARCH = '{"name": "search_products", "arguments": {"query": "Braidex USB-C Charger Cable", "page": %d}}'
RECOMMEND = '{"name": "recommend_product", "arguments": {"product_id": "PROBE-USBC", "reasoning": "braided"}}'


def episode(catalog, replies, *, chat=None, seed=None, budget=12, **options):
    """(trajectory, the requests the endpoint got) of one episode of the agent with these model options."""
    seen: list[dict] = []

    async def go():
        async with local_server(replies, seen) as url:
            settings = model_settings({"name": "local", "kind": "openai", "model_id": "qwen", "api_key_env": None,
                                       "base_url": url, "tool_call_format": "json", "max_attempts": 1,
                                       "timeout_s": 30, **options})
            agent = OpenAIAgent(chat or ChatClient(settings, api_key="k"), budget, seed=seed)
            return await run_episode(TASK, agent, ToolBox(catalog, TASK), EpisodeSettings(budget=budget))
    return asyncio.run(go()), seen


def test_tool_choice_and_the_seed_reach_the_endpoint_when_asked(small_catalog):
    _, seen = episode(small_catalog, [RECOMMEND], seed=1234, tool_choice="required", send_seed=True)
    assert seen[0]["tool_choice"] == "required" and seen[0]["seed"] == 1234
    _, seen = episode(small_catalog, [RECOMMEND], seed=1234)
    assert seen[0]["tool_choice"] == "auto" and "seed" not in seen[0], "defaults: auto, no seed"


def test_every_request_stays_under_context_tokens_and_the_trace_says_what_was_shortened(small_catalog):
    limit = 3600
    replies = [SEARCH % page for page in range(6)] + [RECOMMEND]
    traj, seen = episode(small_catalog, replies, context_tokens=limit, max_output_tokens=256)
    assert traj.termination == "recommended", traj.error
    sizes = [estimate_tokens(r["messages"]) + estimate_tokens(r["tools"]) for r in seen]
    assert max(sizes) + 256 <= limit, sizes
    fits = [e for e in traj.reasoning_trace if e["type"] == "context_fit"]
    assert fits and all(e["limit_tokens"] == limit and e["shortened"] >= 1 for e in fits)
    last = seen[-1]["messages"]
    shortened = [m for m in last if m["role"] == "tool" and json.loads(m["content"]).get("truncated")]
    assert shortened and last[0]["role"] == "system" and last[1]["content"] == TASK.user_query
    unshortened, _ = episode(small_catalog, replies)
    assert not [e for e in unshortened.reasoning_trace if e["type"] == "context_fit"], "no limit: nothing cut"


def test_a_conversation_that_cannot_fit_ends_the_episode_naming_the_key(small_catalog):
    traj, seen = episode(small_catalog, [RECOMMEND], context_tokens=1024)
    assert traj.termination == "agent_error" and "model.context_tokens=1024" in traj.error
    assert seen == [], "nothing was sent that the server would refuse"


def test_a_run_whose_first_turns_carry_no_tool_call_warns_once(small_catalog, capsys):
    async def go():
        async with local_server(["I think the braided cable is best."], []) as url:
            settings = model_settings({"name": "local", "kind": "openai", "model_id": "qwen", "api_key_env": None,
                                       "base_url": url, "max_attempts": 1})
            chat = ChatClient(settings, api_key="k")   # one client, as a run's episodes share it
            return [await run_episode(TASK, OpenAIAgent(chat, 10), ToolBox(small_catalog, TASK),
                                      EpisodeSettings(budget=10)) for _ in range(5)]

    trajectories = asyncio.run(go())    # two text-only turns each: 10 turns without a call
    assert [t.termination for t in trajectories] == ["no_tool_call"] * 5
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "carried no tool call" in warnings[0]
    assert "model.tool_call_format" in warnings[0] and "model.tool_choice=required" in warnings[0]

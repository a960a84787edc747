"""Tool calls a locally served model writes as text (issue 31, item 1), end to end: the OpenAI agent over real
HTTP against a small chat-completions endpoint on 127.0.0.1 that answers with fixed assistant messages shaped
like those real Qwen2.5-Coder models sent through `llama-server --jinja` (the call as JSON text after a thought,
braces doubled, one call per line, newline padding, Hermes blocks), and real episodes (env/episode.py) over the
small LanceDB catalog. With `model.tool_call_format` json or hermes the calls run; with native the same replies
end the episode `no_tool_call` as before; a call that cannot be read costs one call and the next request carries
the error that says what to write."""
from __future__ import annotations

import asyncio
import contextlib
import json

import pytest
from conftest import PROBE_PRODUCTS

from ecab import schema
from ecab.agents.openai_agent import OpenAIAgent
from ecab.env.episode import MULTI_CALL_ERROR, NO_TOOL_REMINDER, EpisodeSettings, run_episode
from ecab.env.tools import ToolBox
from ecab.llm import ChatClient
from ecab.llm.settings import model_settings

TARGET = next(p for p in PROBE_PRODUCTS if p.product_id == "PROBE-USBC")
TASK = schema.Task.from_dict({
    "id": "text-calls-1", "intent_category": "product_search", "user_query": "a braided USB-C charger cable",
    "user_persona": {"user_id": "U1", "demographics": {}, "lifestyle": {}, "shopping_habits": {},
                     "product_requirements": {}},
    "clarification_script": {"clarification_slots": [], "max_clarification_turns": 2},
    "target_product": TARGET.target_view(), "rubrics": [],
})
THOUGHT = ("Thought:\n- Observation: The shopper wants a braided USB-C charger cable.\n"
           "- Reasoning: This narrows down the search.\n- Plan: Call search_products.")

# the json format as Qwen2.5-Coder wrote it: a thought, then calls with doubled braces one per line; a bare
# object followed by padding; a bare object alone
JSON_REPLIES = [
    THOUGHT + '\n\n{{"name": "search_products", "arguments": {"query": "Braidex USB-C Charger Cable", "page": 0}}}}\n'
    '{{"name": "get_product_details", "arguments": {"product_id": "PROBE-USBC"}}}}',
    '{"name": "get_product_details", "arguments": {"product_id": "PROBE-USBC"}}' + "\n" * 200,
    '{"name": "recommend_product", "arguments": {"product_id": "PROBE-USBC", "reasoning": "braided USB-C"}}',
]
HERMES_REPLIES = [
    "I will search first.\n<tool_call>\n"
    '{"name": "search_products", "arguments": {"query": "Braidex USB-C Charger Cable"}}\n</tool_call>',
    '<tool_call>\n{"name": "recommend_product", "arguments": {"product_id": "PROBE-USBC", "reasoning": "ok"}}\n',
]


def completion(content: str) -> dict:
    return {"id": "c1", "object": "chat.completion", "created": 0, "model": "qwen2.5-coder",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 20, "total_tokens": 70}}


@contextlib.asynccontextmanager
async def local_server(replies: list[str], seen: list[dict]):
    """A chat-completions endpoint on 127.0.0.1 answering `replies` in order (then the last one again),
    keeping each request it got in `seen`; yields its base URL."""
    from aiohttp import web

    async def handle(request):
        seen.append(await request.json())
        return web.json_response(completion(replies[min(len(seen), len(replies)) - 1]))

    app = web.Application()
    app.router.add_post("/v1/chat/completions", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}/v1"
    finally:
        await runner.cleanup()


def run(catalog, replies, fmt, budget=10):
    """One episode of the OpenAI agent against the local server; (trajectory, the requests it sent)."""
    seen: list[dict] = []

    async def go():
        async with local_server(replies, seen) as url:
            settings = model_settings({"name": "local-qwen", "kind": "openai", "model_id": "qwen2.5-coder",
                                       "api_key_env": None, "base_url": url, "tool_call_format": fmt,
                                       "max_attempts": 1, "timeout_s": 30})
            agent = OpenAIAgent(ChatClient(settings, api_key="k"), budget)
            return await run_episode(TASK, agent, ToolBox(catalog, TASK), EpisodeSettings(budget=budget))
    return asyncio.run(go()), seen


def assistant_messages(messages):
    return [m for m in messages if m["role"] == "assistant"]


@pytest.fixture(scope="module")
def catalog(small_catalog):
    assert small_catalog.get_product("PROBE-USBC") is not None
    return small_catalog


def test_json_text_calls_run_and_the_episode_recommends(catalog):
    traj, seen = run(catalog, JSON_REPLIES, "json")
    assert traj.termination == "recommended" and traj.predicted_product_id == "PROBE-USBC"
    assert [(s.tool, s.is_error) for s in traj.steps] == [
        ("search_products", False), ("get_product_details", False), ("recommend_product", False)]
    assert traj.total_tool_calls == 3 and traj.steps[0].extra_calls == 1 and "PROBE-USBC" in traj.steps[0].result_ids
    assert traj.steps[0].arguments == {"query": "Braidex USB-C Charger Cable", "page": 0}
    first = assistant_messages(traj.trajectory)[0]
    assert first["content"] == THOUGHT and first["tool_calls_parsed_from"] == "json"
    assert [c["id"] for m in assistant_messages(traj.trajectory) for c in m["tool_calls"]] == \
        ["text_call_1", "text_call_2", "text_call_3", "text_call_4"]           # unique in the episode
    assert all(c["type"] == "function" and isinstance(c["function"]["arguments"], str)
               for c in first["tool_calls"])
    entries = [e for e in traj.reasoning_trace if e["type"] == "text_tool_calls"]
    assert [(e["format"], e["calls"], e["step"]) for e in entries] == [("json", 2, 1), ("json", 1, 2), ("json", 1, 3)]
    # the history goes back with the parsed call as a native tool call (only the first: one call per turn),
    # its result, the multi-call reminder; the record's marks are not sent
    second = seen[1]["messages"]
    sent = assistant_messages(second)[0]
    assert sent["content"] == THOUGHT and "tool_calls_parsed_from" not in sent
    assert sent["tool_calls"] == [{"id": "text_call_1", "type": "function", "function": {
        "name": "search_products", "arguments": json.dumps({"query": "Braidex USB-C Charger Cable", "page": 0})}}]
    assert second[3]["role"] == "tool" and second[3]["tool_call_id"] == "text_call_1"
    assert "PROBE-USBC" in second[3]["content"] and second[4]["content"] == MULTI_CALL_ERROR


def test_native_reads_the_same_replies_as_text(catalog):
    traj, seen = run(catalog, JSON_REPLIES, "native")
    assert traj.termination == "no_tool_call" and traj.total_tool_calls == 0 and len(seen) == 2
    assert NO_TOOL_REMINDER in [m["content"] for m in seen[1]["messages"]]
    assert all("tool_calls" not in m for m in assistant_messages(traj.trajectory))
    assert not [e for e in traj.reasoning_trace if e["type"] == "text_tool_calls"]


def test_hermes_blocks_run(catalog):
    traj, seen = run(catalog, HERMES_REPLIES, "hermes")
    assert traj.termination == "recommended" and traj.predicted_product_id == "PROBE-USBC"
    assert [s.tool for s in traj.steps] == ["search_products", "recommend_product"]
    assert assistant_messages(seen[1]["messages"])[0]["content"] == "I will search first."
    # the json format does not read Hermes blocks as blocks, but finds the objects in them
    assert run(catalog, HERMES_REPLIES, "json")[0].termination == "recommended"


def test_text_calls_until_the_budget_runs_out(catalog):
    traj, seen = run(catalog, [JSON_REPLIES[1]], "json", budget=3)
    assert traj.termination == "budget_exhausted" and traj.total_tool_calls == 3 and len(seen) == 3
    assert [s.tool for s in traj.steps] == ["get_product_details"] * 3


def test_an_unreadable_call_costs_one_call_and_the_model_is_told_what_to_write(catalog):
    broken = THOUGHT + '\n\n{"name": "search_products", "arguments": {"query": "USB-C cable", "page": 0}\n\n'
    traj, seen = run(catalog, [broken, JSON_REPLIES[2]], "json")
    assert traj.termination == "recommended" and traj.total_tool_calls == 2 and traj.tool_errors == 1
    step = traj.steps[0]
    assert step.call_index == 1 and step.tool == "search_products" and step.is_error
    assert step.error.startswith("could not read the tool call in your message (json format): invalid JSON")
    assert step.arguments == '{"name": "search_products", "arguments": {"query": "USB-C cable", "page": 0}'
    # the record keeps the marks
    recorded = assistant_messages(traj.trajectory)[0]
    assert recorded["tool_calls_parsed_from"] == "json" and recorded["tool_calls"][0]["parse_error"] == step.error
    # the next request: the call as sent (no parse_error key), then the tool message with the error as JSON
    messages = seen[1]["messages"]
    sent = assistant_messages(messages)[0]
    assert "tool_calls_parsed_from" not in sent and "parse_error" not in sent["tool_calls"][0]
    assert sent["tool_calls"][0]["function"]["name"] == "search_products"
    tool = messages[3]
    assert tool["role"] == "tool" and tool["tool_call_id"] == "text_call_1"
    assert json.loads(tool["content"]) == {"error": step.error}
    assert 'write exactly one JSON object {"name": ..., "arguments": {...}}' in step.error


def test_an_unreadable_call_without_a_name_is_keyed_under_no_tool(catalog):
    traj, seen = run(catalog, ["<tool_call>search for cables</tool_call>", HERMES_REPLIES[1]], "hermes")
    assert traj.termination == "recommended" and traj.total_tool_calls == 2
    step = traj.steps[0]
    assert step.tool is None and step.call_index == 1 and step.is_error
    assert "the <tool_call> block holds no JSON object" in step.error
    assert json.loads(seen[1]["messages"][3]["content"]) == {"error": step.error}


def test_an_unreadable_recommendation_ends_the_episode_like_a_native_one(catalog):
    """A native recommend_product whose arguments do not parse ends the episode as invalid_recommendation;
    one read from text does the same."""
    truncated = '{"name": "recommend_product", "arguments": {"product_id": "PROBE-USBC", "reas'
    traj, seen = run(catalog, [truncated], "json")
    assert traj.termination == "invalid_recommendation" and traj.total_tool_calls == 1 and len(seen) == 1
    assert traj.predicted_product_id is None and traj.steps[0].tool == "recommend_product"

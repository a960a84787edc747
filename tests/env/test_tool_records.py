"""One `Tool` record per tool (env/tools.py): the built-ins' schemas are byte-identical to the ones sent before the
records existed (data/tool_schemas_v1.json, captured from the parallel tables), and a tool added with
`register_tool` is offered, dispatched, error-handled and budgeted like a built-in, then taken back."""
from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from ecab import schema
from ecab.agents.base import tool_call_message
from ecab.catalog.base import SearchHit, SearchPage
from ecab.env import tools
from ecab.env.agent_protocol import AgentTurn
from ecab.env.episode import EpisodeSettings, run_episode
from ecab.env.tools import (BUILTIN_TOOLS, TERMINAL_TOOL, TOOL_ORDER, Tool, ToolBox, all_tools, register_tool,
                            registered_tool, tool_schemas, unregister_tool)

SCHEMAS_V1 = Path(__file__).parent / "data" / "tool_schemas_v1.json"


class TinyCatalog:
    """Just enough CatalogReader for these tests: two products, no reviews."""

    def __init__(self):
        self.products = {p.product_id: p for p in PRODUCTS}

    def get_product(self, product_id):
        return self.products.get(product_id)

    def get_products(self, product_ids):
        return [self.products[i] for i in product_ids if i in self.products]

    def search(self, query, *, limit=20, offset=0, mode=None, where=None):
        hits = [SearchHit(p.product_id, p.title) for p in self.products.values() if query.lower() in p.title.lower()]
        return SearchPage(hits[offset:offset + limit], len(hits))


PRODUCTS = [schema.Product(product_id=pid, title=title, store="Acme", main_category="Computers", details={},
                           average_rating=4.5, rating_number=10, price=9.99, features=[], description=[])
            for pid, title in (("L1", "Acme Laptop"), ("L2", "Acme Laptop Sleeve"))]

TASK = schema.Task.from_dict({
    "id": "t1", "intent_category": "product_search", "user_query": "a laptop",
    "user_persona": {"user_id": "U1", "demographics": {}, "lifestyle": {}, "shopping_habits": {},
                     "product_requirements": {}},
    "clarification_script": {"clarification_slots": [], "max_clarification_turns": 2},
    "target_product": PRODUCTS[0].target_view(), "rubrics": [],
})

WORD_COUNT_PARAMETERS = {"type": "object", "properties": {"text": {"type": "string", "description": "Any text"}},
                         "required": ["text"]}


def count_words(box, params, result):
    """A sync handler: blocking by default, so it runs in a worker thread."""
    return {"words": len(str(params["text"]).split()), "thread": threading.current_thread().name}


async def price_of(box, params, result):
    """An async handler: awaited on the event loop."""
    await asyncio.sleep(0)
    product = box.catalog.get_product(str(params["product_id"]))
    if product is None:
        return {"error": f"Product {params['product_id']} not found"}
    return {"product_id": product.product_id, "price": product.price}


WORD_COUNT = Tool("count_words", "Count the words of a text.", WORD_COUNT_PARAMETERS, count_words)
PRICE_OF = Tool("price_of", "The price of one product.",
                {"type": "object", "properties": {"product_id": {"type": "string"}}, "required": ["product_id"]},
                price_of)


@pytest.fixture(autouse=True)
def no_tool_leaks():
    """Every test starts and ends with the built-ins only: a registered tool never leaks into other tests."""
    assert all_tools() == BUILTIN_TOOLS
    yield
    leaked = [t.name for t in all_tools()[len(BUILTIN_TOOLS):]]
    for name in leaked:
        unregister_tool(name)
    assert not leaked, f"a test left registered tools behind: {leaked}"


def box() -> ToolBox:
    catalog: Any = TinyCatalog()   # duck-typed: the CatalogReader methods these tools call
    return ToolBox(catalog, TASK)


def call(toolbox: ToolBox, name: str, args) -> tools.ToolResult:
    return asyncio.run(toolbox.call(name, args if isinstance(args, str) else json.dumps(args)))


class ScriptedAgent:
    """Sends a fixed list of assistant messages, one per turn, and keeps the tool lists it was offered."""

    name = "scripted"

    def __init__(self, messages):
        self.messages = list(messages)
        self.offered: list[list[str]] = []

    async def act(self, messages, tool_list):
        self.offered.append([t["function"]["name"] for t in tool_list])
        item = self.messages.pop(0) if self.messages else {"role": "assistant", "content": "done"}
        return AgentTurn(message=item, input_tokens=1, output_tokens=1)


def run(messages, budget=100):
    agent = ScriptedAgent(messages)
    traj = asyncio.run(run_episode(TASK, agent, box(), EpisodeSettings(budget=budget)))
    return traj, agent


# ---------------------------------------------------------------------------------------------------------
# (a) the built-ins: byte-identical to the schemas sent before the records
# ---------------------------------------------------------------------------------------------------------

def test_builtin_schemas_are_byte_identical_to_v1():
    expected = SCHEMAS_V1.read_text(encoding="utf-8")
    assert json.dumps(tool_schemas(), indent=2, ensure_ascii=False) + "\n" == expected
    # and as the agent's request carries them (compact JSON, the same key order)
    assert json.dumps(box().schemas()) == json.dumps(json.loads(expected))
    assert json.dumps(tool_schemas(list(TOOL_ORDER))) == json.dumps(json.loads(expected))


def test_the_derived_names_come_from_the_records():
    assert TOOL_ORDER == tuple(t.name for t in BUILTIN_TOOLS) and len(TOOL_ORDER) == 10
    assert TERMINAL_TOOL == "recommend_product" and [t.name for t in BUILTIN_TOOLS if t.terminal] == [TERMINAL_TOOL]
    assert tools.TOOL_DESCRIPTIONS == {t.name: t.description for t in BUILTIN_TOOLS}
    assert tools.TOOL_PARAMETERS == {t.name: t.parameters for t in BUILTIN_TOOLS}
    assert list(box().tools) == list(TOOL_ORDER)


def test_a_record_owns_its_parameters():
    params = json.loads(json.dumps(WORD_COUNT_PARAMETERS))
    record = Tool("t", "d", params, count_words)
    params["properties"].clear()
    assert record.parameters == WORD_COUNT_PARAMETERS
    record.schema()["function"]["parameters"]["properties"].clear()
    assert record.schema()["function"]["parameters"] == WORD_COUNT_PARAMETERS


@pytest.mark.parametrize("kwargs, message", [
    ({"name": "has space"}, "a tool name is 1-64 letters"),
    ({"name": ""}, "a tool name is 1-64 letters"),
    ({"parameters": {"properties": {}}}, "parameters must be a JSON-schema object"),
    ({"handler": "not callable"}, "handler must be callable"),
])
def test_a_malformed_record_is_refused(kwargs, message):
    fields = {"name": "ok", "description": "d", "parameters": WORD_COUNT_PARAMETERS, "handler": count_words, **kwargs}
    with pytest.raises(ValueError, match=message):
        Tool(**fields)


# ---------------------------------------------------------------------------------------------------------
# (b) a registered tool: schemas, dispatch, an episode, the budget
# ---------------------------------------------------------------------------------------------------------

def test_a_registered_tool_follows_the_builtins_in_the_schemas():
    with registered_tool(WORD_COUNT), registered_tool(PRICE_OF):
        names = [s["function"]["name"] for s in tool_schemas()]
        assert names == [*TOOL_ORDER, "count_words", "price_of"]
        assert [s["function"]["name"] for s in box().schemas()] == names
        assert tool_schemas()[10] == {"type": "function", "function": {
            "name": "count_words", "description": "Count the words of a text.", "parameters": WORD_COUNT_PARAMETERS}}
        assert tool_schemas()[:10] == json.loads(SCHEMAS_V1.read_text(encoding="utf-8"))
    assert json.dumps(tool_schemas(), indent=2, ensure_ascii=False) + "\n" == SCHEMAS_V1.read_text(encoding="utf-8")


def test_a_registered_tool_is_dispatched_and_error_handled_like_a_builtin():
    with registered_tool(WORD_COUNT), registered_tool(PRICE_OF):
        toolbox = box()
        counted = call(toolbox, "count_words", {"text": "two words"})
        assert counted.content["words"] == 2 and not counted.is_error and not counted.terminal
        assert counted.content["thread"] != threading.main_thread().name   # a sync handler runs in a worker thread
        assert call(toolbox, "price_of", {"product_id": "L2"}).content == {"product_id": "L2", "price": 9.99}
        missing = call(toolbox, "price_of", {"product_id": "zz"})
        assert missing.content == {"error": "Product zz not found"} and missing.error_kind == "tool_error"
        assert call(toolbox, "count_words", {}).content == {"error": "Tool call failed: 'text'"}
        assert call(toolbox, "count_words", "[1]").content == {
            "error": "Tool call failed: arguments must be a JSON object, got list"}
        bad = call(toolbox, "count_words", '{"text": ')
        assert bad.error_kind == "invalid_json" and bad.content["error"].startswith("Invalid tool arguments JSON")
        assert [r.name for r in toolbox.history] == ["count_words", "price_of", "price_of", "count_words",
                                                      "count_words", "count_words"]


def test_a_sync_tool_that_does_not_block_runs_on_the_loop_and_a_bad_answer_is_a_failed_call():
    on_loop = Tool("where", "Which thread runs me.", {"type": "object", "properties": {}, "required": []},
                   lambda box, params, result: {"thread": threading.current_thread().name}, blocking=False)
    not_a_dict = Tool("broken", "Answers a list.", {"type": "object", "properties": {}, "required": []},
                      lambda box, params, result: [1, 2])
    with registered_tool(on_loop), registered_tool(not_a_dict):
        toolbox = box()
        assert call(toolbox, "where", "").content == {"thread": threading.main_thread().name}
        assert call(toolbox, "broken", "").content == {
            "error": "Tool call failed: tool 'broken' returned list, expected a dict"}


def test_the_tool_set_of_a_box_is_fixed_when_it_is_made():
    before = box()
    with registered_tool(WORD_COUNT):
        assert call(before, "count_words", {"text": "x"}).content == {"error": "Unknown tool: count_words"}
        during = box()
    assert call(during, "count_words", {"text": "x y z"}).content["words"] == 3   # unregistering does not touch it
    assert call(box(), "count_words", {"text": "x"}).error_kind == "unknown_tool"


def test_an_episode_calls_a_registered_tool_and_it_counts_against_the_budget():
    script = [tool_call_message("c1", "count_words", {"text": "a laptop for travel"}),
              tool_call_message("c2", "price_of", {"product_id": "L1"}),
              tool_call_message("c3", "recommend_product", {"product_id": "L1", "reasoning": "cheap"})]
    with registered_tool(WORD_COUNT), registered_tool(PRICE_OF):
        traj, agent = run(script, budget=3)
        assert agent.offered[0] == [*TOOL_ORDER, "count_words", "price_of"]
        assert traj.termination == "recommended" and traj.predicted_product_id == "L1"
        assert traj.total_tool_calls == 3 and [s.tool for s in traj.steps] == ["count_words", "price_of",
                                                                               "recommend_product"]
        tool_messages = [json.loads(m["content"]) for m in traj.trajectory if m["role"] == "tool"]
        assert tool_messages[0]["words"] == 4 and tool_messages[1] == {"product_id": "L1", "price": 9.99}

        short, _ = run(script, budget=2)   # two user-tool calls use the whole budget: no recommendation
        assert short.termination == "budget_exhausted" and short.total_tool_calls == 2
        assert short.predicted_product_id is None
    unregistered, agent = run(script, budget=3)
    assert agent.offered[0] == list(TOOL_ORDER)
    assert unregistered.steps[0].error == "Unknown tool: count_words" and unregistered.tool_errors == 2


# ---------------------------------------------------------------------------------------------------------
# (c) one clear error for a taken name; taking a registration back
# ---------------------------------------------------------------------------------------------------------

def test_a_duplicate_name_is_refused_in_one_clear_error():
    other = Tool("count_words", "Another counter.", WORD_COUNT_PARAMETERS, count_words)
    with registered_tool(WORD_COUNT):
        with pytest.raises(ValueError) as refused:
            register_tool(other)
        assert str(refused.value) == "tool 'count_words' is already registered (pass replace=True to replace it)"
        assert type(refused.value).__name__ == "PluginError"
        assert register_tool(WORD_COUNT) is WORD_COUNT              # the same record again: a no-op
        assert [t.name for t in all_tools()].count("count_words") == 1
    for builtin in ("search_products", TERMINAL_TOOL):
        with pytest.raises(ValueError, match=f"tool '{builtin}' is a built-in tool and cannot be registered"):
            register_tool(Tool(builtin, "mine", WORD_COUNT_PARAMETERS, count_words))
    with pytest.raises(ValueError, match="a registered tool cannot be terminal"):
        register_tool(Tool("finish", "Ends it.", WORD_COUNT_PARAMETERS, count_words, terminal=True))
    with pytest.raises(ValueError, match="register_tool takes a Tool record, got dict"):
        register_tool({"name": "count_words"})  # type: ignore[arg-type]


def test_replace_keeps_the_place_and_the_context_manager_restores_the_previous_record():
    second = Tool("count_words", "Counts words differently.", WORD_COUNT_PARAMETERS,
                  lambda box, params, result: {"words": -1})
    register_tool(WORD_COUNT)
    register_tool(PRICE_OF)
    try:
        with registered_tool(second, replace=True):
            assert [t.name for t in all_tools()][10:] == ["count_words", "price_of"]
            assert call(box(), "count_words", {"text": "a b"}).content == {"words": -1}
        assert tools.get_tool("count_words") is WORD_COUNT
    finally:
        assert unregister_tool("count_words") is WORD_COUNT
        unregister_tool("price_of")
    assert all_tools() == BUILTIN_TOOLS
    with pytest.raises(ValueError, match="cannot unregister tool 'count_words': it is not a registered tool"):
        unregister_tool("count_words")
    with pytest.raises(ValueError, match="cannot unregister tool 'ask_user': it is a built-in tool"):
        unregister_tool("ask_user")


def test_a_failing_block_still_unregisters():
    with pytest.raises(RuntimeError):
        with registered_tool(WORD_COUNT):
            raise RuntimeError("boom")
    assert tools.get_tool("count_words") is None and all_tools() == BUILTIN_TOOLS

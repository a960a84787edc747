"""Keeping a conversation inside model.context_tokens (ecab/llm/context_window.py, issue 31 item 4): nothing
changes under the limit; over it the oldest tool results become stubs first (valid JSON, product ids kept),
then older assistant text, never a message removed, never the system prompt, the query or the last turn
touched; a conversation that cannot fit raises ContextOverflow naming model.context_tokens."""
from __future__ import annotations

import copy
import json

import pytest

from ecab.env.agent_protocol import system_prompt
from ecab.env.tools import tool_schemas
from ecab.llm.context_window import (ASSISTANT_TEXT, PRODUCT_IDS, TOOL_RESULT, ContextOverflow, estimate_tokens,
                                     fit, needed_tokens, product_ids_in)

QUERY = "I need wireless headphones with good noise cancelling under $100 for my daily train commute."
TOOLS = tool_schemas()


def page(n: int) -> dict:
    """A search_products page of 20 products (the shape of env/tools.py's search answer, with a price and a
    rating as some catalogs add): ~840 tokens as a tool message."""
    return {"products": [{"product_id": f"B0{n:02d}{i:06d}",
                          "title": f"Wireless Over-Ear Headphones {n}-{i}, Active Noise Cancelling, 40h Battery",
                          "price": round(19.99 + i, 2), "average_rating": 4.3} for i in range(20)],
            "page": n, "total_found": 500}


def call(n: int, *, content: str = "", name: str = "search_products", arguments: dict | None = None) -> dict:
    args = {"query": "wireless noise cancelling headphones", "page": n} if arguments is None else arguments
    return {"role": "assistant", "content": content,
            "tool_calls": [{"id": f"call_{n:04d}", "type": "function",
                            "function": {"name": name, "arguments": json.dumps(args)}}]}


def result(n: int, content: dict | None = None) -> dict:
    return {"role": "tool", "tool_call_id": f"call_{n:04d}", "content": json.dumps(page(n) if content is None
                                                                                   else content)}


def episode(pages: int, *, thoughts: str = "") -> list[dict]:
    """The system prompt and query, then `pages` search turns (an assistant tool call and its result page)."""
    messages = [{"role": "system", "content": system_prompt(100)}, {"role": "user", "content": QUERY}]
    for n in range(pages):
        messages += [call(n, content=thoughts), result(n)]
    return messages


def prompt_tokens(messages: list[dict], tools=TOOLS) -> int:
    return sum(estimate_tokens(m) for m in messages) + (estimate_tokens(tools) if tools else 0)


def test_a_page_and_the_start_are_the_sizes_the_issue_measured():
    assert 800 <= estimate_tokens(result(0)) <= 900
    start = prompt_tokens(episode(0))
    assert 1500 <= start <= 1800, start


def test_under_the_limit_nothing_changes():
    messages = episode(3, thoughts="Let me look at the next page.")
    before = copy.deepcopy(messages)
    fitted = fit(messages, TOOLS, 8192)
    assert fitted.messages == before and messages == before
    assert fitted.messages is not messages                     # a new list
    assert fitted.trims == [] and not fitted.trimmed
    assert fitted.estimated_tokens == prompt_tokens(messages) <= fitted.budget_tokens
    assert fit(messages, TOOLS, None).messages == before        # no limit: nothing to do


def test_over_the_limit_the_oldest_tool_results_go_first_and_the_last_turns_stay_verbatim():
    messages = episode(6)
    before = copy.deepcopy(messages)
    fitted = fit(messages, TOOLS, 8192)
    assert messages == before                                   # the input is untouched
    shortened = [t["index"] for t in fitted.trims]
    tool_indices = [i for i, m in enumerate(messages) if m["role"] == "tool"]
    assert shortened == tool_indices[:len(shortened)]           # a prefix: the oldest results, in order
    assert 0 < len(shortened) <= len(tool_indices) - 2
    assert all(t["what"] == TOOL_RESULT and t["role"] == "tool" for t in fitted.trims)
    assert fitted.messages[-4:] == before[-4:]                  # the last two turns, verbatim
    for trim in fitted.trims:
        assert trim["tool_call_id"] == messages[trim["index"]]["tool_call_id"]
        assert trim["tokens_before"] == estimate_tokens(messages[trim["index"]]) > trim["tokens_after"]
        assert trim["tokens_after"] == estimate_tokens(fitted.messages[trim["index"]])


def test_the_stub_is_valid_json_that_says_what_happened_and_keeps_the_product_ids():
    fitted = fit(episode(6), TOOLS, 8192)
    first = fitted.trims[0]["index"]
    stub = json.loads(fitted.messages[first]["content"])
    assert stub["truncated"] is True
    assert "shortened to fit the context" in stub["note"] and "call the tool again" in stub["note"]
    assert f"({fitted.trims[0]['tokens_before']} tokens)" in stub["note"]
    assert stub["product_ids"] == [p["product_id"] for p in page(0)["products"]]


def test_product_ids_are_found_in_every_result_shape():
    assert product_ids_in({"product_ids": ["A", "B"]}) == ["A", "B"]
    assert product_ids_in({"product": {"product_id": "C", "title": "x"}}) == ["C"]
    assert product_ids_in({"reviews": [{"product_id": "D"}, {"product_id": "D"}]}) == ["D"]
    assert product_ids_in({"store": "s", "products": [{"product_id": 7}]}) == ["7"]
    assert product_ids_in({"error": "boom"}) == [] and product_ids_in(None) == []


def test_tool_call_ids_and_the_message_count_are_unchanged():
    for limit in (8192, 4096):
        messages = episode(8 if limit == 8192 else 4, thoughts="Comparing prices across the pages so far. " * 8)
        fitted = fit(messages, TOOLS, limit)
        assert fitted.trims
        assert len(fitted.messages) == len(messages)
        assert [m["role"] for m in fitted.messages] == [m["role"] for m in messages]
        assert [m.get("tool_calls") for m in fitted.messages] == [m.get("tool_calls") for m in messages]
        assert [m.get("tool_call_id") for m in fitted.messages] == [m.get("tool_call_id") for m in messages]


def test_the_result_is_under_the_limit_by_the_same_estimate():
    for pages, limit in ((4, 4096), (8, 6144), (20, 8192)):
        fitted = fit(episode(pages), TOOLS, limit, reserve_output=512)
        assert fitted.trimmed
        assert fitted.estimated_tokens == prompt_tokens(fitted.messages)
        assert fitted.estimated_tokens <= fitted.budget_tokens
        assert needed_tokens(fitted.estimated_tokens, 512, 0.10) <= limit


def test_long_assistant_text_is_shortened_only_after_the_tool_results_and_keeps_its_tool_calls():
    thoughts = "I compared the noise cancelling, the battery and the price of every pair on this page. " * 12
    messages = episode(8, thoughts=thoughts)
    fitted = fit(messages, TOOLS, 6144)
    kinds = [t["what"] for t in fitted.trims]
    assert ASSISTANT_TEXT in kinds
    older_tools = [i for i, m in enumerate(messages[:-4]) if m["role"] == "tool"]
    assert {t["index"] for t in fitted.trims if t["role"] == "tool"} == set(older_tools)   # all of them first
    for trim in fitted.trims:
        if trim["what"] == ASSISTANT_TEXT:
            sent = fitted.messages[trim["index"]]
            assert sent["content"].startswith(thoughts[:100]) and sent["content"].endswith("context]")
            assert sent["tool_calls"] == messages[trim["index"]]["tool_calls"]
    assert fitted.messages[-4:] == messages[-4:]


def test_as_a_last_resort_stubs_lose_their_ids_and_the_turn_before_the_last_is_shortened():
    messages = episode(5)
    fitted = fit(messages, TOOLS, 4096)
    kinds = {t["index"]: t["what"] for t in fitted.trims}
    assert PRODUCT_IDS in kinds.values()
    stub = json.loads(fitted.messages[min(kinds)]["content"])
    assert "product_ids" not in stub and "its 20 product ids not kept" in stub["note"]
    assert len(messages) - 3 in kinds                          # the second-to-last page
    assert fitted.messages[-2:] == messages[-2:]                # the last turn: never


def test_an_impossible_limit_raises_with_the_numbers_and_the_config_key():
    messages = episode(20)
    with pytest.raises(ContextOverflow) as caught:
        fit(messages, TOOLS, 4096)
    error = caught.value
    text = str(error)
    assert "model.context_tokens=4096" in text
    assert f"needs ~{error.needed_tokens} tokens" in text and error.needed_tokens > 4096
    assert f"alone need ~{error.floor_tokens}" in text and error.floor_tokens < error.needed_tokens
    assert "512 reserved for the reply" in text
    with pytest.raises(ContextOverflow) as caught:               # the protected part alone is over
        fit(episode(1), TOOLS, 2048, config_key="judge.model")
    assert "judge.model.context_tokens=2048" in str(caught.value)
    assert caught.value.floor_tokens > 2048
    one = episode(1)                                             # the floor: tools, system prompt, query, last turn
    assert caught.value.floor_tokens == needed_tokens(prompt_tokens(one), 512, 0.10)
    assert error.floor_tokens == needed_tokens(prompt_tokens(messages[:2] + messages[-2:]), 512, 0.10)


def test_a_small_tool_result_is_left_as_it_is():
    messages = episode(0)
    messages += [call(0, name="filter_by_attribute", arguments={"product_ids": ["A"], "attribute_name": "Color",
                                                                "attribute_value": "black"}),
                 result(0, {"product_ids": []})]
    for n in range(1, 8):
        messages += [call(n), result(n)]
    fitted = fit(messages, TOOLS, 6144)
    assert fitted.trims and 3 not in {t["index"] for t in fitted.trims}
    assert fitted.messages[3] is messages[3]


def test_the_system_prompt_and_the_query_are_never_touched():
    messages = episode(12)
    messages[1]["content"] = QUERY + " " + "Also, it must fold flat and come with a hard case. " * 30   # a long query
    fitted = fit(messages, TOOLS, 8192)
    assert fitted.trimmed
    assert fitted.messages[0] is messages[0] and fitted.messages[1] is messages[1]
    assert {0, 1}.isdisjoint(t["index"] for t in fitted.trims)


def test_the_shoppers_answer_is_never_lost():
    # A long answer (its stub without the answer would be shorter): the answer stays, as a revealed
    # preference cannot be asked for again.
    answer = {"user_response": "Over-ear, black, and it must work with my iPhone. " * 12, "turns_remaining": 2}
    messages = episode(0)
    messages += [call(0, name="ask_user", arguments={"question": "Any preferences?"}), result(0, answer)]
    for n in range(1, 10):
        messages += [call(n), result(n)]
    fitted = fit(messages, TOOLS, 6144)
    assert fitted.trimmed
    sent = json.loads(fitted.messages[3]["content"])
    assert sent["user_response"] == answer["user_response"]


def test_a_better_estimate_can_be_passed():
    seen = []

    def estimate(obj) -> int:
        seen.append(obj)
        return 100 if isinstance(obj, list) else 10

    fitted = fit(episode(2), TOOLS, 1000, reserve_output=0, estimate=estimate)
    assert fitted.estimated_tokens == 100 + 10 * 6 and not fitted.trimmed and seen


def test_a_realistic_episode_of_search_pages_fits_into_4096():
    # The ~1,600-token start plus the last ~840-token page, with 512 tokens kept for the reply and the 10% margin,
    # leave room for a few earlier turns in 4096; each earlier turn costs ~90 tokens even shortened (its
    # assistant tool call and a stub; no message is ever removed), so 20 pages need 8192 (next test).
    messages = episode(5)
    assert prompt_tokens(messages) > 4096
    fitted = fit(messages, TOOLS, 4096)
    assert fitted.estimated_tokens <= fitted.budget_tokens and needed_tokens(fitted.estimated_tokens, 512, .1) <= 4096
    assert fitted.messages[-2:] == messages[-2:] and fitted.messages[:2] == messages[:2]
    assert all(json.loads(m["content"]) for m in fitted.messages if m["role"] == "tool")


def test_twenty_search_pages_fit_into_8192_with_every_product_id_kept():
    messages = episode(20)
    assert prompt_tokens(messages) > 2 * 8192
    fitted = fit(messages, TOOLS, 8192)
    assert fitted.estimated_tokens <= fitted.budget_tokens
    assert all(t["what"] == TOOL_RESULT for t in fitted.trims)
    ids = [pid for m in fitted.messages if m["role"] == "tool" for pid in product_ids_in(json.loads(m["content"]))]
    assert ids == [p["product_id"] for n in range(20) for p in page(n)["products"]]

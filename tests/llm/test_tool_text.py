"""Tool calls written as text (ecab/llm/tool_text.py, issue 31 item 1): the shapes real small models served by
llama.cpp wrote (a bare JSON object after a thought, newline padding, braces doubled by a chat template, one
object per line, Hermes `<tool_call>` blocks), read back as calls; something that looks like a call but cannot be
read gives one precise error; text without any call gives neither."""
from __future__ import annotations

import json

import pytest

from ecab.llm.tool_text import TextCall, calls_from_text


def pairs(found):
    return [(c.name, json.loads(c.arguments)) for c in found.calls]


THOUGHT = ("Thought:\n- Observation: the shopper wants pink earbuds.\n- Plan: search the catalog for them.")


def test_a_bare_json_call_after_a_thought_with_padding():
    text = THOUGHT + '\n\nJSON response:\n{"name": "search_products", "arguments": {"query": "pink earbuds", ' \
        '"page": 0}}' + "\n" * 300
    found = calls_from_text(text, "json")
    assert pairs(found) == [("search_products", {"query": "pink earbuds", "page": 0})]
    assert found.error is None
    assert found.text == THOUGHT + "\n\nJSON response:"          # the thought kept, the padding gone


def test_a_pretty_printed_call_alone():
    text = '{\n  "name": "recommend_product",\n  "arguments": {\n    "product_id": "12345",\n' \
           '    "reasoning": "It is pink."\n  }\n}'
    found = calls_from_text(text, "json")
    assert pairs(found) == [("recommend_product", {"product_id": "12345", "reasoning": "It is pink."})]
    assert found.text == ""


def test_doubled_braces_several_calls_one_per_line():
    """What Qwen2.5-Coder-1.5B wrote through a broken template: outer braces doubled, inner single, and a
    trailing `]}` after the last one."""
    text = (THOUGHT + '\n\n'
            '{{"name": "search_products", "arguments": {"query": "pink earbuds", "page": 0}}}}\n'
            '{{"name": "filter_by_attribute", "arguments": {"product_ids": ["1", "2"], "attribute_name": '
            '"Material", "attribute_value": "Silicone"}}}\n'
            '{{"name": "get_product_details", "arguments": {"product_id": "1"}}]}')
    found = calls_from_text(text, "json")
    assert pairs(found) == [
        ("search_products", {"query": "pink earbuds", "page": 0}),
        ("filter_by_attribute", {"product_ids": ["1", "2"], "attribute_name": "Material",
                                 "attribute_value": "Silicone"}),
        ("get_product_details", {"product_id": "1"})]
    assert found.error is None
    assert found.text.startswith(THOUGHT) and "{" not in found.text and "name" not in found.text


def test_fully_doubled_braces_nested():
    found = calls_from_text('{{"name": "f", "arguments": {{"a": {{"b": 1}}, "c": "{{x}}"}}}}', "json")
    assert pairs(found) == [("f", {"a": {"b": 1}, "c": "{{x}}"})]      # braces inside strings untouched


def test_single_brace_json_with_nested_closing_braces_is_not_undoubled():
    """`}}` in single-brace JSON closes nested objects; reading it as a doubled brace would corrupt it."""
    text = '{"name": "python_execute", "arguments": {"code": "d = {1: {2: 3}}", "opts": {"deep": {"x": 1}}}}'
    found = calls_from_text(text, "json")
    assert pairs(found) == [("python_execute", {"code": "d = {1: {2: 3}}", "opts": {"deep": {"x": 1}}})]
    assert found.text == ""


def test_doubled_outer_braces_around_single_nested_objects():
    found = calls_from_text('{{"name": "f", "arguments": {"a": {"b": {"c": 1}}}}}} and then', "json")
    assert pairs(found) == [("f", {"a": {"b": {"c": 1}}})]
    assert found.text == "and then"


def test_other_shapes_and_string_arguments():
    text = ('{"type": "function", "function": {"name": "f", "arguments": "{\\"a\\": 1}"}}\n'
            '{"tool": "g", "parameters": {"b": 2}}\n{"tool": "h", "args": {"c": 3}}\n'
            '{"name": "get_user_profile"}\n{"name": "ask_user", "arguments": ""}')
    found = calls_from_text(text, "json")
    assert pairs(found) == [("f", {"a": 1}), ("g", {"b": 2}), ("h", {"c": 3}), ("get_user_profile", {}),
                            ("ask_user", {})]


def test_a_call_nested_in_another_object_is_found():
    found = calls_from_text('{"tool_calls": [{"name": "f", "arguments": {"a": 1}}]}', "json")
    assert pairs(found) == [("f", {"a": 1})]


def test_plain_text_and_objects_that_are_not_calls_give_nothing():
    for text in ["I think the pink ones are best.", "```json", "",
                 'The product {"name": "Pink buds", "price": 3} is nice, {"a": 1} too, and } { stray.']:
        for fmt in ("json", "hermes"):
            found = calls_from_text(text, fmt)
            assert found.calls == [] and found.error is None and found.text == text


def test_native_reads_nothing():
    found = calls_from_text('{"name": "f", "arguments": {}}', "native")
    assert found.calls == [] and found.error is None


def test_unknown_format_is_refused():
    with pytest.raises(ValueError, match="tool_call_format"):
        calls_from_text("x", "xml")


def test_a_truncated_call_is_one_precise_error_with_its_name_and_raw_text():
    text = THOUGHT + '\n\n{"name": "recommend_product", "arguments": {"product_id": "P001", "reas'
    found = calls_from_text(text, "json")
    [call] = found.calls
    assert call.name == "recommend_product"
    assert call.arguments == '{"name": "recommend_product", "arguments": {"product_id": "P001", "reas'
    assert found.error == call.error
    assert call.error.startswith("could not read the tool call in your message (json format): invalid JSON "
                                 "(Unterminated string starting at")
    assert call.error.endswith('write exactly one JSON object {"name": ..., "arguments": {...}} '
                               "(double-quoted keys and strings)")
    assert found.text == THOUGHT


def test_malformed_calls_keep_their_place_among_good_ones():
    text = ("{'name': 'f', 'arguments': {}}\n"                   # single quotes: not JSON, not call-like JSON
            '{"name": "g", "arguments": {"a": 1,}}\n\n'
            '{"name": "h", "arguments": [1, 2]}\n'
            '{"name": "k", "arguments": {"b": 2}}')
    found = calls_from_text(text, "json")
    assert [(c.name, c.error is not None) for c in found.calls] == [("g", True), ("h", True), ("k", False)]
    assert "Expecting property name enclosed in double quotes" in found.calls[0].error
    assert found.calls[0].arguments == '{"name": "g", "arguments": {"a": 1,}}'
    assert '"arguments" must be a JSON object, got list' in found.calls[1].error
    assert found.error == found.calls[0].error


def test_a_call_without_a_readable_name():
    found = calls_from_text('{"name": 7, "arguments": {"a": 1}}', "json")
    [call] = found.calls
    assert call.name == "" and '"name" must be the tool\'s name' in call.error


def test_hermes_blocks_with_a_thought_and_a_missing_closing_tag():
    text = ('I will search first.\n<tool_call>\n{"name": "search_products", "arguments": {"query": "mug"}}\n'
            '</tool_call>\n<tool_call>{"name": "get_product_details", "arguments": {"product_id": "1"}}')
    found = calls_from_text(text, "hermes")
    assert pairs(found) == [("search_products", {"query": "mug"}), ("get_product_details", {"product_id": "1"})]
    assert found.text == "I will search first." and found.error is None


def test_hermes_two_blocks_the_first_unclosed():
    text = '<tool_call>{"name": "a", "arguments": {}}\n<tool_call>{"name": "b", "arguments": {"x": 1}}</tool_call>'
    assert pairs(calls_from_text(text, "hermes")) == [("a", {}), ("b", {"x": 1})]


def test_hermes_reads_only_blocks():
    assert calls_from_text('{"name": "f", "arguments": {}}', "hermes").calls == []


@pytest.mark.parametrize("block, reason", [
    ('{"name": "search_products", "arguments": {"query": "mug"}', "invalid JSON (Expecting ',' delimiter"),
    ("search for mugs", "the <tool_call> block holds no JSON object"),
    ("  ", "the <tool_call> block is empty"),
    ('{"query": "mug"}', 'the object has no "name" and "arguments"'),
])
def test_hermes_unreadable_block(block, reason):
    found = calls_from_text(f"Let me look.\n<tool_call>{block}</tool_call>", "hermes")
    [call] = found.calls
    assert call.error.startswith(f"could not read the tool call in your message (hermes format): {reason}")
    assert call.error.endswith('; write exactly one <tool_call>{"name": ..., "arguments": {...}}</tool_call>')
    assert call.arguments == block.strip()
    assert call.name == ("search_products" if "search_products" in block else "")
    assert found.text == "Let me look."


def test_calls_are_text_call_records():
    found = calls_from_text('{"name": "f", "arguments": {"a": "é"}}', "json")
    assert found.calls == [TextCall("f", '{"a": "é"}')]

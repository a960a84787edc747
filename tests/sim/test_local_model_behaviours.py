"""The simulator behaving like real small models served locally (issue 31): tool calls written as text
(hermes, json, json with doubled braces), invented tool names and product ids, repeated calls, replies padded
to the output cap, slow turns, streamed replies (Server-Sent Events), and replaying recorded trajectories.
Over real HTTP to a simulator started here, as tests/sim/test_sim.py does."""
import asyncio
import gzip
import json
import re
import time
from pathlib import Path

import urllib.request

import aiohttp
import openai
import pytest

from ecab.agents.sim_policy import HeuristicPolicy
from ecab.env.tools import tool_schemas
from ecab.sim import SimConfig, SimServer

QUERY = "I need a braided USB-C charger cable under $20 with at least 4 stars."
SYSTEM = {"role": "system", "content": "You are a personal shopping assistant."}
TOOLS = {t["function"]["name"] for t in tool_schemas()}
PRODUCTS = {"P1", "P2"}
SEARCH = {"products": [{"product_id": "P1", "title": "Braided USB-C cable"},
                       {"product_id": "P2", "title": "USB-C cable"}], "total_found": 2}
REAL = Path(__file__).resolve().parents[2].parent / "shared" / "real" / "local-model"
REF = re.compile(r" \(ref [0-9a-f]{12}\)")


def fake_result(name: str, raw: str) -> dict:
    """What the environment answers, errors included (unknown tools, bad JSON, unknown product ids)."""
    if name not in TOOLS:
        return {"error": f"Unknown tool: {name}"}
    try:
        args = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as exc:
        return {"error": f"Invalid tool arguments JSON: {exc}"}
    ids = [args["product_id"]] if "product_id" in args else list(args.get("product_ids") or [])
    if any(i not in PRODUCTS for i in ids):
        return {"error": f"Unknown product id(s): {[i for i in ids if i not in PRODUCTS]}"}
    if name == "get_user_profile":
        return {"profile": {"product_requirements": {"Color": "Black"}}}
    if name == "ask_user":
        return {"user_response": "I'm not sure."}
    if name == "search_products":
        return SEARCH
    if name == "get_product_details":
        return {"product": {"product_id": args["product_id"], "title": "Braided USB-C cable", "price": 9.99,
                            "details": {"Color": "Black"}, "features": []}}
    if name == "get_product_review_stats":
        return {"products": [{"product_id": p, "average_rating": 4.5, "rating_number": 100} for p in ids]}
    if name == "recommend_product":
        return {"recommended_product": args["product_id"]}
    return {"reviews": []}


def text_calls(content: str, form: str) -> list[tuple[str, str]]:
    """The calls a reply wrote in its text, read strictly in the form asked for: (name, raw arguments)."""
    if form == "hermes":
        bodies = re.findall(r"<tool_call>\n(.*?)\n</tool_call>", content, re.DOTALL)
    elif form == "json_doubled":
        bodies = [line[1:-1] for line in content.splitlines() if line.startswith("{{") and line.endswith("}}")]
    else:
        bodies = [line for line in content.splitlines() if line.startswith('{"name"')]
    out = []
    for body in bodies:
        call = json.loads(body)
        arguments = call["arguments"]
        out.append((call["name"], arguments if isinstance(arguments, str) else json.dumps(arguments)))
    return out


def sim(config=None) -> SimServer:
    return SimServer(config, [HeuristicPolicy])


def client_for(server, **kw):
    return openai.AsyncOpenAI(base_url=server.base_url, api_key="none", max_retries=0, **kw)


async def converse(client, form="native", echo="native", max_turns=80, **create):
    """Drive a conversation as the episode loop does (the first call executed, a reminder after a text-only
    turn); text-form calls parsed by the client and echoed back as native tool_calls (echo="native") or as the
    text they came in (echo="text"). Returns [(name or "text", raw arguments, number of calls)] and the
    successful calls executed."""
    messages = [SYSTEM, {"role": "user", "content": QUERY}]
    turns, executed = [], []
    for k in range(max_turns):
        response = await client.chat.completions.create(model="m", messages=messages, tools=tool_schemas(),
                                                        **create)
        message = response.choices[0].message
        content = message.content or ""
        if form == "native":
            calls = [(c.function.name, c.function.arguments) for c in message.tool_calls or []]
        else:
            assert not message.tool_calls, "a text form sends no native tool_calls"
            calls = text_calls(content, form)
            assert not calls or content.startswith("Thought: "), content
        if not calls:
            turns.append(("text", None, 0))
            messages += [{"role": "assistant", "content": content},
                         {"role": "user", "content": "Do not answer directly."}]
            continue
        name, raw = calls[0]
        turns.append((name, raw, len(calls)))
        call_id = message.tool_calls[0].id if form == "native" else f"parsed_{k}"
        if echo == "native" or form == "native":
            messages.append({"role": "assistant", "content": content, "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": name, "arguments": raw}}]})
        else:
            messages.append({"role": "assistant", "content": content})
        result = fake_result(name, raw)
        messages.append({"role": "tool", "tool_call_id": call_id, "content": json.dumps(result)})
        if "error" not in result:
            executed.append((name, json.loads(raw)))
        if name == "recommend_product" and "error" not in result:
            return turns, executed
    raise AssertionError(f"the conversation did not end: {turns}")


def run(config=None, **kw):
    with sim(config) as server:
        turns, executed = asyncio.run(converse(client_for(server), **kw))
        return turns, executed, server.stats


@pytest.fixture(scope="module")
def reference():
    """The well-behaved native conversation: what every misbehaving one must still get done."""
    turns, executed, _ = run()
    assert executed[0] == ("get_user_profile", {}) and executed[-1][0] == "recommend_product"
    assert all(n == 1 for *_, n in turns) and len(turns) == len(executed)
    return executed


# ------------------------------------------------------------------------------------------------- config

def test_the_new_keys_default_to_the_well_behaved_endpoint_and_bad_values_name_the_key(tmp_path):
    cfg = SimConfig.from_any({})
    assert (cfg.tool_call_format, cfg.invented_tools, cfg.invented_ids, cfg.repeats, cfg.pad_to_cap,
            cfg.slow_turn_ms, cfg.chunk_gap_ms, cfg.replay) == ("native", 0, 0, 0, 0, 0, 0, None)
    with pytest.raises(ValueError, match=r"model\.sim\.tool_call_format must be one of .*'json_doubled'.*got 'xml'"):
        SimConfig.from_any({"tool_call_format": "xml"})
    for key in ("invented_tools", "invented_ids", "repeats", "pad_to_cap"):
        with pytest.raises(ValueError, match=rf"model\.sim\.{key} must be a number in \[0, 1\], got 2"):
            SimConfig.from_any({key: 2})
    for key in ("slow_turn_ms", "chunk_gap_ms"):
        with pytest.raises(ValueError, match=rf"model\.sim\.{key} must be a number >= 0, got -1"):
            SimConfig.from_any({key: -1})
    with pytest.raises(ValueError, match=r"model\.sim\.replay must be the path .*no such file"):
        SimConfig.from_any({"replay": str(tmp_path / "missing.jsonl")})


def test_the_model_config_lists_every_key_of_the_sim_block():
    from omegaconf import OmegaConf
    from dataclasses import fields
    block = OmegaConf.to_container(OmegaConf.load(Path(__file__).resolve().parents[2] / "conf/model/sim.yaml").sim)
    assert set(block) == {f.name for f in fields(SimConfig)}
    SimConfig.from_any(block)


# --------------------------------------------------------------------------------------- text tool calls

@pytest.mark.parametrize("form", ["hermes", "json", "json_doubled"])
@pytest.mark.parametrize("echo", ["native", "text"])
def test_text_tool_calls_follow_the_plan_whichever_way_the_client_echoes_them(reference, form, echo):
    turns, executed, stats = run({"tool_call_format": form}, form=form, echo=echo)
    assert executed == reference and len(turns) == len(reference)
    assert stats["text_calls"] == len(turns)
    # a plan resumed from its cache when the text comes back unchanged, replayed when it comes back parsed
    assert stats["policy_resumes"] == (len(turns) - 1 if echo == "text" else 0)


def test_each_text_form_is_written_as_the_real_models_wrote_it():
    async def first(form):
        with sim({"tool_call_format": form}) as server:
            response = await client_for(server).chat.completions.create(
                model="m", messages=[SYSTEM, {"role": "user", "content": QUERY}], tools=tool_schemas())
        return response.choices[0]
    replies = {form: asyncio.run(first(form)) for form in ("hermes", "json", "json_doubled")}
    for form, choice in replies.items():
        assert choice.finish_reason == "stop" and not choice.message.tool_calls
        line = choice.message.content.split("\n", 1)[1]
        assert choice.message.content.startswith("Thought: ")
        assert line == {"hermes": '<tool_call>\n{"name": "get_user_profile", "arguments": {}}\n</tool_call>',
                        "json": '{"name": "get_user_profile", "arguments": {}}',
                        "json_doubled": '{{"name": "get_user_profile", "arguments": {}}}'}[form]


def test_faults_in_a_text_form_are_written_in_it_and_never_end_the_conversation(reference):
    faults = {"invalid_json": 0.15, "two_calls": 0.15, "no_tool_call": 0.15, "unknown_tool": 0.15}
    turns, executed, stats = run({"tool_call_format": "json", "malformed": faults, "seed": 3}, form="json")
    assert executed == reference
    assert {n for *_, n in turns} == {0, 1, 2}, "text-only turns and two calls in one text"
    assert any(raw and raw.endswith(',"') for _, raw, _ in turns), "invalid JSON arguments, as a string"
    assert all(stats[f"fault_{k}"] for k in faults)


# ------------------------------------------------------------------------- invented names, ids, repeats

def test_invented_tools_ids_and_repeats_appear_at_their_rates_and_are_deterministic(reference):
    config = {"invented_tools": 0.2, "invented_ids": 0.4, "repeats": 0.25, "seed": 7}
    turns, executed, stats = run(config)
    assert executed[-1][0] == "recommend_product" and executed[-1] == reference[-1]
    # the plan's calls all made it, in order (a repeated call that succeeded was executed twice in a row)
    assert [c for k, c in enumerate(executed) if not k or c != executed[k - 1]] == reference
    names = [name for name, *_ in turns]
    invented = {"search_catalog", "get_product_info", "find_products", "product_search", "get_reviews"}
    assert stats["local_invented_tools"] >= 1 and set(names) - TOOLS <= invented and set(names) - TOOLS
    assert stats["local_invented_ids"] >= 1
    assert any(raw and re.search(r'"(12345|987654321|67890|54321|P001)"', raw) for _, raw, _ in turns)
    assert stats["local_repeats"] >= 1
    assert sum(a == b for a, b in zip(turns, turns[1:])) >= stats["local_repeats"], "a repeat is the turn before"
    assert turns[-1][0] == "recommend_product" and sum(name == "recommend_product" for name in names) == 1
    again, _, _ = run(config)
    assert again == turns, "the same seed, the same turns"
    other, _, _ = run({**config, "seed": 8})
    assert other != turns, "another seed, other draws"


@pytest.mark.parametrize("echo", ["native", "text"])
def test_repeats_and_invented_calls_in_a_text_form(reference, echo):
    config = {"tool_call_format": "json_doubled", "invented_tools": 0.2, "repeats": 0.3, "seed": 2}
    turns, executed, stats = run(config, form="json_doubled", echo=echo)
    assert [c for k, c in enumerate(executed) if not k or c != executed[k - 1]] == reference
    assert stats["local_repeats"] >= 1 and stats["local_invented_tools"] >= 1
    assert sum(a == b for a, b in zip(turns, turns[1:])) >= stats["local_repeats"]
    assert run(config, form="json_doubled", echo=echo)[0] == turns


def test_at_rate_one_every_turn_misbehaves_except_the_recommendation():
    with sim({"invented_tools": 1.0}) as server:
        turns = []

        async def go():
            messages = [SYSTEM, {"role": "user", "content": QUERY}]
            for k in range(3):
                response = await client_for(server).chat.completions.create(model="m", messages=messages)
                call = response.choices[0].message.tool_calls[0]
                turns.append(call.function.name)
                messages += [{"role": "assistant", "content": "", "tool_calls": [call.to_dict()]},
                             {"role": "tool", "tool_call_id": call.id, "content": '{"error": "Unknown tool"}'}]
        asyncio.run(go())
    assert all(name not in TOOLS for name in turns)


# --------------------------------------------------------------------------------------- padding, slowness

def test_padding_fills_the_cap_with_newlines_and_finishes_with_length():
    with sim({"pad_to_cap": 1.0}) as server:
        async def ask(**cap):
            return await client_for(server).chat.completions.create(
                model="m", messages=[SYSTEM, {"role": "user", "content": QUERY}], tools=tool_schemas(), **cap)
        padded = asyncio.run(ask(max_completion_tokens=300))
        legacy = asyncio.run(ask(max_tokens=120))
        uncapped = asyncio.run(ask())
    choice = padded.choices[0]
    assert choice.finish_reason == "length" and padded.usage.completion_tokens == 300
    assert choice.message.content.startswith("Thought:") and choice.message.content.endswith("\n" * 100)
    call = choice.message.tool_calls[0].function
    assert len(choice.message.content) + len(call.name) + len(call.arguments) == 300 * 4
    assert legacy.choices[0].finish_reason == "length" and legacy.usage.completion_tokens == 120
    assert uncapped.choices[0].finish_reason == "tool_calls", "no cap in the request: nothing to pad to"


def test_padding_is_drawn_per_conversation_and_step():
    async def finishes(server):
        out = []
        messages = [SYSTEM, {"role": "user", "content": QUERY}]
        for k in range(12):
            response = await client_for(server).chat.completions.create(
                model="m", messages=messages, tools=tool_schemas(), max_completion_tokens=200)
            choice = response.choices[0]
            out.append(choice.finish_reason)
            call = choice.message.tool_calls[0]
            messages += [{"role": "assistant", "content": "", "tool_calls": [call.to_dict()]},
                         {"role": "tool", "tool_call_id": call.id,
                          "content": json.dumps(fake_result(call.function.name, call.function.arguments))}]
            if call.function.name == "recommend_product":
                break
        return out
    runs = []
    for seed in (0, 0, 1):
        with sim({"pad_to_cap": 0.5, "seed": seed}) as server:
            runs.append(asyncio.run(finishes(server)))
            assert server.stats["padded_to_cap"] == runs[-1].count("length")
    assert runs[0] == runs[1] and {"length", "tool_calls"} <= set(runs[0])
    assert runs[2] != runs[0]


def test_a_slow_turn_trips_a_client_timeout():
    with sim({"slow_turn_ms": 600}) as server:
        async def ask(timeout):
            return await client_for(server, timeout=timeout).chat.completions.create(
                model="m", messages=[SYSTEM, {"role": "user", "content": QUERY}])
        with pytest.raises(openai.APITimeoutError):
            asyncio.run(ask(0.2))
        started = time.monotonic()
        asyncio.run(ask(30))
        assert time.monotonic() - started >= 0.6


# ------------------------------------------------------------------------------------------------ streaming

def assemble(chunks: list[dict]) -> tuple[dict, str | None, dict | None]:
    """Streamed chunks back into (message, finish reason, usage), as a client does."""
    message: dict = {"role": None, "content": ""}
    calls: dict[int, dict] = {}
    finish = usage = None
    for chunk in chunks:
        assert chunk["object"] == "chat.completion.chunk"
        usage = chunk.get("usage") or usage
        for choice in chunk["choices"]:
            delta = choice["delta"]
            message["role"] = delta.get("role") or message["role"]
            message["content"] += delta.get("content") or ""
            if delta.get("reasoning_content"):
                message["reasoning_content"] = message.get("reasoning_content", "") + delta["reasoning_content"]
            for part in delta.get("tool_calls") or []:
                call = calls.setdefault(part["index"], {"id": None, "type": None,
                                                        "function": {"name": "", "arguments": ""}})
                call["id"] = part.get("id") or call["id"]
                call["type"] = part.get("type") or call["type"]
                call["function"]["name"] += (part.get("function") or {}).get("name") or ""
                call["function"]["arguments"] += (part.get("function") or {}).get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return message, finish, usage


def sse(server, body: dict) -> tuple[list[str], float, float]:
    """POST a streamed request: the `data:` payloads, the seconds to the headers and to the first payload."""
    started = time.monotonic()
    with urllib.request.urlopen(post(server, body), timeout=30) as response:
        headers_at = time.monotonic() - started
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/event-stream")
        lines, first_at = [], None
        for raw in response:
            line = raw.decode().rstrip("\n")
            if line.startswith("data: "):
                first_at = first_at if first_at is not None else time.monotonic() - started
                lines.append(line[len("data: "):])
            else:
                assert line == "", line
    return lines, headers_at, first_at


def post(server, body: dict) -> urllib.request.Request:
    return urllib.request.Request(server.base_url + "/chat/completions", data=json.dumps(body).encode(),
                                  headers={"Content-Type": "application/json"})


def plain(server, body: dict) -> dict:
    with urllib.request.urlopen(post(server, body), timeout=30) as response:
        assert response.status == 200
        return json.load(response)


def without_ids(message: dict) -> dict:
    out = json.loads(REF.sub("", json.dumps(message)))
    for call in out.get("tool_calls") or []:
        call["id"] = "x"
    return out


@pytest.mark.parametrize("config", [{}, {"tool_call_format": "hermes"}, {"pad_to_cap": 1.0}])
def test_a_streamed_reply_reassembles_to_the_plain_one(config):
    body = {"model": "m", "messages": [SYSTEM, {"role": "user", "content": QUERY}], "tools": tool_schemas(),
            "max_completion_tokens": 400}
    with sim(config) as server:
        expected = plain(server, body)
        lines, _, _ = sse(server, {**body, "stream": True, "stream_options": {"include_usage": True}})
        bare, _, _ = sse(server, {**body, "stream": True})
        assert server.stats["streamed"] == 2
    assert lines[-1] == "[DONE]" and bare[-1] == "[DONE]"
    chunks = [json.loads(line) for line in lines[:-1]]
    message, finish, usage = assemble(chunks)
    want = expected["choices"][0]["message"]
    assert without_ids(message) == without_ids({"content": "", **want})
    assert finish == expected["choices"][0]["finish_reason"]
    # the same usage (the prompt is estimated from the request's bytes, a little longer when streamed)
    assert {**usage, "prompt_tokens": 0, "total_tokens": 0} == {**expected["usage"], "prompt_tokens": 0, "total_tokens": 0}
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"] > expected["usage"]["total_tokens"]
    assert chunks[-1]["choices"] == [] and chunks[-2]["choices"][0]["finish_reason"]
    assert all("usage" in c and c["usage"] is None for c in chunks[:-1])
    assert sum(bool(c["choices"] and c["choices"][0]["delta"].get("content")) for c in chunks) >= 2, "split"
    if want.get("tool_calls"):
        pieces = [c for c in chunks if c["choices"] and c["choices"][0]["delta"].get("tool_calls")]
        assert len(pieces) >= 2 and pieces[0]["choices"][0]["delta"]["tool_calls"][0]["id"]
    bare_chunks = [json.loads(line) for line in bare[:-1]]
    assert all("usage" not in c for c in bare_chunks) and assemble(bare_chunks)[2] is None
    assert without_ids(assemble(bare_chunks)[0]) == without_ids(message)


def test_the_openai_client_reads_the_stream():
    async def go(server):
        stream = await client_for(server).chat.completions.create(
            model="m", messages=[SYSTEM, {"role": "user", "content": QUERY}], tools=tool_schemas(), stream=True,
            stream_options={"include_usage": True})
        return [chunk.model_dump() async for chunk in stream]
    with sim() as server:
        chunks = asyncio.run(go(server))
    message, finish, usage = assemble(chunks)
    assert finish == "tool_calls" and message["tool_calls"][0]["function"]["name"] == "get_user_profile"
    assert usage["completion_tokens"] > 0


def test_a_slow_stream_waits_before_its_first_chunk_and_between_chunks():
    body = {"model": "m", "messages": [SYSTEM, {"role": "user", "content": QUERY}], "stream": True}
    with sim({"slow_turn_ms": 700}) as server:
        lines, headers_at, first_at = sse(server, body)
    # order and the server's own wait only (a lower bound a loaded machine cannot break): the headers come
    # before the first chunk, which cannot come before the slow turn's 0.7 s
    assert headers_at < first_at and first_at >= 0.7, (headers_at, first_at)
    with sim({"chunk_gap_ms": 100}) as server:
        started = time.monotonic()
        lines, _, _ = sse(server, body)
        assert time.monotonic() - started >= 0.1 * (len(lines) - 2)
    assert len(lines) >= 5


def test_an_idle_timeout_fires_on_a_slow_stream():
    """The headers come at once, the first chunk only after the slow turn: a client's idle (read) timeout
    fires, its connect timeout does not."""
    body = {"model": "m", "messages": [SYSTEM, {"role": "user", "content": QUERY}], "stream": True}

    async def go(server, read_s):
        timeout = aiohttp.ClientTimeout(total=30, sock_read=read_s)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            async with session.post(server.base_url + "/chat/completions", json=body) as response:
                assert response.status == 200
                return [line async for line in response.content]
    with sim({"slow_turn_ms": 800}) as server:
        with pytest.raises(asyncio.TimeoutError):
            asyncio.run(go(server, 0.2))
        assert asyncio.run(go(server, 5))[-2:] == [b"data: [DONE]\n", b"\n"]


# ------------------------------------------------------------------------------------------------- replay

def assistant(content, *calls):
    message = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [{"id": f"call_{name}_{i}", "type": "function",
                                  "function": {"name": name, "arguments": json.dumps(args)}}
                                 for i, (name, args) in enumerate(calls)]
    return message


def recorded(query, *turns):
    """An ecab trajectory record: the conversation with its assistant turns and what answered them."""
    trajectory = [SYSTEM, {"role": "user", "content": query}]
    for turn in turns:
        trajectory.append(turn)
        if turn.get("tool_calls"):
            trajectory.append({"role": "tool", "tool_call_id": turn["tool_calls"][0]["id"], "content": "{}"})
        else:
            trajectory.append({"role": "user", "content": "Do not answer directly."})
    return {"id": query[:8], "user_query": query, "trajectory": trajectory}


RECORDS = [
    recorded("a pink kettle", assistant('{"name": "search_catalog", "arguments": {"q": "kettle"}}'),
             assistant("", ("get_product_details", {"product_id": "12345"})),
             assistant("Thought: done.", ("recommend_product", {"product_id": "12345", "reasoning": "r"}))),
    recorded(QUERY, assistant("Thought:\n- Plan: look.\n\n" + "\n" * 40),
             assistant("```json", ("bluetooth-earbuds", {"query": "cable"}), ("get_user_profile", {}))),
]


def replay_file(tmp_path, records=RECORDS, gz=False) -> Path:
    path = tmp_path / ("t.jsonl.gz" if gz else "t.jsonl")
    text = "".join(json.dumps(r) + "\n" for r in records)
    if gz:
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


def replay_conversation(server, record: dict, extra_turns: int = 0, query: str | None = None) -> list[tuple]:
    """Send the recorded conversation turn by turn (its own messages in between, then reminders):
    [(message as received, finish reason)]."""
    trajectory = [dict(m) for m in record["trajectory"]]
    if query is not None:
        trajectory[1] = {"role": "user", "content": query}
    cut = [i for i, m in enumerate(trajectory) if m["role"] == "assistant"]
    out = []
    for i in cut:
        reply = plain(server, {"model": "m", "messages": trajectory[:i]})
        out.append((reply["choices"][0]["message"], reply["choices"][0]["finish_reason"]))
    messages = list(trajectory)
    for _ in range(extra_turns):
        reply = plain(server, {"model": "m", "messages": messages})
        message = reply["choices"][0]["message"]
        out.append((message, reply["choices"][0]["finish_reason"]))
        messages += [message, {"role": "user", "content": "Do not answer directly."}]
    return out


@pytest.mark.parametrize("gz", [False, True])
def test_replay_answers_with_the_recorded_messages_in_order(tmp_path, gz):
    path = replay_file(tmp_path, gz=gz)
    with SimServer({"replay": str(path)}, [HeuristicPolicy]) as server:
        for record in RECORDS:
            got = replay_conversation(server, record, extra_turns=2)
            want = [m for m in record["trajectory"] if m["role"] == "assistant"]
            assert [m for m, _ in got[:len(want)]] == want
            assert [f for _, f in got[:len(want)]] == ["tool_calls" if m.get("tool_calls") else "stop" for m in want]
            # past the recorded turns: the last message again, its call ids made unique
            for k, (message, _) in enumerate(got[len(want):], start=1):
                assert message["content"] == want[-1]["content"]
                assert [c["function"] for c in message["tool_calls"]] == [c["function"] for c in want[-1]["tool_calls"]]
                assert [c["id"] for c in message["tool_calls"]] == [f"{c['id']}-again{k}" for c in want[-1]["tool_calls"]]
        stats = server.stats
    assert stats["replay_turns"] == 5 and stats["replay_past_end"] == 4


def test_replay_picks_a_trajectory_by_hash_when_no_query_matches(tmp_path):
    path = replay_file(tmp_path)
    picks = {}
    for seed in range(6):
        with SimServer({"replay": str(path), "seed": seed}, []) as server:
            first = replay_conversation(server, RECORDS[0], query="something nobody recorded")
            again = replay_conversation(server, RECORDS[0], query="something nobody recorded")
        assert first == again, "the same conversation, the same trajectory"
        picks[seed] = first[0][0]
    firsts = [next(m for m in r["trajectory"] if m["role"] == "assistant") for r in RECORDS]
    assert all(p in firsts for p in picks.values()) and len({json.dumps(p) for p in picks.values()}) == 2


def test_replay_streams_the_recorded_message(tmp_path):
    path = replay_file(tmp_path)
    record = RECORDS[1]
    cut = [i for i, m in enumerate(record["trajectory"]) if m["role"] == "assistant"][1]
    with SimServer({"replay": str(path)}, []) as server:
        lines, _, _ = sse(server, {"model": "m", "messages": record["trajectory"][:cut], "stream": True})
    message, finish, _ = assemble([json.loads(line) for line in lines[:-1]])
    assert message == {"role": "assistant", **record["trajectory"][cut]} and finish == "tool_calls"


def test_replay_of_a_real_small_models_trajectories():
    folder = REAL
    if not folder.is_dir():
        pytest.skip(f"no real local-model trajectories here ({folder} is absent)")
    path = folder / "qwen05-b15.jsonl.gz"
    with gzip.open(path, "rt") as f:
        records = [json.loads(line) for line in f if line.strip()]
    with SimServer({"replay": str(path)}, [HeuristicPolicy]) as server:
        for record in records:
            want = [m for m in record["trajectory"] if m["role"] == "assistant"]
            got = replay_conversation(server, record)
            assert [m for m, _ in got] == [{"content": None, **m} if "content" not in m else m for m in want]
            assert all(not m.get("tool_calls") for m, _ in got), "that model never sent a native call"
        assert server.stats["replay_turns"] == sum(
            sum(m["role"] == "assistant" for m in r["trajectory"]) for r in records)

"""The simulator (ecab.sim) over real HTTP with the real openai client: protocol, injected trouble, the
agent's policy (ecab.agents.sim_policy) and its replay across stateless requests, the policies' dispatch,
the CLI, and its throughput."""
import asyncio
import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import openai
import pytest

from ecab.agents.sim_policy import HeuristicPolicy
from ecab.env.tools import tool_schemas
from ecab.llm.retry import retry_after_seconds
from ecab.sim import SimConfig, SimServer
from ecab.sim.server import TokenBucket

ROOT = Path(__file__).resolve().parents[2]
QUERY = "I need a braided USB-C charger cable under $20 with at least 4 stars."
SYSTEM = {"role": "system", "content": "You are a personal shopping assistant."}
# Canned tool results, enough for the heuristic plan to reach its recommendation.
PROFILE = {"profile": {"product_requirements": {"Color": "Black"}}}
SEARCH = {"products": [{"product_id": "P1", "title": "Braided USB-C cable"},
                       {"product_id": "P2", "title": "USB-C cable"}], "total_found": 2}


def fake_result(name: str, args: dict) -> dict:
    if name == "get_user_profile":
        return PROFILE
    if name == "ask_user":
        return {"user_response": "I'm not sure."}
    if name == "search_products":
        return SEARCH
    if name == "get_product_details":
        return {"product": {"product_id": args["product_id"], "title": "Braided USB-C cable", "price": 9.99,
                            "details": {"Color": "Black"}, "features": []}}
    if name == "get_product_review_stats":
        return {"products": [{"product_id": p, "average_rating": 4.5, "rating_number": 100}
                             for p in args["product_ids"]]}
    return {"reviews": []}


def agent_sim(config=None) -> SimServer:
    """The simulator answering as the heuristic agent (the agent's reply policy)."""
    return SimServer(config, [HeuristicPolicy])


def client_for(sim, key="none"):
    return openai.AsyncOpenAI(base_url=sim.base_url, api_key=key, max_retries=0)


async def converse(client, max_turns=60, model="ecab-sim-heuristic"):
    """Drive a conversation like the episode loop does (first call executed, reminders on faults)."""
    messages = [SYSTEM, {"role": "user", "content": QUERY}]
    executed = []
    for _ in range(max_turns):
        response = await client.chat.completions.create(model=model, messages=messages, tools=tool_schemas())
        message = response.choices[0].message.to_dict()
        calls = message.get("tool_calls") or []
        if not calls:
            messages += [{"role": "assistant", "content": message["content"]},
                         {"role": "user", "content": "Do not answer directly."}]
            continue
        first = calls[0]
        messages.append({"role": "assistant", "content": message["content"], "tool_calls": [first]})
        name, raw = first["function"]["name"], first["function"]["arguments"]
        try:
            args = json.loads(raw)
            result = fake_result(name, args) if name != "search_catalog" else {"error": f"Unknown tool: {name}"}
        except json.JSONDecodeError as exc:
            args, result = None, {"error": f"Invalid tool arguments JSON: {exc}"}
        messages.append({"role": "tool", "tool_call_id": first["id"], "content": json.dumps(result)})
        if "error" not in result:
            executed.append((name, args))
        if name == "recommend_product":
            return executed, response
    raise AssertionError("the conversation did not end")


def test_models_endpoint_and_a_first_completion():
    with agent_sim() as sim:
        with urllib.request.urlopen(sim.base_url + "/models") as r:
            models = json.load(r)
        assert [m["id"] for m in models["data"]] == ["ecab-sim-heuristic"]

        async def first():
            return await client_for(sim).chat.completions.create(
                model="x", messages=[SYSTEM, {"role": "user", "content": QUERY}], tools=tool_schemas())
        response = asyncio.run(first())
    message = response.choices[0].message
    assert response.choices[0].finish_reason == "tool_calls" and len(message.tool_calls) == 1
    assert message.tool_calls[0].function.name == "get_user_profile"
    assert message.to_dict()["reasoning_content"]
    usage = response.usage
    assert usage.prompt_tokens > 500 and usage.completion_tokens > usage.completion_tokens_details.reasoning_tokens > 0


def test_a_whole_conversation_follows_the_heuristic_plan_and_faults_do_not_change_it():
    with agent_sim() as clean:
        reference, _ = asyncio.run(converse(client_for(clean)))
    assert reference[0] == ("get_user_profile", {}) and reference[-1][0] == "recommend_product"
    assert reference[-1][1]["product_id"] == "P1"
    faults = {"invalid_json": 0.1, "two_calls": 0.1, "no_tool_call": 0.1, "unknown_tool": 0.1}
    with agent_sim({"malformed": faults, "seed": 1}) as noisy:
        executed, _ = asyncio.run(converse(client_for(noisy)))
        stats = noisy.stats
    assert sum(stats[f"fault_{k}"] for k in faults) >= 3
    assert executed == reference


def drive(app, query: str, max_turns: int = 200) -> list:
    """One conversation straight through SimApp (as the episode loop runs it); the turns as (tool or 'text',
    arguments as sent, number of calls)."""
    messages = [SYSTEM, {"role": "user", "content": query}]
    turns = []
    for _ in range(max_turns):
        message, _ = app.policy_for({"messages": messages}).reply({"messages": messages})
        calls = message.get("tool_calls") or []
        if not calls:
            turns.append(("text", None, 0))
            messages += [{"role": "assistant", "content": message["content"]},
                         {"role": "user", "content": "Do not answer directly."}]
            continue
        first = calls[0]
        name, raw = first["function"]["name"], first["function"]["arguments"]
        turns.append((name, raw, len(calls)))
        messages.append({"role": "assistant", "content": message["content"], "tool_calls": [first]})
        try:
            result = fake_result(name, json.loads(raw)) if name != "search_catalog" else {"error": "Unknown tool"}
        except json.JSONDecodeError:
            result = {"error": "Invalid tool arguments JSON"}
        messages.append({"role": "tool", "tool_call_id": first["id"], "content": json.dumps(result)})
        if name == "recommend_product":
            return turns
    raise AssertionError("the conversation did not end")


def test_faults_are_drawn_per_conversation_and_step_and_never_end_a_conversation():
    """The same conversation meets the same faults whatever else the server handled before (so a run is
    reproducible at any concurrency), and no fault makes two text-only turns in a row (the episode loop
    would end the episode there)."""
    from ecab.sim.server import SimApp

    faults = {"invalid_json": 0.1, "two_calls": 0.1, "no_tool_call": 0.6, "unknown_tool": 0.1}
    fresh = drive(SimApp(SimConfig.from_any({"malformed": faults}), [HeuristicPolicy]), QUERY)
    busy = SimApp(SimConfig.from_any({"malformed": faults}), [HeuristicPolicy])
    for i in range(3):                                  # other conversations first, in another order
        drive(busy, f"I need a phone case number {i}.")
    assert drive(busy, QUERY) == fresh
    kinds = [turn[0] for turn in fresh]
    assert kinds.count("text") >= 3 and kinds[-1] == "recommend_product"
    assert not any(a == b == "text" for a, b in zip(kinds, kinds[1:])), kinds
    other_seed = drive(SimApp(SimConfig.from_any({"malformed": faults, "seed": 5}), [HeuristicPolicy]), QUERY)
    assert other_seed != fresh, "the seed still changes the draws"


def test_the_policy_resumes_live_plans_and_replays_on_a_miss():
    with agent_sim() as sim:
        asyncio.run(converse(client_for(sim)))
        [policy] = sim.app.policies
        assert policy.replays == 1 and policy.resumes > 10          # one conversation, one plan
        assert sim.stats["policy_replays"] == 1                     # the policy's counters are the server's
    # A fresh policy (a restarted server) given a mid-conversation request replays to the same next call.
    messages = [SYSTEM, {"role": "user", "content": QUERY}]
    live = HeuristicPolicy()
    for i in range(4):
        reply, state = live.next_reply(messages)
        call = {"id": f"c{i}", "type": "function",
                "function": {"name": reply.call[0], "arguments": json.dumps(reply.call[1])}}
        emitted = {"role": "assistant", "content": "", "tool_calls": [call]}
        live.remember(state, emitted)
        messages += [emitted, {"role": "tool", "tool_call_id": f"c{i}",
                               "content": json.dumps(fake_result(*reply.call))}]
    resumed, _ = live.next_reply(messages)
    replayed, _ = HeuristicPolicy().next_reply(messages)
    assert resumed.call == replayed.call and live.resumes == 4 and live.replays == 1


def test_429_carries_retry_after_and_the_rpm_bucket_refills():
    with agent_sim({"rate_429": 1.0, "retry_after_s": 0.25}) as sim:
        async def once():
            await client_for(sim).chat.completions.create(model="m", messages=[SYSTEM])
        with pytest.raises(openai.RateLimitError) as info:
            asyncio.run(once())
    assert retry_after_seconds(info.value) == 0.25
    # The bucket's arithmetic on a fake clock: one request per second, no burst beyond that, refilled
    # continuously.
    now = [100.0]
    bucket = TokenBucket(60, clock=lambda: now[0])
    assert bucket.take(1) == 0.0
    now[0] += 0.25
    assert bucket.take(1) == pytest.approx(0.75)      # a quarter of a token back: wait the other three
    now[0] += 1.0
    assert bucket.take(1) == 0.0 and bucket.take(1) == pytest.approx(1.0)   # refilled to one, never more
    # Through the server, on the real clock: 6 a minute, so the second request of two comes well inside the
    # 10 s refill (however loaded the machine) and is refused with the wait the bucket computed.
    with agent_sim({"rpm": 6}) as sim:
        async def twice():
            client = client_for(sim)
            await client.chat.completions.create(model="m", messages=[SYSTEM, {"role": "user", "content": QUERY}])
            await client.chat.completions.create(model="m", messages=[SYSTEM, {"role": "user", "content": QUERY}])
        with pytest.raises(openai.RateLimitError) as info:
            asyncio.run(twice())
        assert 0 < retry_after_seconds(info.value) <= 10.0 and sim.stats["429_rpm"] == 1


def test_errors_a_client_must_not_retry():
    with agent_sim({"api_key": "right", "models": ["only-this"]}) as sim:
        async def call(key, model):
            await client_for(sim, key).chat.completions.create(model=model, messages=[SYSTEM])
        with pytest.raises(openai.AuthenticationError):
            asyncio.run(call("wrong", "only-this"))
        with pytest.raises(openai.NotFoundError):
            asyncio.run(call("right", "another"))
        assert sim.stats["401"] == 1 and sim.stats["404"] == 1


def test_bad_sim_config_names_the_key():
    with pytest.raises(ValueError, match="unknown key"):
        SimConfig.from_any({"rate_492": 0.1})
    with pytest.raises(ValueError, match="unknown fault"):
        SimConfig.from_any({"malformed": {"garbled": 0.1}})
    with pytest.raises(ValueError, match=r"model\.sim\.rate_5xx must be a number in \[0, 1\], got 1\.5"):
        SimConfig.from_any({"rate_5xx": 1.5})
    with pytest.raises(ValueError, match="model.sim.malformed: the fault rates add up to more than 1"):
        SimConfig.from_any({"malformed": {"invalid_json": 0.6, "no_tool_call": 0.6}})


def test_requests_go_to_the_first_policy_that_claims_them_and_unclaimed_ones_are_refused():
    """The simulator knows no stage's prompts: each stage's policy claims its own requests (here the judge's
    and the verbalizer's, by their system prompts' markers), and a request nobody claims is a 400."""
    from ecab.construct.llm_verbalizer import SYSTEM_PROMPT as VERBALIZER_PROMPT
    from ecab.construct.sim_policy import VerbalizerPolicy
    from ecab.judge.llm import JUDGE_SYSTEM_PROMPT
    from ecab.judge.sim_policy import JudgePolicy

    judge = [{"role": "system", "content": JUDGE_SYSTEM_PROMPT}, {"role": "user", "content": "=== RUBRICS ==="}]
    verbalizer = [{"role": "system", "content": VERBALIZER_PROMPT},
                  {"role": "user", "content": "=== TEMPLATE QUERY ===\nI need a kettle."}]
    with SimServer({}, [JudgePolicy, VerbalizerPolicy]) as sim:
        async def ask(messages):
            response = await client_for(sim).chat.completions.create(model="m", messages=messages)
            return response.choices[0].message.content
        assert json.loads(asyncio.run(ask(judge))) == {"results": []}
        assert asyncio.run(ask(verbalizer)).startswith("I'm shopping for a kettle.")
        with pytest.raises(openai.BadRequestError, match="no reply policy"):
            asyncio.run(ask([SYSTEM, {"role": "user", "content": QUERY}]))
        assert sim.stats["400"] == 1


def test_cli_prints_its_url_and_serves():
    proc = subprocess.Popen([sys.executable, "-m", "ecab.sim", "--port", "0", "--latency-ms", "1"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        with urllib.request.urlopen(url + "/models", timeout=10) as r:
            assert json.load(r)["data"][0]["id"] == "ecab-sim-heuristic"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert proc.returncode == 0 and '"requests"' in proc.stderr.read()
    bad = subprocess.run([sys.executable, "-m", "ecab.sim", "--rate-429", "2"], cwd=ROOT, capture_output=True,
                         text=True, timeout=60)
    assert bad.returncode == 2 and "--rate-429 must be a rate in [0, 1]" in bad.stderr


def test_throughput(capsys):
    """Many concurrent short conversations: report requests per second (a floor, not a benchmark)."""
    with agent_sim() as sim:
        async def load():
            client = client_for(sim)
            started = time.perf_counter()
            await asyncio.gather(*(converse(client) for _ in range(16)))
            return time.perf_counter() - started
        elapsed = asyncio.run(load())
        requests = sim.stats["requests"]
    rate = requests / elapsed
    with capsys.disabled():
        print(f"\nsim throughput: {requests} requests in {elapsed:.2f} s = {rate:.0f} requests/s "
              f"(client and server in one process)")
    assert requests >= 16 * 10   # the rate is printed, not asserted: on a loaded machine it says nothing


def test_the_simulator_in_its_own_process_serves_and_reports_its_stats_at_exit():
    from ecab.sim.process import SimProcess

    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "a kettle please"}],
                       "tools": tool_schemas()}).encode()
    with SimProcess({"latency_ms": 1}) as sim:
        for _ in range(3):
            request = urllib.request.Request(f"{sim.base_url}/chat/completions", data=body,
                                             headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=30) as reply:
                assert json.loads(reply.read())["choices"]
    assert sim.stats["ok"] == 3 and sum(sim.stats["admitted_per_ds"].values()) == 3


def test_a_simulator_process_that_cannot_start_says_why():
    from ecab.sim.process import SimProcess

    with pytest.raises(RuntimeError, match="the simulator process did not start"):
        SimProcess({}, port=-5).start()

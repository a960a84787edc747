"""The OpenAI-compatible agent over real HTTP: the real openai client against the simulator (ecab.sim),
the real episode loop, tool box and a real LanceDB catalog of the released samples' targets.

The simulator's model is the heuristic agent, so an episode through the LLM path must end exactly where
the heuristic agent ends when called directly, whatever 429s, 5xx and malformed outputs happen on the way.
"""
import asyncio
import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import openai
import pytest
from conftest import targets_catalog_of

from ecab.env.agent_protocol import EndpointRefused
from ecab.agents.heuristic import HeuristicAgent
from ecab.agents.openai_agent import OpenAIAgent
from ecab.agents.sim_policy import HeuristicPolicy
from ecab.config import ConfigError
from ecab.env.episode import MULTI_CALL_ERROR, NO_TOOL_REMINDER, EpisodeSettings, run_episode
from ecab.env.tools import ToolBox
from ecab.llm import ChatClient, ModelSettings, resolve_api_key
from ecab.llm.limits import AdaptiveLimiter
from ecab.llm.settings import model_settings
from ecab.llm.retry import retry_after_seconds, retrying
from ecab.runs import RunFolder
from ecab.schema import read_tasks
from ecab.sim import SimServer

ROOT = Path(__file__).resolve().parents[2]
FAKE_KEY = "sk-ecab-test-DO-NOT-LEAK-7f3a9c"


def model_cfg(**overrides):
    cfg = {"name": "sim", "kind": "openai", "model_id": "ecab-sim-heuristic", "api_key_env": None,
           "price_per_million": {"input": 1.0, "output": 4.0}, "max_attempts": 8, "max_retry_wait_s": 1.0,
           "backoff_base_s": 0.01, "timeout_s": 30, "concurrency": 64}
    cfg.update(overrides)
    return cfg


def agent_sim(config=None) -> SimServer:
    """The simulator answering as the heuristic agent (the agent's reply policy)."""
    return SimServer(config, [HeuristicPolicy])


def agent_for(cfg, url=None, api_key="k", limiter=None) -> OpenAIAgent:
    settings = model_settings(cfg)
    return OpenAIAgent(ChatClient(settings.replace(base_url=url) if url else settings, api_key=api_key,
                                  limiter=limiter))


@pytest.fixture(scope="module")
def tasks(released_samples):
    return read_tasks(released_samples)[:4]


@pytest.fixture(scope="module")
def catalog(tmp_path_factory, embedder, released_samples):
    return targets_catalog_of(tmp_path_factory, released_samples, embedder, distractors=30)


@pytest.fixture(scope="module")
def heuristic_runs(tasks, catalog):
    """The reference: the heuristic agent called directly."""
    async def go():
        return await asyncio.gather(*(run_episode(t, HeuristicAgent(t, 0), ToolBox(catalog, t), EpisodeSettings())
                                      for t in tasks))
    return {t.id: traj for t, traj in zip(tasks, asyncio.run(go()))}


def run_llm(tasks, catalog, url, cfg=None, api_key=None, settings=None):
    """The episodes through the LLM path as a runner runs them: one chat client with the endpoint's adaptive
    limiter, shared by every episode's agent."""
    model = model_settings(cfg or model_cfg()).replace(base_url=url)

    async def go():
        chat = ChatClient(model, api_key=api_key, limiter=AdaptiveLimiter())
        return await asyncio.gather(*(run_episode(t, OpenAIAgent(chat), ToolBox(catalog, t),
                                                  settings or EpisodeSettings(), unit={"task_id": t.id})
                                      for t in tasks))
    return asyncio.run(go())


@contextlib.asynccontextmanager
async def stub_endpoint(handle):
    """A chat-completions endpoint on 127.0.0.1 answering with `handle`; yields its base URL."""
    from aiohttp import web

    app = web.Application()
    app.router.add_post("/v1/chat/completions", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}/v1"
    finally:
        await runner.cleanup()


def executed_calls(traj):
    return [(s.tool, json.dumps(s.arguments, sort_keys=True)) for s in traj.steps if s.tool and not s.is_error]


def test_episode_through_the_llm_path_matches_the_heuristic(tasks, catalog, heuristic_runs):
    with agent_sim({"latency_ms": 1}) as sim:
        runs = run_llm(tasks, catalog, sim.base_url)
        stats = sim.stats
    for traj in runs:
        ref = heuristic_runs[traj.id]
        assert traj.termination == "recommended" and traj.predicted_product_id == ref.predicted_product_id
        assert executed_calls(traj) == executed_calls(ref)
        assert traj.model == "sim" and traj.usage["retries"] == 0
        assert traj.usage["input_tokens"] > 1000 and traj.usage["output_tokens"] > 0
        assert traj.usage["reasoning_tokens"] > 0
        expected_cost = (traj.usage["input_tokens"] * 1.0 + traj.usage["output_tokens"] * 4.0) / 1e6
        assert traj.usage["cost_usd"] == pytest.approx(expected_cost, rel=1e-4)
        assert all(s.input_tokens > 0 and s.output_tokens > 0 for s in traj.steps)
        reasoning = [e for e in traj.reasoning_trace if e["type"] == "reasoning"]
        assert len(reasoning) == len(traj.steps) and reasoning[0]["source"] == "reasoning_content"
        assert reasoning[0]["raw_reasoning"] and reasoning[0]["step"] == 1
    assert stats["ok"] == sum(len(t.steps) for t in runs) and stats["429_random"] == 0


@pytest.mark.slow
def test_429_storm_every_episode_completes_and_retries_are_counted(tasks, catalog, heuristic_runs):
    with agent_sim({"rate_429": 0.3, "retry_after_s": 0.02, "seed": 3}) as sim:
        runs = run_llm(tasks, catalog, sim.base_url, model_cfg(max_attempts=12))
        stats = sim.stats
    assert stats["429_random"] > 10
    total_retries = 0
    for traj in runs:
        assert traj.termination == "recommended", traj.error
        assert traj.predicted_product_id == heuristic_runs[traj.id].predicted_product_id
        retries = [e for e in traj.reasoning_trace if e["type"] == "retry"]
        assert traj.usage["retries"] == len(retries) == sum(s.retries for s in traj.steps)
        assert all(e["status"] == 429 and e["wait_s"] == pytest.approx(0.02, abs=0.002) for e in retries)
        total_retries += len(retries)
    assert total_retries == stats["429_random"]       # every 429 was retried once, and logged


def test_5xx_and_token_bucket_limits_are_retried(tasks, catalog, heuristic_runs):
    with agent_sim({"rate_5xx": 0.2, "rpm": 1200, "seed": 5}) as sim:
        runs = run_llm(tasks[:2], catalog, sim.base_url, model_cfg(max_attempts=12))
        stats = sim.stats
    assert stats["5xx"] > 0 and stats["429_rpm"] > 0   # the burst of concurrent calls drains the bucket
    for traj in runs:
        assert traj.termination == "recommended", (traj.error, [(e["status"], e["wait_s"]) for e in traj.reasoning_trace if e["type"] == "retry"][-14:])
        assert traj.predicted_product_id == heuristic_runs[traj.id].predicted_product_id
    statuses = {e["status"] for t in runs for e in t.reasoning_trace if e["type"] == "retry"}
    assert statuses & {500, 502, 503} and 429 in statuses


@pytest.mark.parametrize("fault, shows", [
    ("invalid_json", lambda t: any(s.error and s.error.startswith("Invalid tool arguments JSON") for s in t.steps)),
    ("two_calls", lambda t: any(s.extra_calls == 1 for s in t.steps)
     and any(m.get("content") == MULTI_CALL_ERROR for m in t.trajectory)),
    ("no_tool_call", lambda t: any(m.get("content") == NO_TOOL_REMINDER for m in t.trajectory)),
    ("unknown_tool", lambda t: any(s.error == "Unknown tool: search_catalog" for s in t.steps)),
])
def test_malformed_outputs_get_the_originals_error_results(fault, shows, tasks, catalog, heuristic_runs):
    with agent_sim({"malformed": {fault: 0.15}, "seed": 11}) as sim:
        runs = run_llm(tasks[:2], catalog, sim.base_url)
        stats = sim.stats
    assert stats[f"fault_{fault}"] > 0 and any(shows(t) for t in runs)
    for traj in runs:
        if traj.termination == "no_tool_call":   # two text-only turns in a row end an episode, as in the original
            assert fault == "no_tool_call"
            continue
        # After each error result the simulated model repeats its call: the plan and the answer are unchanged.
        assert traj.termination == "recommended"
        assert executed_calls(traj) == executed_calls(heuristic_runs[traj.id])
        assert traj.predicted_product_id == heuristic_runs[traj.id].predicted_product_id


def test_401_stops_the_episode_without_retries_and_the_key_stays_out(tasks, catalog):
    """A refused key is no episode's outcome (every episode would fail alike): EndpointRefused, which stops
    the run (tests/test_run_guards.py), not an agent_error record that a resume would never retry."""
    with agent_sim({"api_key": "the-right-key"}) as sim:
        with pytest.raises(EndpointRefused) as info:
            run_llm(tasks[:1], catalog, sim.base_url, api_key=FAKE_KEY)
        stats = sim.stats
    assert stats["401"] == 1 and stats["requests"] == 1             # no retry of a 401
    assert "authentication" in str(info.value) and "AuthenticationError 401" in str(info.value)
    assert FAKE_KEY not in str(info.value)                           # the server echoed it; we did not


def test_a_right_key_is_accepted(tasks, catalog):
    with agent_sim({"api_key": FAKE_KEY}) as sim:
        [traj] = run_llm(tasks[:1], catalog, sim.base_url, api_key=FAKE_KEY)
    assert traj.termination == "recommended"


def test_exhausted_retries_are_infra_error_and_their_retries_are_recorded(tasks, catalog):
    with agent_sim({"rate_5xx": 1.0}) as sim:
        [traj] = run_llm(tasks[:1], catalog, sim.base_url, model_cfg(max_attempts=3))
        stats = sim.stats
    assert traj.termination == "infra_error" and stats["5xx"] == 3
    assert "gave up after 3 attempt(s)" in traj.error
    retries = [e for e in traj.reasoning_trace if e["type"] == "retry"]
    assert traj.usage["retries"] == len(retries) == 2 and all(e["step"] == 1 and e["status"] >= 500 for e in retries)


def test_a_context_length_400_is_agent_error(tasks, catalog):
    with agent_sim({"context_limit_tokens": 50}) as sim:
        [traj] = run_llm(tasks[:1], catalog, sim.base_url)
        stats = sim.stats
    assert traj.termination == "agent_error" and "context length exceeded" in traj.error and stats["requests"] == 1


def test_an_unknown_model_is_endpoint_refused_without_retries(tasks, catalog):
    with agent_sim({"models": ["some-other-model"]}) as sim:
        with pytest.raises(EndpointRefused, match="not found at .*check model.model_id"):
            run_llm(tasks[:1], catalog, sim.base_url)
        stats = sim.stats
    assert stats["404"] == 1 and stats["requests"] == 1


def test_wall_clock_limit_ends_the_episode_as_infra_error(tasks, catalog):
    with agent_sim({"latency_ms": 200}) as sim:
        [traj] = run_llm(tasks[:1], catalog, sim.base_url, settings=EpisodeSettings(wall_clock_s=0.5))
    assert traj.termination == "infra_error" and "wall-clock" in traj.error


@pytest.mark.parametrize("http_client", ["aiohttp", "httpx"])
def test_both_http_clients_run_the_episode_the_heuristic_runs(http_client, tasks, catalog, heuristic_runs):
    with agent_sim({}) as sim:
        [traj] = run_llm(tasks[:1], catalog, sim.base_url, model_cfg(http_client=http_client))
    assert executed_calls(traj) == executed_calls(heuristic_runs[tasks[0].id])


def test_an_unknown_http_client_is_one_clear_error(tmp_path):
    with pytest.raises(ValueError, match="http_client must be one of aiohttp, httpx, got 'curl'"):
        model_settings(model_cfg(http_client="curl"))
    proc = subprocess.run([sys.executable, "-m", "ecab.run", "model=sim", "model.http_client=curl",
                           f"run.dir={tmp_path / 'runs'}"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "model.http_client must be one of aiohttp, httpx, got 'curl'" in proc.stderr
    assert not (tmp_path / "runs").exists()


def test_an_endpoint_that_refuses_connections_is_infra_error_naming_the_refusal(tasks, catalog):
    """The aiohttp transport reports a refused connection as a timeout; the error keeps the real cause."""
    import socket

    with socket.socket() as probe:          # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    [traj] = run_llm(tasks[:1], catalog, f"http://127.0.0.1:{port}/v1", model_cfg(max_attempts=2))
    assert traj.termination == "infra_error" and "gave up after 2 attempt(s)" in traj.error
    assert "connection refused: " in traj.error and str(port) in traj.error and "(is the server running?)" in traj.error
    assert "APITimeoutError" not in traj.error, "a refusal is not reported as a timeout"


def test_request_shape_follows_the_model_config():
    agent = agent_for(model_cfg(max_output_tokens=2048, reasoning_effort="medium",
                                extra_body={"reasoning": {"max_tokens": 2048}}))
    request = agent.build_request([{"role": "user", "content": "hi"}], [])
    assert request["max_completion_tokens"] == 2048 and request["reasoning_effort"] == "medium"
    assert request["parallel_tool_calls"] is False and request["temperature"] == 1.0
    assert request["extra_body"] == {"reasoning": {"max_tokens": 2048}}
    plain = agent_for(model_cfg(max_output_tokens=100, max_tokens_param="max_tokens", parallel_tool_calls=None,
                                temperature=None)).build_request([], [])
    assert plain["max_tokens"] == 100 and "parallel_tool_calls" not in plain and "temperature" not in plain


def test_the_request_on_the_wire_is_the_built_request_with_extra_body_merged():
    """post_chat_completion skips the SDK's transform; what reaches the endpoint over HTTP must still be
    exactly the request: every field, extra_body merged into the body, no client-side keys."""
    from aiohttp import web

    from ecab.llm.client import post_chat_completion

    seen: list[dict] = []
    completion = {"id": "c1", "object": "chat.completion", "created": 0, "model": "m",
                  "choices": [{"index": 0, "finish_reason": "stop",
                               "message": {"role": "assistant", "content": "ok"}}],
                  "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}

    async def handle(request):
        seen.append(await request.json())
        return web.json_response(completion)

    agent = agent_for(model_cfg(max_output_tokens=2048, reasoning_effort="medium",
                                extra_body={"reasoning": {"max_tokens": 2048}}))
    request = agent.build_request([{"role": "user", "content": "hi"}], [{"type": "function", "function": {
        "name": "f", "description": "d", "parameters": {"type": "object", "properties": {}}}}])

    async def scenario():
        async with stub_endpoint(handle) as url:
            client = openai.AsyncOpenAI(api_key="k", base_url=url, max_retries=0)
            try:
                return await post_chat_completion(client, request)
            finally:
                await client.close()

    response = asyncio.run(scenario())
    assert response["choices"][0]["message"]["content"] == "ok" and response["usage"]["total_tokens"] == 4
    expected = {k: v for k, v in request.items() if k not in ("timeout", "extra_body")}
    assert seen == [{**expected, "reasoning": {"max_tokens": 2048}}]


@pytest.mark.parametrize("name", ["gpt-5.4", "gpt-5", "gpt-5-mini", "claude-opus-4-6", "kimi-k2.6",
                                  "minimax-m2.7", "qwen3-30b-a3b", "sim"])
def test_the_papers_model_configs_load(name):
    from ecab.config import load_config
    cfg = load_config([f"model={name}"])
    settings = model_settings(cfg.model)
    assert cfg.model.kind == "openai" and cfg.model.temperature == 1.0 and settings.model_id
    assert settings.price_per_million["input"] > 0 and settings.price_per_million["output"] > 0
    assert (cfg.model.api_key_env is None) == (name == "sim")
    assert "api_key" not in cfg.model                                # names of variables only


def test_missing_key_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    gpt = ModelSettings(name="gpt-5", model_id="gpt-5", api_key_env="OPENAI_API_KEY")
    with pytest.raises(ConfigError, match="model=gpt-5 needs the environment variable OPENAI_API_KEY"):
        resolve_api_key(gpt)
    with pytest.raises(ConfigError, match="model=gpt-5 needs the environment variable OPENAI_API_KEY"):
        ChatClient(gpt)                                               # the client checks it too, once
    monkeypatch.setenv("OPENAI_API_KEY", "  sk-x ")
    assert resolve_api_key(gpt) == "sk-x"
    assert resolve_api_key(ModelSettings(name="sim", model_id="m", api_key_env=None)) is None
    with pytest.raises(ConfigError, match="keys do not belong in the config"):
        model_settings({"name": "x", "model_id": "x", "api_key_env": "K", "api_key": "sk-inline"})


@pytest.mark.slow
def test_missing_key_stops_the_run_before_any_work(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "OPENROUTER_API_KEY"}
    env["ECAB_CACHE_DIR"] = str(tmp_path / "cache")
    proc = subprocess.run([sys.executable, "-m", "ecab.run", "model=kimi-k2.6", f"run.dir={tmp_path / 'runs'}"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "model=kimi-k2.6 needs the environment variable OPENROUTER_API_KEY" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "cache").exists() and not (tmp_path / "runs").exists()   # nothing was built


def test_retry_policy_honours_retry_after_capped_else_backs_off():
    import httpx2
    import openai

    def rate_limited(headers):
        request = httpx2.Request("POST", "http://x/v1/chat/completions")
        return openai.RateLimitError("slow down", response=httpx2.Response(429, headers=headers, request=request),
                                     body=None)

    assert retry_after_seconds(rate_limited({"retry-after-ms": "250"})) == 0.25
    assert retry_after_seconds(rate_limited({"retry-after": "3"})) == 3.0
    assert retry_after_seconds(rate_limited({})) is None
    waits = []

    async def go(exc):
        calls = 0
        async for attempt in retrying(on_retry=lambda e, w, n: waits.append(w), max_attempts=3, max_wait=0.05,
                                      backoff_base=0.01):
            with attempt:
                calls += 1
                raise exc
        return calls

    with pytest.raises(openai.RateLimitError):
        asyncio.run(go(rate_limited({"retry-after": "600"})))
    assert waits == [0.05, 0.05]                                      # Retry-After 600 s capped at 0.05
    waits.clear()
    with pytest.raises(openai.RateLimitError):
        asyncio.run(go(rate_limited({})))
    assert len(waits) == 2 and all(0 <= w <= 0.05 for w in waits)    # jittered exponential backoff
    waits.clear()
    bad_request = openai.BadRequestError("bad", response=httpx2.Response(
        400, request=httpx2.Request("POST", "http://x")), body=None)
    with pytest.raises(openai.BadRequestError):
        asyncio.run(go(bad_request))
    assert waits == []                                                # a 400 is never retried


@pytest.mark.slow
def test_end_to_end_run_with_model_sim(tmp_path):
    """`python -m ecab.run model=sim`: builds a small catalog and benchmark, starts the simulator, runs,
    judges, reduces; the key the agent sent never reaches the run folder."""
    env = {**os.environ, "ECAB_CACHE_DIR": str(tmp_path / "cache"), "ECAB_TEST_SIM_KEY": FAKE_KEY}
    proc = subprocess.run([sys.executable, "-m", "ecab.run", "model=sim", "benchmark.limit=3", "catalog.products=200",
                           "benchmark.n_per_intent=1", "run.progress=false", f"run.dir={tmp_path / 'runs'}",
                           "run.name=e2e", "model.api_key_env=ECAB_TEST_SIM_KEY"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "simulator: http://127.0.0.1:" in proc.stdout and "HTTP Request" not in proc.stdout + proc.stderr
    folder = tmp_path / "runs" / "e2e"
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["evaluated_samples"] == 3
    trajectories = [t.to_dict() for t in RunFolder(folder).iter_trajectories()]
    assert len(trajectories) == 3 and all(t["usage"]["input_tokens"] > 0 for t in trajectories)
    assert all(t["termination"] in ("recommended", "invalid_recommendation", "no_tool_call") for t in trajectories)
    config = (folder / "config.yaml").read_text()
    assert "api_key_env: ECAB_TEST_SIM_KEY" in config and "base_url: null" in config
    for path in folder.rglob("*"):
        if path.is_file():
            assert FAKE_KEY.encode() not in path.read_bytes(), path
    assert FAKE_KEY not in proc.stdout + proc.stderr


def test_a_reply_without_choices_is_retried_and_the_next_one_is_used():
    """The reply is read as plain JSON (cast_to=object): a body that is not a completion is a transient
    error, retried, never a crash."""
    from aiohttp import web

    good = {"id": "c1", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}
    replies = [["not", "a", "completion"], {"choices": []}, {"choices": ["x"]}, good]

    async def handle(request):
        return web.json_response(replies.pop(0))

    async def scenario():
        async with stub_endpoint(handle) as url:
            return await agent_for(model_cfg(backoff_base_s=0.0), url).act([{"role": "user", "content": "hi"}], [])

    turn = asyncio.run(scenario())
    assert turn.message["content"] == "ok" and turn.retries == 3 and turn.input_tokens == 3
    assert [e["error"] for e in turn.reasoning_trace if e["type"] == "retry"] == \
        ["TransientResponseError: the endpoint returned no choices"] * 3

"""The endpoint check before a run (ecab/llm/endpoint_check.py, issue 31) over real HTTP on 127.0.0.1: the
simulator where it fits (its served model list, its key, its tool-calling policy), tiny aiohttp servers for what
the simulator does not do (a call written as text, no /models, vLLM's and llama-server's refusals), a closed
port for a refused connection; and the run-time watch for turns without tool calls."""
from __future__ import annotations

import asyncio
import socket

import httpx2
import openai
import pytest
from aiohttp import web

from ecab.agents.sim_policy import HeuristicPolicy
from ecab.env.agent_protocol import system_prompt
from ecab.env.tools import TOOL_ORDER, tool_schemas
from ecab.llm.endpoint_check import (PROBE_QUERY, EndpointCheckError, NoToolCallWatch, check_endpoint,
                                     detect_text_call, no_call_hint, text_call_hint, unreachable_message)
from ecab.llm.settings import ModelSettings
from ecab.sim import SimConfig, SimServer

SYSTEM = system_prompt(30)
HERMES = ('Thought: I will search.\n<tool_call>\n{"name": "search_products", "arguments": '
          '{"query": "red umbrella"}}\n</tool_call>')
DOUBLED = 'Thought: search first.\n{{"name": "search_products", "arguments": {{"query": "red umbrella"}}}}'
NATIVE = {"role": "assistant", "content": "",
          "tool_calls": [{"id": "call_1", "type": "function",
                          "function": {"name": "search_products", "arguments": '{"query": "red umbrella"}'}}]}


def settings(url: str, model_id: str = "qwen", **changes) -> ModelSettings:
    return ModelSettings(name="local", model_id=model_id, base_url=url, **changes)


def check(s: ModelSettings, **kwargs):
    return check_endpoint(s, tools=tool_schemas(), system=SYSTEM, **kwargs)


def completion(message: dict, finish: str = "stop") -> dict:
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "whatever",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


def text_reply(content: str, finish: str = "stop") -> dict:
    return completion({"role": "assistant", "content": content}, finish)


class Stub:
    """A tiny OpenAI-compatible server: /v1/models answers `models` (an int: that status), chat answers `chat`
    (a completion, or (status, error message)); it records the chat request bodies."""

    def __init__(self, chat, models=404):
        self.chat, self.models = chat, models
        self.bodies: list[dict] = []
        self.model_requests = 0

    async def list_models(self, request):
        self.model_requests += 1
        if self.models == "hang":
            await asyncio.Event().wait()
        if isinstance(self.models, int):
            return web.json_response({"error": {"message": "Not Found", "type": "not_found"}}, status=self.models)
        return web.json_response(self.models)

    async def chat_completions(self, request):
        self.bodies.append(await request.json())
        if isinstance(self.chat, tuple):
            status, message = self.chat
            return web.json_response({"error": {"message": message, "type": "error", "code": status}}, status=status)
        return web.json_response(self.chat)


async def _served(stub: Stub, run):
    app = web.Application()
    app.router.add_get("/v1/models", stub.list_models)
    app.router.add_post("/v1/chat/completions", stub.chat_completions)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        return await asyncio.to_thread(run, f"http://127.0.0.1:{runner.addresses[0][1]}/v1")
    finally:
        await runner.cleanup()


def against(stub: Stub, make_settings=settings, **kwargs):
    """check_endpoint (blocking, on a thread) against `stub`; the report, or the EndpointCheckError raised."""
    def run(url):
        try:
            return check(make_settings(url), **kwargs)
        except EndpointCheckError as exc:
            return exc
    return asyncio.run(_served(stub, run))


def closed_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


# ------------------------------------------------------------------------------------- with the simulator

def test_the_simulator_serving_our_model_passes_with_native_tool_calls():
    with SimServer(SimConfig(models=["qwen"]), [HeuristicPolicy]) as sim:
        report = check(settings(sim.base_url))
        assert sim.stats["ok"] == 1          # exactly one probe turn
    assert report.models == ["qwen"] and report.model_listed is True
    assert report.native_tool_calls is True and report.text_format is None
    assert report.hint is None and report.ok
    assert report.lines()[0] == f"endpoint {sim.base_url}: reachable; model 'qwen' is served (1 model(s) listed)"
    assert "tool calls: native (the probe turn made one)" in report.lines()


def test_a_model_id_the_server_does_not_list_names_the_served_ids_and_the_fix():
    served = ["llama-3.1-8b", "qwen2.5-7b-instruct", "mistral-7b", "phi-4", "gemma-2-9b", "qwen3-8b", "olmo-2"]
    with SimServer(SimConfig(models=served), [HeuristicPolicy]) as sim:
        with pytest.raises(EndpointCheckError) as caught:
            check(settings(sim.base_url, model_id="qwen2.5-7b-instuct"))
        assert sim.stats["requests"] == 0    # refused before any probe
    message = str(caught.value)
    assert message.startswith(f"{sim.base_url} does not serve model 'qwen2.5-7b-instuct'; it serves: "
                              "qwen2.5-7b-instruct, ")
    assert "(and 2 more)" in message
    assert message.endswith("set model.model_id=<one of them>, e.g. model.model_id=qwen2.5-7b-instruct")


def test_a_single_served_model_is_the_fix_itself():
    with SimServer(SimConfig(models=["Qwen/Qwen3-8B"]), [HeuristicPolicy]) as sim:
        with pytest.raises(EndpointCheckError, match=r"it serves: Qwen/Qwen3-8B: set model.model_id=Qwen/Qwen3-8B$"):
            check(settings(sim.base_url, model_id="qwen"))


def test_a_key_the_endpoint_refuses_names_its_variable_never_the_key(monkeypatch):
    monkeypatch.setenv("ECAB_TEST_ENDPOINT_KEY", "sk-wrong-1234567890")
    with SimServer(SimConfig(api_key="sk-right-0987654321"), [HeuristicPolicy]) as sim:
        with pytest.raises(EndpointCheckError) as caught:
            check(settings(sim.base_url, model_id="ecab-sim-heuristic", api_key_env="ECAB_TEST_ENDPOINT_KEY"))
    message = str(caught.value)
    assert "ECAB_TEST_ENDPOINT_KEY" in message and "401" in message
    assert "sk-wrong-1234567890" not in message and "sk-right" not in message


def test_probe_false_checks_reachability_and_the_model_only():
    with SimServer(SimConfig(models=["qwen"]), [HeuristicPolicy]) as sim:
        report = check_endpoint(settings(sim.base_url), probe=False)
        assert sim.stats["requests"] == 0
    assert report.model_listed is True and report.native_tool_calls is None and not report.probed
    assert report.lines() == [f"endpoint {sim.base_url}: reachable; model 'qwen' is served (1 model(s) listed)"]


def test_the_probe_needs_the_tool_schemas():
    with pytest.raises(ValueError, match="tool schemas"):
        check_endpoint(settings("http://127.0.0.1:9/v1"))


# ----------------------------------------------------------------------------------------- unreachable

def test_a_refused_connection_is_one_clear_line():
    port = closed_port()
    url = f"http://127.0.0.1:{port}/v1"
    with pytest.raises(EndpointCheckError) as caught:
        check(settings(url))
    assert str(caught.value) == f"connection refused at {url}: is the server running? (check model.base_url)"


def test_a_server_that_does_not_answer_in_time_is_named_as_such():
    result = against(Stub(text_reply("hi"), models="hang"), reach_timeout_s=0.3)
    assert isinstance(result, EndpointCheckError)
    assert "within 0.3 s: is the server up and model.base_url right?" in str(result)
    assert "APITimeoutError" not in str(result)


def test_a_host_that_does_not_resolve_is_named_as_such():
    url = "http://no-such-host.invalid/v1"
    cause = socket.gaierror(-2, "Name or service not known")
    exc = openai.APIConnectionError(request=httpx2.Request("GET", url + "/models"))
    exc.__cause__ = cause
    assert unreachable_message(exc, url, 10) == \
        f"cannot resolve the host of {url} (Name or service not known): check model.base_url"


def test_401_on_models_names_the_key_variable(monkeypatch):
    monkeypatch.setenv("ECAB_TEST_ENDPOINT_KEY", "sk-secret-abcdef")
    result = against(Stub(text_reply("hi"), models=401),
                     lambda url: settings(url, api_key_env="ECAB_TEST_ENDPOINT_KEY"))
    assert isinstance(result, EndpointCheckError)
    assert "refused the API key (HTTP 401): check the key in the environment variable ECAB_TEST_ENDPOINT_KEY" \
        in str(result)
    assert "sk-secret-abcdef" not in str(result)


# ------------------------------------------------------------------------------------------- the probe

def test_a_call_written_as_hermes_text_gets_the_hint_and_the_probe_is_the_runs_request():
    stub = Stub(text_reply(HERMES), models=404)
    result = against(stub, lambda url: settings(url, extra_body={"top_k": 20}))
    assert result.models is None and result.model_listed is None
    assert result.native_tool_calls is False and result.text_format == "hermes"
    assert result.hint == ("the endpoint answered with a tool call written as text (hermes format), not a native "
                           "tool call: set model.tool_call_format=hermes, or start llama-server with --jinja / "
                           "vLLM with --enable-auto-tool-choice --tool-call-parser hermes")
    assert "the model id is not checked: the server has no /models (HTTP 404)" in result.lines()
    assert result.lines()[-1] == f"hint: {result.hint}"
    (body,) = stub.bodies
    assert [t["function"]["name"] for t in body["tools"]] == list(TOOL_ORDER) and len(body["tools"]) == 10
    assert body["messages"] == [{"role": "system", "content": SYSTEM}, {"role": "user", "content": PROBE_QUERY}]
    assert body["model"] == "qwen" and body["tool_choice"] == "auto"
    assert body["max_completion_tokens"] == 256 and body["top_k"] == 20


def test_a_hermes_call_is_fine_when_the_config_says_hermes():
    result = against(Stub(text_reply(HERMES)), lambda url: settings(url, tool_call_format="hermes"))
    assert result.text_format == "hermes" and result.hint is None and result.ok


def test_a_json_call_with_doubled_braces_is_detected():
    result = against(Stub(text_reply(DOUBLED)))
    assert result.text_format == "json"
    assert result.hint == text_call_hint("json", settings("x")) and "model.tool_call_format=json" in result.hint
    # configured for another text form: the hint names the one the model writes
    result = against(Stub(text_reply(DOUBLED)), lambda url: settings(url, tool_call_format="hermes"))
    assert result.text_format == "json" and "set model.tool_call_format=json" in result.hint


def test_no_call_at_all_suggests_tool_choice_required_and_the_server_flags():
    result = against(Stub(text_reply("A red umbrella for $15 would suit you.")))
    assert result.native_tool_calls is False and result.text_format is None
    assert result.hint == no_call_hint(settings("x"))
    assert "try model.tool_choice=required" in result.hint and "--jinja" in result.hint
    assert "tool calls: none in the probe reply: 'A red umbrella for $15 would suit you.'" in result.lines()
    # already required, with max_tokens as the output limit's name: sent so, and the hint says so
    stub = Stub(text_reply("No."))
    result = against(stub, lambda url: settings(url, tool_choice="required", max_tokens_param="max_tokens"))
    assert stub.bodies[0]["tool_choice"] == "required" and stub.bodies[0]["max_tokens"] == 256
    assert "even with model.tool_choice=required" in result.hint


def test_a_server_that_lists_no_models_is_not_an_error():
    result = against(Stub(completion(NATIVE), models={"object": "list", "data": []}))
    assert result.models is None and result.model_listed is None
    assert result.native_tool_calls is True and result.ok
    assert "the server lists no models: the model id is not checked" in result.lines()


def test_vllm_without_auto_tool_choice_is_an_error_with_the_flags():
    message = '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'
    result = against(Stub((400, message), models={"data": [{"id": "qwen"}]}))
    assert isinstance(result, EndpointCheckError)
    assert str(result).startswith("the probe turn failed: model local (qwen): request failed: BadRequestError 400")
    assert str(result).endswith("; hint: start vLLM with --enable-auto-tool-choice --tool-call-parser hermes (or "
                                "your model's parser), or try model.tool_choice=required")


def test_llama_server_without_jinja_is_an_error_after_one_attempt():
    stub = Stub((500, "tools param requires --jinja flag"))
    result = against(stub)
    assert isinstance(result, EndpointCheckError)
    assert "hint: start llama-server with --jinja" in str(result)
    assert len(stub.bodies) == 1          # the probe does not retry


def test_a_probe_without_an_answer_proves_nothing():
    stub = Stub((503, "Loading model"))
    result = against(stub)
    assert not isinstance(result, EndpointCheckError)
    assert result.hint is None and result.native_tool_calls is None and not result.probed
    assert any(line.startswith("tool calling is not checked: the probe turn got no answer") for line in result.lines())


def test_a_probe_cut_at_the_output_limit_before_any_call_is_inconclusive():
    result = against(Stub(text_reply("<think>The shopper wants a red umbrella. Let me", finish="length")))
    assert result.hint is None and result.native_tool_calls is None
    assert "tool calling is not checked: the probe reply was cut at 256 output tokens before any tool call " \
           "(a thinking model?)" in result.lines()


def test_a_404_from_the_chat_endpoint_is_refused():
    result = against(Stub((404, "model not found")))
    assert isinstance(result, EndpointCheckError)
    assert "not found at" in str(result) and "model.model_id" in str(result)


# ------------------------------------------------------------------------------------ calls written as text

@pytest.mark.parametrize("text, expected", [
    (HERMES, ("hermes", {"name": "search_products", "arguments": {"query": "red umbrella"}})),
    ("<tool_call>{not json", ("hermes", None)),
    (DOUBLED, ("json", {"name": "search_products", "arguments": {"query": "red umbrella"}})),
    ('I will call {"name": "ask_user", "parameters": {"question": "Size?"}} now',
     ("json", {"name": "ask_user", "arguments": {"question": "Size?"}})),
    ('```json\n{"function": {"name": "get_user_profile", "arguments": "{}"}}\n```',
     ("json", {"name": "get_user_profile", "arguments": {}})),   # arguments as a string: read as the object
    ('Price: {"usd": 20}. Done.', (None, None)),
    ("", (None, None)),
])
def test_detect_text_call(text, expected):
    assert detect_text_call(text) == expected


def test_a_hermes_call_counts_as_json_when_json_is_configured():
    assert detect_text_call(HERMES, prefer="json")[0] == "json"


# ---------------------------------------------------------------------------------------- the run's watch

def test_the_watch_warns_once_after_the_first_turns_without_a_call():
    emitted = []
    watch = NoToolCallWatch(settings("x"), after=8, emit=emitted.append)
    results = [watch.turn(False) for _ in range(20)]
    assert results[:7] == [None] * 7 and all(r is None for r in results[8:])
    assert results[7] == f"warning: the first 8 agent turns of this run carried no tool call: {no_call_hint(settings('x'))}"
    assert emitted == [results[7]]


def test_the_watch_never_warns_in_a_run_where_calls_appear():
    watch = NoToolCallWatch(after=8)
    assert [watch.turn(False) for _ in range(7)] == [None] * 7
    assert watch.turn(True) is None
    assert all(watch.turn(False) is None for _ in range(100))


def test_the_watch_hint_follows_the_settings():
    watch = NoToolCallWatch(settings("x", tool_choice="required", tool_call_format="hermes", config_key="model"),
                            after=1)
    warning = watch.turn(False)
    assert "none written as text in hermes format either" in warning and "even with model.tool_choice=required" \
        in warning
    with pytest.raises(ValueError):
        NoToolCallWatch(after=0)


def test_a_base_url_without_v1_is_pointed_out():
    result = against(Stub(completion(NATIVE), models={"data": [{"id": "qwen"}]}),
                     lambda url: settings(url.removesuffix("/v1")))
    assert isinstance(result, EndpointCheckError)
    assert str(result).endswith("(does model.base_url need to end in /v1?)")

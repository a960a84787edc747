"""Streamed replies with an idle timeout (ecab/llm/streaming.py through ChatClient.complete), over real HTTP on
127.0.0.1 against a small SSE endpoint written here: the chunks assemble into the reply a non-streamed request
gets, a reply that keeps sending is never cut (neither by idle_timeout_s nor by timeout_s), a stall is a retried
timeout that names model.idle_timeout_s, and HTTP errors are classified as before."""
from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import warnings

import pytest

from ecab.llm import ChatClient, ModelSettings
from ecab.llm.client import REFUSED, UNAVAILABLE, ChatError
from ecab.llm.streaming import ChunkAssembler, stream_body

MESSAGES = [{"role": "user", "content": "find a red kettle"}]


def chunk(delta=None, finish=None, *, usage=None, choices=True):
    """One chat.completion.chunk event's JSON."""
    event = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    event["choices"] = [{"index": 0, "delta": delta or {}, "finish_reason": finish}] if choices else []
    if usage is not None:
        event["usage"] = usage
    return event


USAGE = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18,
         "completion_tokens_details": {"reasoning_tokens": 2}}
TOOL_CHUNKS = [
    chunk({"role": "assistant", "content": ""}),
    chunk({"reasoning_content": "The user wants "}),
    chunk({"reasoning_content": "a kettle."}),
    chunk({"content": "Let me "}),
    chunk({"content": "search."}),
    chunk({"tool_calls": [{"index": 0, "id": "call_a", "type": "function",
                           "function": {"name": "search_products", "arguments": ""}}]}),
    chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{\"query\": "}}]}),
    chunk({"tool_calls": [{"index": 0, "function": {"arguments": "\"red kettle\"}"}}]}),
    chunk({"tool_calls": [{"index": 1, "id": "call_b", "type": "function",
                           "function": {"name": "view_product", "arguments": "{\"product_id\""}}]}),
    chunk({"tool_calls": [{"index": 1, "function": {"arguments": ": \"P1\"}"}}]}),
    chunk({}, "tool_calls"),
    chunk(usage=USAGE, choices=False),
]


async def send_events(request, events, *, pause_s=0.0, stall_after=None, stall_s=0.0):
    """Stream `events` as SSE (then [DONE]); `pause_s` between events; a stall of `stall_s` after
    `stall_after` events (0: before the first)."""
    from aiohttp import web

    response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
    await response.prepare(request)
    for number, event in enumerate(events):
        if stall_after == number:
            await asyncio.sleep(stall_s)
        await response.write(f"data: {json.dumps(event)}\n\n".encode())
        if pause_s:
            await asyncio.sleep(pause_s)
    await response.write(b"data: [DONE]\n\n")
    await response.write_eof()
    return response


@contextlib.asynccontextmanager
async def sse_endpoint(handle):
    """A chat-completions endpoint on 127.0.0.1 (port 0) answering with `handle(request, n)`, n counting the
    requests from 1; yields (base URL, the JSON bodies received)."""
    from aiohttp import web

    bodies: list[dict] = []

    async def route(request):
        bodies.append(await request.json())
        return await handle(request, len(bodies))

    app = web.Application()
    app.router.add_post("/v1/chat/completions", route)
    # a stalled handler is cancelled when the client gives up, and shutdown does not wait for it
    runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=0.1)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}/v1", bodies
    finally:
        await runner.cleanup()


def settings(url, **changes):
    base = dict(name="local", model_id="m", base_url=url, stream=True, timeout_s=30.0, max_attempts=2,
                backoff_base_s=0.01, max_retry_wait_s=0.05, temperature=None)
    base.update(changes)
    return ModelSettings(**base)


def run(scenario):
    """Run `scenario()` in a fresh loop; fail on any unclosed session, connector or transport it leaves."""
    problems: list[str] = []

    async def main():
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: problems.append(context["message"]))
        return await scenario()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = asyncio.run(main())
        gc.collect()
    # asyncio.run closes its loop: an "unclosed event loop" collected here is another test's (the collector
    # finds whatever this worker left), never this scenario's
    problems += [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)
                 and not str(w.message).startswith("unclosed event loop")]
    assert not [p for p in problems if "nclosed" in p], problems
    return result


async def ask(model: ModelSettings, tools=None):
    chat = ChatClient(model, api_key="k")
    try:
        return await chat.complete(chat.request(MESSAGES, tools=tools))
    finally:
        await chat.aclose()


# ----------------------------------------------------------------------------------------------- (a) assembly

@pytest.mark.parametrize("http_client", ["aiohttp", "httpx"])
def test_content_reasoning_and_tool_calls_split_over_chunks_assemble_into_the_reply(http_client):
    async def handle(request, n):
        return await send_events(request, TOOL_CHUNKS)

    async def scenario():
        async with sse_endpoint(handle) as (url, bodies):
            reply = await ask(settings(url, http_client=http_client, price_per_million={"input": 1e6}),
                              tools=[{"type": "function", "function": {"name": "search_products", "parameters": {}}}])
            return reply, bodies

    reply, bodies = run(scenario)
    assert bodies[0]["stream"] is True and bodies[0]["stream_options"] == {"include_usage": True}
    assert bodies[0]["messages"] == MESSAGES and "timeout" not in bodies[0]
    assert reply.message == {
        "role": "assistant", "content": "Let me search.", "reasoning_content": "The user wants a kettle.",
        "tool_calls": [
            {"id": "call_a", "type": "function",
             "function": {"name": "search_products", "arguments": "{\"query\": \"red kettle\"}"}},
            {"id": "call_b", "type": "function",
             "function": {"name": "view_product", "arguments": "{\"product_id\": \"P1\"}"}}]}
    assert reply.data["choices"][0]["finish_reason"] == "tool_calls"
    assert reply.data["usage"] == USAGE and reply.data["id"] == "chatcmpl-1" and reply.data["model"] == "m"
    assert (reply.tokens.prompt, reply.tokens.completion, reply.tokens.reasoning) == (11, 7, 2)
    assert reply.cost_usd == 11.0     # the price table reads the streamed usage as it reads a non-streamed one
    assert reply.attempts == 1 and reply.first_chunk_s is not None and reply.latency_s >= reply.first_chunk_s


def test_a_stream_without_usage_leaves_the_tokens_at_zero_as_a_reply_without_usage_does(caplog):
    events = [chunk({"role": "assistant"}), chunk({"content": "ok"}), chunk({}, "stop")]

    async def handle(request, n):
        return await send_events(request, events)

    async def scenario():
        async with sse_endpoint(handle) as (url, _):
            return await ask(settings(url))

    reply = run(scenario)
    assert reply.content == "ok" and "usage" not in reply.data
    # no price table in these settings: the cost is unknown (None), not $0 (settings.py ModelSettings.cost_usd)
    assert (reply.tokens.prompt, reply.tokens.completion, reply.cost_usd) == (0, 0, None)
    assert "the streamed reply carried no usage" in caplog.text


# ------------------------------------------------------------------------------------- (b) a slow reply is not cut

@pytest.mark.parametrize("http_client", ["aiohttp", "httpx"])
def test_a_reply_that_keeps_sending_is_cut_by_neither_the_idle_nor_the_total_timeout(http_client):
    """Sixteen chunks 0.2 s apart: 3.2 s in all, against idle_timeout_s 2 and timeout_s 1 (the transport's timeout
    is per read on both transports, and lifted for a stream). Each gap is 1.8 s inside the idle bound, so a
    loaded machine's delays do not cut it."""
    pieces = [f"w{i} " for i in range(16)]

    async def handle(request, n):
        return await send_events(request, [chunk({"content": p}) for p in pieces] + [chunk({}, "stop")],
                                 pause_s=0.2)

    async def scenario():
        async with sse_endpoint(handle) as (url, bodies):
            return await ask(settings(url, http_client=http_client, timeout_s=1.0, idle_timeout_s=2.0)), bodies

    reply, bodies = run(scenario)
    assert reply.content == "".join(pieces) and reply.attempts == 1 and len(bodies) == 1


# ------------------------------------------------------------------------------------------- (c) a stall is retried

@pytest.mark.parametrize("blocking", [False, True], ids=["async", "blocking-twin"])
@pytest.mark.parametrize("stall_after", [0, 2], ids=["before-the-first-chunk", "between-chunks"])
def test_a_stalled_stream_is_a_retried_timeout_naming_idle_timeout_s(stall_after, blocking):
    """The async client and its blocking twin report a stall alike."""
    events = [chunk({"role": "assistant"}), chunk({"content": "half"}), chunk({"content": " done"}), chunk({}, "stop")]

    async def handle(request, n):
        return await send_events(request, events, stall_after=stall_after, stall_s=2.0)

    async def scenario():
        async with sse_endpoint(handle) as (url, bodies):
            with pytest.raises(ChatError) as caught:
                await (ask_blocking if blocking else ask)(settings(url, idle_timeout_s=0.5, max_attempts=2))
            return caught.value, bodies

    error, bodies = run(scenario)
    assert error.kind == UNAVAILABLE and error.attempts == 2 and len(bodies) == 2
    assert "no data for 0.5 s (model.idle_timeout_s)" in str(error)
    assert error.detail == "IdleTimeoutError: no data for 0.5 s (model.idle_timeout_s)"   # an APITimeoutError
    assert "gave up after 2 attempt(s)" in str(error)
    assert [e["error"] for e in error.retries] == [error.detail]


def test_without_idle_timeout_s_a_stall_is_bounded_by_timeout_s_and_says_so():
    async def handle(request, n):
        return await send_events(request, [chunk({"content": "x"}), chunk({}, "stop")], stall_after=0, stall_s=2.0)

    async def scenario():
        async with sse_endpoint(handle) as (url, _):
            with pytest.raises(ChatError) as caught:
                await ask(settings(url, timeout_s=0.4, max_attempts=1))
            return caught.value

    error = run(scenario)
    assert error.kind == UNAVAILABLE and error.attempts == 1
    assert "no data for 0.4 s (model.idle_timeout_s unset: model.timeout_s)" in str(error)


def test_a_stall_before_the_response_headers_is_bounded_too():
    """A server that sends nothing at all, not even its headers, until the reply is ready."""
    async def handle(request, n):
        if n == 1:
            await asyncio.sleep(2.0)
        return await send_events(request, [chunk({"content": "late"}), chunk({}, "stop")])

    async def scenario():
        async with sse_endpoint(handle) as (url, bodies):
            return await ask(settings(url, idle_timeout_s=0.5, max_attempts=2)), bodies

    reply, bodies = run(scenario)
    assert reply.content == "late" and reply.attempts == 2 and len(bodies) == 2
    assert "no data for 0.5 s" in reply.log.entries[0]["error"]


# ------------------------------------------------------------------------------ (d) HTTP errors classified as before

def test_a_429_with_retry_after_on_a_streamed_request_is_retried_as_before():
    from aiohttp import web

    async def handle(request, n):
        if n == 1:
            return web.json_response({"error": {"message": "slow down", "type": "rate_limit", "code": None}},
                                     status=429, headers={"Retry-After": "0.05"})
        return await send_events(request, [chunk({"content": "ok"}), chunk({}, "stop"),
                                           chunk(usage=USAGE, choices=False)])

    async def scenario():
        async with sse_endpoint(handle) as (url, bodies):
            return await ask(settings(url, max_attempts=3, max_retry_wait_s=1.0)), bodies

    reply, bodies = run(scenario)
    assert reply.content == "ok" and reply.attempts == 2 and len(bodies) == 2
    assert reply.log.entries[0]["status"] == 429 and reply.log.entries[0]["wait_s"] == 0.05
    assert reply.tokens.prompt == 11


@pytest.mark.parametrize("status, kind, attempts", [(500, UNAVAILABLE, 2), (401, REFUSED, 1), (404, REFUSED, 1)])
def test_other_http_errors_on_a_streamed_request_are_classified_as_before(status, kind, attempts):
    from aiohttp import web

    async def handle(request, n):
        return web.json_response({"error": {"message": f"status {status}"}}, status=status)

    async def scenario():
        async with sse_endpoint(handle) as (url, bodies):
            with pytest.raises(ChatError) as caught:
                await ask(settings(url))
            return caught.value, bodies

    error, bodies = run(scenario)
    assert (error.kind, error.attempts, len(bodies)) == (kind, attempts, attempts)
    assert f" {status}: " in error.detail


def test_a_server_error_event_inside_the_stream_is_retried():
    """OpenRouter reports a provider failure after the 200 as an error event in the stream."""
    async def handle(request, n):
        if n == 1:
            return await send_events(request, [chunk({"content": "par"}),
                                               {"error": {"code": 502, "message": "provider went away"}}])
        return await send_events(request, [chunk({"content": "whole"}), chunk({}, "stop")])

    async def scenario():
        async with sse_endpoint(handle) as (url, _):
            return await ask(settings(url))

    reply = run(scenario)
    assert reply.content == "whole" and reply.attempts == 2
    assert "provider went away" in reply.log.entries[0]["error"]


def test_a_server_that_ignores_stream_and_answers_with_json_is_read_as_such():
    from aiohttp import web

    async def handle(request, n):
        return web.json_response({"id": "c", "object": "chat.completion", "model": "m", "usage": USAGE,
                                  "choices": [{"index": 0, "finish_reason": "stop",
                                               "message": {"role": "assistant", "content": "plain"}}]})

    async def scenario():
        async with sse_endpoint(handle) as (url, _):
            return await ask(settings(url))

    reply = run(scenario)
    assert reply.content == "plain" and reply.attempts == 1 and reply.tokens.prompt == 11


# ------------------------------------------------------------------------------------------- the blocking twin

async def ask_blocking(model: ModelSettings):
    chat = ChatClient(model, api_key="k")
    try:
        return await asyncio.to_thread(chat.complete_blocking, chat.request(MESSAGES))
    finally:
        chat.close_blocking()


def test_the_blocking_twin_streams_too_and_a_steady_reply_is_not_cut():
    pieces = [f"w{i} " for i in range(14)]    # 2.8 s in all, 0.2 s apart: longer than either bound, gaps well inside

    async def handle(request, n):
        return await send_events(request, [chunk({"content": p}) for p in pieces] + [chunk({}, "stop"),
                                           chunk(usage=USAGE, choices=False)], pause_s=0.2)

    async def scenario():
        async with sse_endpoint(handle) as (url, bodies):
            return await ask_blocking(settings(url, timeout_s=1.0, idle_timeout_s=2.0)), bodies

    reply, bodies = run(scenario)
    assert bodies[0]["stream"] is True and reply.content == "".join(pieces) and reply.attempts == 1
    assert reply.tokens.prompt == 11 and reply.first_chunk_s is not None


# ------------------------------------------------------------------------------------- the assembler on its own

def test_the_assembler_takes_servers_that_repeat_names_or_number_nothing():
    assembler = ChunkAssembler()
    for event in [
        chunk({"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "function": {"name": "search", "arguments": "{\"q\""}}]}),
        chunk({"tool_calls": [{"function": {"name": "search", "arguments": ": 1}"}}]}),   # name repeated whole
        chunk({"tool_calls": [{"id": "c2", "function": {"name": "view", "arguments": "{}"}}]}),
        chunk({"reasoning_details": [{"type": "reasoning.text", "index": 0, "text": "a"}]}),
        chunk({"reasoning_details": [{"type": "reasoning.text", "index": 0, "text": "b", "signature": "s"}]}),
        chunk({}, "tool_calls"),
    ]:
        assembler.add(event)
    message = assembler.result()["choices"][0]["message"]
    assert message["content"] is None
    assert [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in message["tool_calls"]] == \
        [("c1", "search", "{\"q\": 1}"), ("c2", "view", "{}")]
    assert message["reasoning_details"] == [{"type": "reasoning.text", "index": 0, "text": "ab", "signature": "s"}]


def test_stream_options_set_in_extra_body_are_kept():
    body = stream_body({"model": "m", "stream_options": {"include_usage": False}})
    assert body["stream"] is True and body["stream_options"] == {"include_usage": False}

"""Streamed chat completions with an idle timeout (issue 31): what ecab/llm/client.py sends when a model's
settings say `stream: true`.

A slow local endpoint (a small model on llama.cpp) can take most of `timeout_s` for one turn; without a stream
the client cannot tell a server that is still writing from one that has hung, so one total bound has to cover
both. With a stream the bound is on silence instead: the wait for the first chunk (response headers included)
and for every next chunk is at most `idle_timeout_s` (default `timeout_s`); a reply that keeps sending chunks is
never cut, however long it takes. The transport's own read timeout is lifted for the streamed request (both the
aiohttp and the httpx transports apply it per read, never to the whole body), so this timer is the one bound on
the server's silence; connect, write and pool keep `timeout_s`.

A stall raises `IdleTimeoutError`, an `openai.APITimeoutError`: ecab/llm/retry.py retries it as it retries a
timeout and the chat client reports it as UNAVAILABLE when the attempts run out, with the message
"no data for N s (model.idle_timeout_s)". HTTP errors (429 with Retry-After, 5xx, 401, 404) are raised by the
SDK's `post` before the first chunk, exactly as for a non-streamed request. The chunks are parsed by the SDK's
own SSE decoder (`openai.AsyncStream`) and assembled by `ChunkAssembler` into the dict a non-streamed reply
gives, so nothing downstream knows the reply was streamed. A server that ignores `stream` and answers with one
JSON body (Content-Type application/json) is read as such (under the same idle bound). Without usage in the
stream (a server that ignores stream_options) the reply has none, as a non-streamed reply without usage: its
tokens and cost read 0 (`Streamed.usage_reported` says so; the chat client logs it once).
`stream_chat_completion_blocking` is the same for a blocking client, its idle bound the transport's read timeout.

Usage:

    streamed = await stream_chat_completion(client, body, idle_timeout_s=30.0, timeout_s=600.0,
                                            setting="model.idle_timeout_s")
    streamed.data            # {"choices": [{"message": {...}, "finish_reason": ...}], "usage": {...}, ...}
    streamed.first_chunk_s   # seconds from sending the request to the first chunk
"""
from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any, Awaitable, TypeVar

import httpx2
import openai

from ecab.llm.retry import TransientResponseError, status_of

__all__ = ["ChunkAssembler", "IdleTimeoutError", "Streamed", "stream_body", "stream_chat_completion",
           "stream_chat_completion_blocking", "stream_options"]

T = TypeVar("T")
STRING_FIELDS = ("content", "reasoning_content", "reasoning", "refusal")   # message fields sent as text pieces


class IdleTimeoutError(openai.APITimeoutError):
    """The endpoint sent nothing for `idle_s` seconds while a streamed reply was awaited (before its first
    chunk or between two chunks). An APITimeoutError: retried like any timeout (ecab/llm/retry.py)."""

    def __init__(self, request: httpx2.Request, idle_s: float, setting: str):
        super().__init__(request=request)
        self.idle_s = idle_s
        self.message = f"no data for {_seconds(idle_s)} s ({setting})"
        self.args = (self.message,)

    def __str__(self) -> str:
        return self.message


@dataclass
class Streamed:
    """A streamed reply: `data` as a non-streamed reply's JSON; `first_chunk_s` from the request's start to its
    first chunk; `chunks`: how many chunks came; `usage_reported`: whether the server sent usage (without it the
    tokens and cost of the reply are 0, as for a non-streamed reply without usage)."""

    data: dict[str, Any]
    first_chunk_s: float | None
    chunks: int
    usage_reported: bool


def stream_body(body: dict[str, Any]) -> dict[str, Any]:
    """`body` (a chat-completions JSON body) as a streamed request: `stream: true`, and usage in the last chunk
    (`stream_options.include_usage`) unless the body sets its own stream_options (extra_body)."""
    streamed = dict(body)
    streamed["stream"] = True
    streamed.setdefault("stream_options", {"include_usage": True})
    return streamed


def stream_options(timeout_s: float | None) -> dict[str, Any]:
    """The SDK request options of a streamed request: `timeout_s` for connect, write and the pool, no read
    timeout (the idle timer bounds every wait on the server)."""
    if timeout_s is None:
        return {"timeout": None}
    return {"timeout": httpx2.Timeout(timeout_s, read=None)}


async def stream_chat_completion(client: openai.AsyncOpenAI, body: dict[str, Any], *, idle_timeout_s: float,
                                 timeout_s: float | None = None,
                                 setting: str = "model.idle_timeout_s") -> Streamed:
    """POST `body` to /chat/completions as a stream through `client` (its own `post` and SSE decoder, so its
    errors are the non-streamed request's) and assemble the reply. Every wait on the server, for the response
    and for each next chunk, is bounded by `idle_timeout_s`: IdleTimeoutError (naming `setting`) on a stall.
    The stream is closed on every way out."""
    assembler = ChunkAssembler()
    stream: openai.AsyncStream[Any] | None = None
    stalled = False
    try:
        stream = await _bounded(client.post("/chat/completions", body=stream_body(body), cast_to=object,
                                            options=stream_options(timeout_s), stream=True,
                                            stream_cls=openai.AsyncStream[object]), idle_timeout_s)
        if _is_json(stream.response):
            # a server that ignores `stream` answers as it would without it: that reply, bounded the same way
            try:
                raw = await _bounded(stream.response.aread(), idle_timeout_s)
            except httpx2.TransportError as exc:   # as the SDK reports a failed read of a non-streamed reply
                raise openai.APIConnectionError(request=stream.response.request) from exc
            assembler.whole(_json_reply(raw))
        else:
            while True:
                try:
                    chunk = await _bounded(stream.__anext__(), idle_timeout_s)
                except StopAsyncIteration:
                    break
                except openai.APIError as exc:
                    _raise_if_transient(exc)
                    raise
                assembler.add(chunk)
    except _Stalled:
        stalled = True
    finally:
        if stream is not None:
            await stream.close()
    if stalled:   # raised outside the except block: the error carries no TimeoutError context to describe
        raise IdleTimeoutError(_request_of(client, stream), idle_timeout_s, setting)
    return assembler.streamed()


def stream_chat_completion_blocking(client: openai.OpenAI, body: dict[str, Any], *, idle_timeout_s: float,
                                    timeout_s: float | None = None,
                                    setting: str = "model.idle_timeout_s") -> Streamed:
    """`stream_chat_completion` for a blocking client (ChatClient.complete_blocking). Without an event loop the
    idle bound is the transport's read timeout (httpx applies it to each read, the response headers included):
    a read timeout becomes IdleTimeoutError. Unlike the async timer, bytes the SDK skips (SSE comments some
    servers send as keep-alives) count as data here."""
    assembler = ChunkAssembler()
    stream: openai.Stream[Any] | None = None
    options = {"timeout": httpx2.Timeout(timeout_s, read=idle_timeout_s)}
    stalled = False
    try:
        stream = client.post("/chat/completions", body=stream_body(body), cast_to=object, options=options,
                             stream=True, stream_cls=openai.Stream[object])
        if _is_json(stream.response):
            try:
                raw = stream.response.read()
            except httpx2.TransportError as exc:
                raise openai.APIConnectionError(request=stream.response.request) from exc
            assembler.whole(_json_reply(raw))
        else:
            while True:
                try:
                    chunk = next(stream)
                except StopIteration:
                    break
                except openai.APIError as exc:
                    _raise_if_transient(exc)
                    raise
                assembler.add(chunk)
    except (openai.APITimeoutError, httpx2.ReadTimeout) as exc:
        if not _read_timeout(exc):
            raise
        stalled = True
    finally:
        if stream is not None:
            stream.close()
    if stalled:
        raise IdleTimeoutError(_request_of(client, stream), idle_timeout_s, setting)
    return assembler.streamed()


class ChunkAssembler:
    """Builds the JSON of a non-streamed chat completion from `chat.completion.chunk` events (`add` each,
    then `result`). Per choice index: the message's role; its text fields (content, reasoning_content,
    reasoning, refusal) concatenated; tool calls assembled by their index (id and type from the first chunk
    that has them, function.name and function.arguments concatenated; a name repeated whole in a later chunk,
    as some servers send it, is kept once); reasoning_details entries merged by their index (text pieces
    concatenated); finish_reason and logprobs. The top-level fields (id, model, created, system_fingerprint,
    provider, ...) come from the chunks, the last value winning; `usage` from the last chunk that carries it
    (the final one with include_usage), absent when none does."""

    def __init__(self, started: float | None = None) -> None:
        self.top: dict[str, Any] = {}
        self.choices: dict[int, dict[str, Any]] = {}
        self.usage: dict[str, Any] | None = None
        self.chunks = 0
        self._whole: Any = None
        self.started = time.perf_counter() if started is None else started   # when the request was sent
        self.first_chunk_s: float | None = None    # seconds from then to the first chunk (or whole reply)

    def _arrived(self) -> None:
        self.chunks += 1
        if self.first_chunk_s is None:
            self.first_chunk_s = time.perf_counter() - self.started

    def add(self, chunk: Any) -> None:
        if not isinstance(chunk, dict):
            return
        self._arrived()
        for key, value in chunk.items():
            if key == "usage":
                if value:
                    self.usage = value
            elif key not in ("choices", "object") and value is not None:
                self.top[key] = value
        for position, choice in enumerate(chunk.get("choices") or []):
            if isinstance(choice, dict):
                self._add_choice(choice, position)

    def whole(self, data: Any) -> None:
        """A whole (non-streamed) reply, from a server that ignored `stream`: `result` returns it as it is."""
        self._arrived()
        self._whole = data

    def streamed(self) -> "Streamed":
        data = self.result()
        return Streamed(data=data, first_chunk_s=self.first_chunk_s, chunks=self.chunks,
                        usage_reported=isinstance(data, dict) and bool(data.get("usage")))

    def result(self) -> dict[str, Any]:
        if self._whole is not None:
            return self._whole
        data: dict[str, Any] = {**self.top, "object": "chat.completion"}
        data["choices"] = [self._finish(index, state) for index, state in sorted(self.choices.items())]
        if self.usage is not None:
            data["usage"] = self.usage
        return data

    # -- parts ----------------------------------------------------------------------------------------------

    def _add_choice(self, choice: dict[str, Any], position: int) -> None:
        index = choice.get("index")
        index = index if isinstance(index, int) else position
        state = self.choices.setdefault(index, {"role": None, "text": {}, "calls": [], "details": [],
                                                "finish_reason": None, "logprobs": None, "other": {}})
        if choice.get("finish_reason") is not None:
            state["finish_reason"] = choice["finish_reason"]
        logprobs = choice.get("logprobs")
        if isinstance(logprobs, dict):
            merged = state["logprobs"] = state["logprobs"] or {}
            for key, items in logprobs.items():
                if isinstance(items, list):
                    merged.setdefault(key, []).extend(items)
        delta = choice.get("delta") or choice.get("message") or {}
        if not isinstance(delta, dict):
            return
        for key, value in delta.items():
            if value is None:
                continue
            if key == "role":
                state["role"] = state["role"] or value
            elif key in STRING_FIELDS and isinstance(value, str):
                state["text"].setdefault(key, []).append(value)
            elif key == "tool_calls" and isinstance(value, list):
                for piece in value:
                    if isinstance(piece, dict):
                        _add_call(state["calls"], piece)
            elif key == "reasoning_details" and isinstance(value, list):
                for piece in value:
                    if isinstance(piece, dict):
                        _add_detail(state["details"], piece)
            else:
                state["other"][key] = value

    @staticmethod
    def _finish(index: int, state: dict[str, Any]) -> dict[str, Any]:
        message: dict[str, Any] = {**state["other"], "role": state["role"] or "assistant"}
        text = state["text"]
        message["content"] = "".join(text["content"]) if "content" in text else None
        for key in STRING_FIELDS[1:]:
            if key in text:
                message[key] = "".join(text[key])
        if state["calls"]:
            message["tool_calls"] = [{key: value for key, value in call.items() if key != "index"}
                                     for call in state["calls"]]
        if state["details"]:
            message["reasoning_details"] = state["details"]
        choice = {"index": index, "message": message, "finish_reason": state["finish_reason"]}
        if state["logprobs"] is not None:
            choice["logprobs"] = state["logprobs"]
        return choice


def _add_call(calls: list[dict[str, Any]], piece: dict[str, Any]) -> None:
    """One tool-call delta into `calls`: matched by its index, else by its id, else (a server that numbers
    nothing) a piece without an id continues the last call and one with a new id starts a call."""
    index, call_id = piece.get("index"), piece.get("id")
    call = None
    if isinstance(index, int):
        call = next((c for c in calls if c["index"] == index), None)
    elif call_id:
        call = next((c for c in calls if c["id"] == call_id), None)
    elif calls:
        call = calls[-1]
    if call is None:
        call = {"index": index if isinstance(index, int) else len(calls), "id": "", "type": "function",
                "function": {"name": "", "arguments": ""}}
        calls.append(call)
    if call_id and not call["id"]:
        call["id"] = call_id
    if piece.get("type"):
        call["type"] = piece["type"]
    function = piece.get("function") or {}
    name, arguments = function.get("name"), function.get("arguments")
    if isinstance(name, str) and name and name != call["function"]["name"]:
        call["function"]["name"] += name
    if isinstance(arguments, str):
        call["function"]["arguments"] += arguments


def _add_detail(details: list[dict[str, Any]], piece: dict[str, Any]) -> None:
    """One reasoning_details delta (OpenRouter): merged into the entry of the same index and type (text,
    summary and data pieces concatenated, other fields the last value), else appended."""
    index = piece.get("index")
    entry = None
    if index is not None:
        entry = next((d for d in details if d.get("index") == index and d.get("type") == piece.get("type")), None)
    if entry is None:
        details.append(dict(piece))
        return
    for key, value in piece.items():
        if key in ("text", "summary", "data") and isinstance(value, str) and isinstance(entry.get(key), str):
            entry[key] += value
        elif value is not None:
            entry[key] = value


def _read_timeout(exc: BaseException) -> bool:
    """A read that waited too long (not a connect or pool timeout), as httpx raises it or the SDK wraps it."""
    return isinstance(exc, httpx2.ReadTimeout) or isinstance(exc.__cause__, httpx2.ReadTimeout)


def _raise_if_transient(exc: openai.APIError) -> None:
    """An error event the retry policy should retry (see _transient_stream_error) as TransientResponseError."""
    if _transient_stream_error(exc):
        raise TransientResponseError(f"the stream reported an error: {exc.message}") from exc


def _transient_stream_error(exc: openai.APIError) -> bool:
    """An error event inside a 200 stream (the SDK raises it as a status-less APIError) whose code says
    rate limit, timeout or server error (OpenRouter sends a provider's failure so): transient, as the same
    status would be before the stream. Any other error event stays as the SDK raised it (not retried)."""
    if status_of(exc) is not None or isinstance(exc, openai.APIConnectionError):
        return False
    body = exc.body if isinstance(exc.body, dict) else {}
    code = body.get("code", getattr(exc, "code", None))
    try:
        number = int(code)
    except (TypeError, ValueError):
        return False
    return number in (408, 429) or number >= 500


class _Stalled(Exception):
    """The idle timer ran out (turned into IdleTimeoutError by stream_chat_completion)."""


async def _bounded(awaitable: Awaitable[T], idle_timeout_s: float) -> T:
    """`awaitable`, given at most `idle_timeout_s`; _Stalled when that passes (the awaitable is cancelled)."""
    try:
        async with asyncio.timeout(idle_timeout_s):
            return await awaitable
    except TimeoutError:
        raise _Stalled from None


def _is_json(response: httpx2.Response) -> bool:
    return response.headers.get("content-type", "").split(";")[0].strip().lower() == "application/json"


def _json_reply(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        raise TransientResponseError("the endpoint ignored stream and sent a body that is not JSON") from None


def _request_of(client: openai.AsyncOpenAI | openai.OpenAI,
                stream: openai.AsyncStream[Any] | openai.Stream[Any] | None) -> httpx2.Request:
    if stream is not None:
        return stream.response.request
    return httpx2.Request("POST", str(client.base_url).rstrip("/") + "/chat/completions")


def _seconds(value: float) -> str:
    return f"{value:g}"

"""Tool calls a model writes as text, read back into calls: the one owner of that parsing (issue 31, item 1).

Why: small models served by llama.cpp (`llama-server --jinja`, Qwen2.5-Coder 0.5B/1.5B) often write the call into
the message's `content` instead of native `tool_calls`: a bare JSON object `{"name": ..., "arguments": {...}}`
(after a "Thought:" paragraph, before newline padding up to the token cap), the same with doubled braces
`{{...}}` (a chat template that escaped them), several objects one per line, or Hermes/Qwen
`<tool_call>{json}</tool_call>` blocks. Read as text, every such episode ended `no_tool_call` and measured the
endpoint's template, not the model. The model setting `tool_call_format` (native | hermes | json) says where
the calls are; the OpenAI agent (agents/openai_agent.py) calls `calls_from_text` when a reply has no native
calls, and a call that looks like one but cannot be read comes back with an error that tells the model what to
write instead (the episode loop records it as a failed call).

Scanning uses the stdlib decoder (`json.JSONDecoder.raw_decode`) at each `{`; no hand-written JSON parser.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

__all__ = ["TEXT_FORMATS", "TextCall", "TextCalls", "calls_from_text"]

TEXT_FORMATS = ("hermes", "json")     # the formats read from text ("native" reads nothing here)
ARGUMENT_KEYS = ("arguments", "parameters", "args")
INSTRUCTION = {
    "hermes": 'write exactly one <tool_call>{"name": ..., "arguments": {...}}</tool_call>',
    "json": 'write exactly one JSON object {"name": ..., "arguments": {...}} (double-quoted keys and strings)',
}
_DECODER = json.JSONDecoder()
# where something that looks like a call starts: an object (braces doubled or not) whose first key names it
_CALL_START = re.compile(r'\{\{?\s*"(?:name|function|tool)"\s*:')
_NAME_IN = re.compile(r'"(?:name|tool)"\s*:\s*"((?:[^"\\]|\\.){1,200})"')
_HERMES = re.compile(r"<tool_call>(.*?)(?:</tool_call>|(?=<tool_call>)|\Z)", re.DOTALL)
_EMPTY_FENCE = re.compile(r"```[a-zA-Z]*\s*```|<tool_call>\s*</tool_call>")


@dataclass(frozen=True)
class TextCall:
    """One call read from text: the tool's `name` and its `arguments` as a JSON object string. A call that looks
    like one but could not be read has `error` set (what is wrong and what to write instead), `name` as far
    as it could be read (else ""), and `arguments` the raw text of the call."""

    name: str
    arguments: str
    error: str | None = None


@dataclass(frozen=True)
class TextCalls:
    """What `calls_from_text` found: `calls` in the order written (unreadable ones included, with `error`),
    `text` the message without them (the thought), `error` the first unreadable call's error (None if none)."""

    calls: list[TextCall] = field(default_factory=list)
    text: str = ""

    @property
    def error(self) -> str | None:
        return next((c.error for c in self.calls if c.error), None)


def calls_from_text(text: str, fmt: str) -> TextCalls:
    """The tool calls written in `text` in format `fmt` ("hermes": `<tool_call>` blocks, a missing closing tag
    at the end tolerated; "json": call objects anywhere in the text, braces doubled or not, also the
    `{"function": {"name", "arguments"}}` and `{"tool", "parameters"|"args"}` shapes; "native": none). Text
    with nothing that looks like a call gives no calls and no error."""
    text = text or ""
    if fmt == "native":
        return TextCalls([], text)
    if fmt not in TEXT_FORMATS:
        raise ValueError(f"tool_call_format must be one of native, {', '.join(TEXT_FORMATS)}, got {fmt!r}")
    if fmt == "hermes":
        calls, spans = _hermes(text)
    else:
        calls, spans = _scan(text, "json")
    return TextCalls(calls, _rest(text, spans))


# ---------------------------------------------------------------------------------------------------------
# formats
# ---------------------------------------------------------------------------------------------------------

def _hermes(text: str) -> tuple[list[TextCall], list[tuple[int, int]]]:
    calls: list[TextCall] = []
    spans = []
    for block in _HERMES.finditer(text):
        spans.append(block.span())
        inner = block.group(1)
        found, _ = _scan(inner, "hermes")
        if found:
            calls.extend(found)
            continue
        snippet = inner.strip()
        if not snippet:
            reason = "the <tool_call> block is empty"
        elif "{" not in snippet:
            reason = "the <tool_call> block holds no JSON object"
        else:
            reason = _first_decode_error(snippet) or 'the object has no "name" and "arguments"'
        calls.append(_unreadable("hermes", reason, snippet))
    return calls, spans


def _scan(text: str, fmt: str) -> tuple[list[TextCall], list[tuple[int, int]]]:
    """Every call object in `text`, in order, with the spans they cover. An object that decodes but is not a
    call is looked into (a call may be nested in it); one that looks like a call but does not decode, or has
    the wrong shape, is an unreadable call."""
    calls: list[TextCall] = []
    spans: list[tuple[int, int]] = []
    pos = 0
    while (start := text.find("{", pos)) >= 0:
        looks_like_call = _CALL_START.match(text, start) is not None
        obj, end, error = _decode(text, start)
        if error is None:
            call = _call_of(obj, fmt)
            if call is not None and (call.error is None or looks_like_call):
                calls.append(call if call.error is None else _unreadable(fmt, call.error, text[start:end]))
                spans.append((start, end))
                pos = end
                continue
            pos = start + 1
            continue
        if looks_like_call:
            stop = _snippet_end(text, start)
            calls.append(_unreadable(fmt, error, text[start:stop]))
            spans.append((start, stop))
            pos = stop
            continue
        pos = start + 1
    return calls, spans


def _call_of(obj: object, fmt: str) -> TextCall | None:
    """The call an object is (error set if it is one of the wrong shape), or None when it is not a call."""
    if not isinstance(obj, dict):
        return None
    if "name" in obj:
        name_key, holder = "name", obj
    elif isinstance(obj.get("function"), dict) and "name" in obj["function"]:
        name_key, holder = "name", obj["function"]
    elif "tool" in obj:
        name_key, holder = "tool", obj
    else:
        return None
    args_key = next((k for k in ARGUMENT_KEYS if k in holder), None)
    if args_key is None and set(holder) - {name_key, "type", "id"}:
        return None     # an object that merely has a name (a product, a person): not a call
    name = holder[name_key]
    if not isinstance(name, str) or not name.strip():
        return TextCall("", "", f'"{name_key}" must be the tool\'s name as a non-empty string, got {name!r}')
    arguments = holder.get(args_key) if args_key else None
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        return TextCall(name, "{}")
    if isinstance(arguments, str):     # arguments as a JSON string, as the OpenAI API sends them
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError as exc:
            return TextCall(name, "", f'"{args_key}" is a string that is not a JSON object ({exc})')
    if not isinstance(arguments, dict):
        return TextCall(name, "", f'"{args_key}" must be a JSON object, got {type(arguments).__name__}')
    return TextCall(name, json.dumps(arguments, ensure_ascii=False))


def _unreadable(fmt: str, reason: str, snippet: str) -> TextCall:
    found = _NAME_IN.search(snippet)
    name = ""
    if found:
        try:
            name = json.loads(f'"{found.group(1)}"')
        except json.JSONDecodeError:
            name = found.group(1)
    error = f"could not read the tool call in your message ({fmt} format): {reason}; {INSTRUCTION[fmt]}"
    return TextCall(name, snippet.strip(), error)


# ---------------------------------------------------------------------------------------------------------
# decoding
# ---------------------------------------------------------------------------------------------------------

def _decode(text: str, start: int) -> tuple[object, int, str | None]:
    """(object, end, None) for the JSON object at `start`, or (None, start, why) when there is none. Braces
    doubled by a chat template (`{{"name": ...}}`) are read as single: first as an object wrapped in one extra
    pair (the inner object decoded as written: a nested `}}` stays what it is), then, if that fails, with every
    `{{`/`}}` outside strings undoubled. Single-brace text is decoded as written, never undoubled."""
    if not text.startswith("{{", start):
        try:
            obj, end = _DECODER.raw_decode(text, start)
        except json.JSONDecodeError as exc:
            return None, start, _why(exc.msg, exc.pos - start)
        return obj, end, None
    try:
        obj, end = _DECODER.raw_decode(text, start + 1)
    except json.JSONDecodeError:
        pass
    else:
        closing = 0
        while end < len(text) and text[end] == "}" and closing < 2:   # the doubled closing braces
            end, closing = end + 1, closing + 1
        return obj, end, None
    single, ends = _undouble(text, start)
    try:
        obj, stop = _DECODER.raw_decode(single, 0)
    except json.JSONDecodeError as exc:
        return None, start, _why(exc.msg, ends[exc.pos - 1] - start if exc.pos else 0) + " (braces undoubled)"
    return obj, ends[stop - 1], None


def _undouble(text: str, start: int) -> tuple[str, list[int]]:
    """text[start:] with `{{` and `}}` outside JSON strings made single, and for each character kept the index
    in `text` just after what it came from."""
    out: list[str] = []
    ends: list[int] = []
    i, n, in_string = start, len(text), False
    while i < n:
        c = text[i]
        if in_string and c == "\\" and i + 1 < n:     # an escape: both characters kept as they are
            out += [c, text[i + 1]]
            ends += [i + 1, i + 2]
            i += 2
            continue
        if c == '"':
            in_string = not in_string
        elif not in_string and c in "{}" and text.startswith(c + c, i):
            out.append(c)
            ends.append(i + 2)
            i += 2
            continue
        out.append(c)
        ends.append(i + 1)
        i += 1
    return "".join(out), ends


def _first_decode_error(snippet: str) -> str | None:
    start = snippet.find("{")
    _, _, error = _decode(snippet, start)
    return error


def _why(message: str, at: int) -> str:
    return f"invalid JSON ({message}, at character {at + 1} of the call)"


def _snippet_end(text: str, start: int) -> int:
    """Where an unreadable call's text ends: at the next call-like start, a blank line, or the end."""
    ends = [len(text)]
    if (following := _CALL_START.search(text, start + 1)) is not None:
        ends.append(following.start())
    if (blank := text.find("\n\n", start)) >= 0:
        ends.append(blank)
    return min(ends)


def _rest(text: str, spans: list[tuple[int, int]]) -> str:
    """The text without the calls' spans: the thought, with padding, empty code fences and tags dropped."""
    if not spans:
        return text
    parts, pos = [], 0
    for start, end in spans:
        parts.append(text[pos:start])
        pos = end
    parts.append(text[pos:])
    rest = _EMPTY_FENCE.sub("", "".join(parts))
    rest = re.sub(r"\n\s*\n(\s*\n)+", "\n\n", rest)
    return rest.strip()

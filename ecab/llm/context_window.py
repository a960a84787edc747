"""Keep a conversation inside a model's context window (`model.context_tokens`, issue 31).

Small locally served models have small contexts (1k-8k tokens). An episode's first request is already ~1,600
tokens (the system prompt, the ten tool schemas, the shopper's query) and every search_products page adds ~840,
so a long episode overflows. `fit` is the pure function the agent calls before each request:

    fitted = fit(messages, tools, settings.context_tokens, reserve_output=settings.max_output_tokens or 512)
    request = chat.request(fitted.messages, tools=tools)    # fitted.trims: what was shortened

It returns a new list (the input and its messages are never modified; unchanged messages are the same objects,
changed ones are copies) and a record of every message it shortened. It never removes a message (an assistant
tool call without its tool message breaks most chat templates) and never touches the system prompt, the first
user message (the shopper's query) or the last turn. A *turn* is an assistant message and the messages after it
up to the next assistant message (its tool results, a reminder). Shortening goes in stages, oldest message
first inside each, and stops as soon as the estimate fits:

1. tool results older than the last `keep_turns` turns become a stub (below) that keeps their product ids;
2. those turns' assistant messages lose their long text (`content` and the string reasoning fields; the
   tool_calls are kept as they are: the endpoint matches their ids against the tool messages);
3. those stubs drop their product ids too (the note says how many there were);
4. the same three stages for the turns before the last one inside the last `keep_turns`.

If it still does not fit, `ContextOverflow` says how much the conversation needs and how much the protected
part alone needs, naming `<config_key>.context_tokens`.

Why `keep_turns=2`: the model acts on the last turn (the result it has just received), and very often it
compares that result with the one before (page 2 after page 1, details after the search that found the
product), so the turn before is kept verbatim while anything older can give way. It is not a hard guarantee:
with a 4,096-token context, the ~1,600-token start plus two ~840-token pages (and the reply's reserve and the
margin) is already over, so the second-to-last turn is shortened as a last resort; only the last turn is never
touched.

The stub of a shortened tool result is valid JSON that tells the model what happened:

    {"truncated": true, "note": "older tool result shortened to fit the context (846 tokens); call the tool
     again if you need it", "product_ids": ["B0...", ...]}

It keeps the result's product ids (from `product_id` and `product_ids` fields at any depth: search and store
pages, filter results, details, reviews), as they are what an agent goes on with, and the shopper's answers
(`user_response`, from ask_user: a revealed preference cannot be asked for again). A result is replaced only
when its stub is smaller.

The token count is an estimate: by default ~4 characters a token over each message's JSON (`json.dumps`, ASCII
escapes, so non-Latin text counts more rather than less) plus the tool schemas' JSON, which are sent with every
request. llama.cpp counts with the model's own tokenizer, so the prompt must fit in `(limit - reserve_output) /
(1 + margin)`: `reserve_output` is the request's output-token limit (the server needs room for the reply) and
`margin` (10%) absorbs the estimate's error. A caller with the model's tokenizer passes `estimate=`.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

__all__ = ["ContextOverflow", "Fitted", "fit", "estimate_tokens", "stub", "product_ids_in",
           "CHARS_PER_TOKEN", "DEFAULT_RESERVE_OUTPUT", "DEFAULT_MARGIN", "DEFAULT_KEEP_TURNS"]

CHARS_PER_TOKEN = 4             # the default estimate: ~4 characters of JSON a token
DEFAULT_RESERVE_OUTPUT = 512    # tokens kept free for the reply when the request sets no output limit
DEFAULT_MARGIN = 0.10           # the estimate may be this much too low
DEFAULT_KEEP_TURNS = 2          # the last turns kept verbatim while possible (the last one always)
KEPT_TEXT_CHARS = 200           # an older assistant message keeps this much of a long text
TEXT_FIELDS = ("content", "reasoning_content", "reasoning")   # an assistant's text fields that may be shortened
KEPT_RESULT_FIELDS = ("user_response",)    # copied into a stub: the shopper's answer cannot be asked again
SHORTENED_MARK = " [... shortened to fit the context]"

# What a trim did (Trim["what"]), in the order the stages apply them.
TOOL_RESULT, ASSISTANT_TEXT, PRODUCT_IDS = "tool_result", "assistant_text", "product_ids"


def estimate_tokens(obj: Any) -> int:
    """~4 characters a token over the object's JSON (a message, or the list of tool schemas): cheap, no
    tokenizer, an estimate only."""
    return math.ceil(len(json.dumps(obj, default=str)) / CHARS_PER_TOKEN)


class ContextOverflow(Exception):
    """The conversation does not fit into the model's context even with everything older shortened."""

    def __init__(self, *, needed_tokens: int, limit_tokens: int, floor_tokens: int, prompt_tokens: int,
                 reserve_output: int, margin: float, earlier_messages: int = 0, config_key: str = "model") -> None:
        self.needed_tokens, self.limit_tokens, self.floor_tokens = needed_tokens, limit_tokens, floor_tokens
        self.prompt_tokens, self.reserve_output, self.margin = prompt_tokens, reserve_output, margin
        self.earlier_messages, self.config_key = earlier_messages, config_key
        earlier = (f"; the {earlier_messages} earlier messages, shortened, need ~{needed_tokens - floor_tokens} more"
                   if earlier_messages else "")
        super().__init__(
            f"the conversation needs ~{needed_tokens} tokens (a ~{prompt_tokens}-token prompt by estimate, "
            f"{reserve_output} reserved for the reply, a {margin:.0%} margin), over "
            f"{config_key}.context_tokens={limit_tokens} even with older tool results shortened (system prompt, "
            f"tool schemas, query and the last turn alone need ~{floor_tokens}{earlier}); raise "
            f"{config_key}.context_tokens if the server's context allows it, or lower the episode's budget")


@dataclass
class Fitted:
    """What to send: `messages` (a new list), what was shortened (`trims`, one entry per changed message:
    index, role, tool_call_id, tokens_before, tokens_after, what = the last stage applied to it) and the
    prompt's estimate (`estimated_tokens`, tool schemas included) against the prompt budget (`budget_tokens`;
    None without a limit)."""

    messages: list[dict[str, Any]]
    trims: list[dict[str, Any]] = field(default_factory=list)
    estimated_tokens: int = 0
    budget_tokens: int | None = None
    limit_tokens: int | None = None

    @property
    def trimmed(self) -> bool:
        return bool(self.trims)


def prompt_budget(limit_tokens: int, reserve_output: int, margin: float) -> int:
    """The largest prompt estimate that fits: the limit less the reply's reserve, less the margin."""
    return math.floor((limit_tokens - reserve_output) / (1 + margin))


def needed_tokens(prompt_tokens: int, reserve_output: int, margin: float) -> int:
    """The context a prompt of this estimate needs: the prompt with its margin and the reply's reserve."""
    return math.ceil(prompt_tokens * (1 + margin)) + reserve_output


def fit(messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None, limit_tokens: int | None, *,
        reserve_output: int | None = DEFAULT_RESERVE_OUTPUT, margin: float = DEFAULT_MARGIN,
        keep_turns: int = DEFAULT_KEEP_TURNS, estimate: Callable[[Any], int] = estimate_tokens,
        config_key: str = "model") -> Fitted:
    """The messages to send so that the prompt (messages and tool schemas) fits into `limit_tokens` with
    `reserve_output` tokens left for the reply (None: DEFAULT_RESERVE_OUTPUT) and a `margin` for the
    estimate's error; see the module's docstring for the policy. `limit_tokens=None`: no limit, nothing
    shortened. Raises ContextOverflow when even the shortest form is over."""
    out = list(messages)
    tool_tokens = estimate(list(tools)) if tools else 0
    sizes = [estimate(m) for m in out]
    total = tool_tokens + sum(sizes)
    if limit_tokens is None:
        return Fitted(out, [], total, None, None)
    if limit_tokens <= 0:
        raise ValueError(f"{config_key}.context_tokens must be positive, got {limit_tokens}")
    reserve = DEFAULT_RESERVE_OUTPUT if reserve_output is None else reserve_output
    budget = prompt_budget(limit_tokens, reserve, margin)
    trims: dict[int, dict[str, Any]] = {}
    if total <= budget:
        return Fitted(out, [], total, budget, limit_tokens)

    older, recent, protected = _regions(out, keep_turns)
    stubs: dict[int, _Stub] = {}

    def replace(index: int, message: dict[str, Any], what: str) -> bool:
        """Put the shortened message in if it is smaller; True once the prompt fits."""
        nonlocal total
        size = estimate(message)
        if size >= sizes[index]:
            return False
        trim = trims.setdefault(index, {"index": index, "role": out[index].get("role"),
                                        "tool_call_id": out[index].get("tool_call_id"),
                                        "tokens_before": sizes[index]})
        trim.update(tokens_after=size, what=what)
        out[index], total, sizes[index] = message, total - sizes[index] + size, size
        return total <= budget

    for region in (older, recent):
        for index in region:                     # 1. tool results -> stubs with their product ids
            if out[index].get("role") == "tool":
                stubs[index] = _Stub.of(out[index].get("content"), sizes[index])
                if replace(index, {**out[index], "content": stubs[index].json(ids=True)}, TOOL_RESULT):
                    return _done(out, trims, total, budget, limit_tokens)
        for index in region:                     # 2. assistant text -> its beginning
            if out[index].get("role") == "assistant":
                shorter = _shorter_text(out[index])
                if shorter is not None and replace(index, shorter, ASSISTANT_TEXT):
                    return _done(out, trims, total, budget, limit_tokens)
        for index in region:                     # 3. stubs -> without their product ids
            if index in stubs and trims.get(index, {}).get("what") == TOOL_RESULT and stubs[index].ids:
                if replace(index, {**out[index], "content": stubs[index].json(ids=False)}, PRODUCT_IDS):
                    return _done(out, trims, total, budget, limit_tokens)

    floor = tool_tokens + sum(sizes[i] for i in protected)
    raise ContextOverflow(needed_tokens=needed_tokens(total, reserve, margin), limit_tokens=limit_tokens,
                          floor_tokens=needed_tokens(floor, reserve, margin), prompt_tokens=total,
                          reserve_output=reserve, margin=margin, earlier_messages=len(out) - len(protected),
                          config_key=config_key)


def _done(out: list[dict[str, Any]], trims: dict[int, dict[str, Any]], total: int, budget: int,
          limit_tokens: int) -> Fitted:
    return Fitted(out, [trims[i] for i in sorted(trims)], total, budget, limit_tokens)


def _regions(messages: Sequence[dict[str, Any]], keep_turns: int) -> tuple[list[int], list[int], list[int]]:
    """The indices that may be shortened first (older turns), those shortened only as a last resort (the
    last `keep_turns` turns but the last) and those never touched (system messages, the first user message,
    the last turn)."""
    assistants = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
    first_user = next((i for i, m in enumerate(messages) if m.get("role") == "user"), None)
    never = {i for i, m in enumerate(messages) if m.get("role") == "system"} | (
        set() if first_user is None else {first_user})
    if not assistants:
        return [], [], list(range(len(messages)))
    last = assistants[-1]
    recent_from = assistants[-min(max(keep_turns, 1), len(assistants))]
    older = [i for i in range(recent_from) if i not in never]
    recent = [i for i in range(recent_from, last) if i not in never]
    protected = sorted(never | set(range(last, len(messages))))
    return older, recent, protected


def product_ids_in(value: Any) -> list[str]:
    """The product ids in a tool result, in order, once each: every `product_id` value and every item of a
    `product_ids` list, at any depth."""
    found: dict[str, None] = {}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, item in node.items():
                if key == "product_id" and isinstance(item, (str, int)) and not isinstance(item, bool):
                    found.setdefault(str(item))
                elif key == "product_ids" and isinstance(item, list):
                    for pid in item:
                        if isinstance(pid, (str, int)) and not isinstance(pid, bool):
                            found.setdefault(str(pid))
                else:
                    walk(item)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(value)
    return list(found)


@dataclass
class _Stub:
    tokens: int                              # the original message's estimate
    ids: list[str]
    kept: dict[str, Any]

    @classmethod
    def of(cls, content: Any, tokens: int) -> "_Stub":
        parsed = content
        if isinstance(content, str):
            try:
                parsed = json.loads(content)
            except ValueError:
                parsed = None
        kept = {k: parsed[k] for k in KEPT_RESULT_FIELDS if isinstance(parsed, dict) and k in parsed}
        return cls(tokens, product_ids_in(parsed), kept)

    def json(self, *, ids: bool) -> str:
        return stub(self.tokens, self.ids if ids else None, dropped_ids=0 if ids else len(self.ids), **self.kept)


def stub(tokens: int, product_ids: Iterable[str] | None = None, *, dropped_ids: int = 0, **kept: Any) -> str:
    """The JSON that replaces an older tool result: what happened, the product ids it had (or how many were
    dropped) and the fields kept verbatim."""
    what = f"{tokens} tokens" + (f", its {dropped_ids} product ids not kept" if dropped_ids else "")
    body: dict[str, Any] = {"truncated": True, "note": f"older tool result shortened to fit the context ({what}); "
                                                      "call the tool again if you need it"}
    if product_ids:
        body["product_ids"] = list(product_ids)
    body.update(kept)
    return json.dumps(body, ensure_ascii=False)


def _shorter_text(message: dict[str, Any]) -> dict[str, Any] | None:
    """The assistant message with its long text fields cut to their beginning (tool_calls untouched), or None
    when none is long."""
    changes = {key: message[key][:KEPT_TEXT_CHARS].rstrip() + SHORTENED_MARK for key in TEXT_FIELDS
               if isinstance(message.get(key), str) and len(message[key]) > KEPT_TEXT_CHARS + len(SHORTENED_MARK)}
    return {**message, **changes} if changes else None

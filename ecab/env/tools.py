"""The agent's tools: one `Tool` record each (name, description, JSON schema, handler and how it runs), the
ordered table of the 10 built-ins with names, descriptions and schemas exactly as the original sends them
(docs/original-harness.md §2.1, §2.2), `register_tool` for a user's own tools, and a per-episode `ToolBox`
that executes calls with the original's error handling.

Compatible with the original: tool names, order, descriptions, parameter schemas, return shapes, the
error strings (`Invalid tool arguments JSON: ...`, `Unknown tool: ...`, `Tool call failed: <str(exc)>`,
so a missing key reads `Tool call failed: 'query'`), and the `ask_user` rule (user.py).

Deliberate differences (docs/original-harness.md §8 items 5, 16, 17), each documented where it happens:
- `search_products` goes through the catalog's search mode (hybrid by default; `search_mode="original"`
  selects the original title-only AND semantics) and `total_found` is the TRUE number of matches, not
  the original's `min(matches, (page+1)*20)`.
- `filter_by_attribute` resolves detail-key aliases (`Operating System` finds an `OS` detail, `Material`
  finds `Material Type`) and key case, where the original required the exact lowercased key.
- `python_execute` runs in a real sandbox (sandbox.py): imports of the six safe modules work, limits hold.
- Empty `arguments` ("" from models calling a no-argument tool) count as `{}`; a non-object JSON value is
  a `Tool call failed` error instead of a confusing downstream TypeError.
- Catalog calls run in worker threads (`asyncio.to_thread`), so one event loop can drive many episodes.

Adding a tool is one `Tool` record: a built-in goes into `BUILTIN_TOOLS`, a user's is passed to `register_tool`
(it follows the built-ins in the schemas the agent gets, and is dispatched, budgeted and error-handled like them).
"""
from __future__ import annotations

import asyncio
import functools
import contextlib
import copy
import inspect
import json
import re
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from ecab import fields, schema
from ecab.catalog.base import CatalogReader
from ecab.env import sandbox as sandbox_mod
from ecab.env.user import ScriptedUser, profile_response

SEARCH_MODES = ("hybrid", "fts", "vector", "original")
PAGE_SIZE = 20
MAX_IDS = 10
REVIEW_LIMIT = 5

# ---------------------------------------------------------------------------------------------------------
# The record
# ---------------------------------------------------------------------------------------------------------

ToolHandler = Callable[["ToolBox", dict[str, Any], "ToolResult"], "dict[str, Any] | Awaitable[dict[str, Any]]"]
"""`handler(box, params, result) -> dict`, sync or async: `box` is the episode's ToolBox (`box.catalog`,
`box.task`, `box.user`), `params` the parsed argument object, `result` the call's ToolResult (for the facts a
tool records beside its answer, like ask_user's revealed slot); it returns the dict the agent sees. An exception
becomes `Tool call failed: <str(exc)>`, a dict with an `"error"` key a tool error."""

FastPath = Callable[["ToolBox", dict[str, Any]], "dict[str, Any] | None"]

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")   # what the OpenAI function-calling API accepts as a name


@dataclass(frozen=True, eq=False)   # compared and hashed by identity: it holds a handler and a dict
class Tool:
    """One tool the agent can call: what the agent is told (`name`, `description`, `parameters`: the JSON-schema
    object of its arguments) and how ecab runs it (`handler`, see `ToolHandler`).

    - `blocking`: a sync handler may block (catalog, disk, network), so it runs in a worker thread
      (`asyncio.to_thread`); False runs it on the event loop (quick, pure code only). An async handler always
      runs on the loop, whatever `blocking` says.
    - `terminal`: a call ends the episode (recommend_product, the only one).
    - `fast_path(box, params)`: tried on the event loop before the handler; an answer other than None is the
      call's answer (search_products' page cache).
    """

    name: str
    description: str
    parameters: dict[str, Any]
    handler: ToolHandler
    _: KW_ONLY
    blocking: bool = True
    terminal: bool = False
    fast_path: FastPath | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise ValueError(f"a tool name is 1-64 letters, digits, '_' or '-', got {self.name!r}")
        if not isinstance(self.description, str):
            raise ValueError(f"tool {self.name!r}: description must be a string, got {type(self.description).__name__}")
        if not isinstance(self.parameters, dict) or self.parameters.get("type") != "object":
            raise ValueError(f"tool {self.name!r}: parameters must be a JSON-schema object "
                             f"({{\"type\": \"object\", \"properties\": ...}}), got {self.parameters!r}")
        if not callable(self.handler):
            raise ValueError(f"tool {self.name!r}: handler must be callable, got {self.handler!r}")
        object.__setattr__(self, "parameters", copy.deepcopy(self.parameters))  # the caller's dict stays theirs

    def schema(self) -> dict[str, Any]:
        """The OpenAI function schema sent to the agent (a fresh copy: callers may adapt it freely)."""
        return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                 "parameters": copy.deepcopy(self.parameters)}}

    async def run(self, box: ToolBox, params: dict[str, Any], result: ToolResult) -> dict[str, Any]:
        """The handler's answer: the fast path, else the handler awaited, in a thread, or on the loop."""
        if self.fast_path is not None and (fast := self.fast_path(box, params)) is not None:
            return fast
        answer: Any
        if inspect.iscoroutinefunction(self.handler):
            answer = await self.handler(box, params, result)
        elif self.blocking:
            answer = await asyncio.to_thread(self.handler, box, params, result)
        else:
            answer = self.handler(box, params, result)
        if inspect.isawaitable(answer):  # a sync callable that hands back a coroutine (a wrapped async function)
            answer = await answer
        if not isinstance(answer, dict):
            raise TypeError(f"tool {self.name!r} returned {type(answer).__name__}, expected a dict")
        return answer


# ---------------------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------------------

@dataclass
class ToolResult:
    """One executed call. `content` is the dict the agent sees (serialise with `content_json`)."""

    name: str
    arguments: dict | None          # parsed arguments; None when the JSON was invalid
    content: dict
    is_error: bool = False
    latency_s: float = 0.0
    terminal: bool = False          # recommend_product was called: the episode ends (even for a bad id)
    recommended_id: str | None = None      # the product_id argument of recommend_product, as given
    valid_recommendation: bool = False     # that id exists in the catalog (the prediction counts)
    revealed_slot_id: str | None = None    # ask_user: the slot this question revealed
    error_kind: str | None = None          # invalid_json | unknown_tool | call_failed | tool_error | unreadable_call
    sandbox_timing: tuple[float | None, float | None] | None = None   # python_execute: (queued_s, run_s)

    @property
    def predicted_product_id(self) -> str | None:
        """What the original records as the prediction: the id only when it exists."""
        return self.recommended_id if self.valid_recommendation else None

    @property
    def content_json(self) -> str:
        """The tool message content exactly as the original serialises it."""
        return json.dumps(self.content, ensure_ascii=False)


class ToolArgumentError(Exception):
    """A wrong-typed argument; its text becomes `Tool call failed: <text>`."""


# ---------------------------------------------------------------------------------------------------------
# Argument helpers
# ---------------------------------------------------------------------------------------------------------

def search_answer(hits, page: int) -> dict:
    """search_products' answer for a page of hits."""
    return {"products": [{"product_id": h.product_id, "title": h.title} for h in hits.hits],
            "page": page, "total_found": hits.total}


def _search_args(params: dict) -> tuple[str, int]:
    """search_products' (query, page)."""
    return str(params["query"]), _page(params)


def _page(params: dict) -> int:
    """`page` as a non-negative int (the original: `max(0, page)`); numeric strings are accepted."""
    page = params.get("page", 0)
    if page is None:
        return 0
    if isinstance(page, bool) or not isinstance(page, (int, float, str)):
        raise ToolArgumentError(f"page must be an integer, got {json.dumps(page)}")
    try:
        return max(0, int(page))
    except ValueError:
        raise ToolArgumentError(f"page must be an integer, got {json.dumps(page)}") from None


def _id_list(params: dict, key: str) -> list[str]:
    """The first 10 ids of a list argument (the original truncates silently)."""
    ids = params[key]
    if not isinstance(ids, list):
        raise ToolArgumentError(f"{key} must be a list of product ID strings, got {type(ids).__name__}")
    return [str(i) for i in ids[:MAX_IDS]]


def _build_attribute_names() -> dict[str, str]:
    names = {name.lower(): name for name in fields.DETAIL_FIELDS}
    names.update({alias.lower(): canon for alias, canon in fields.FIELD_NAME_ALIASES.items()})
    return names


_ATTRIBUTE_NAMES = _build_attribute_names()


def canonical_attribute(name: str) -> str:
    """The canonical detail key for an agent-supplied name, any case ("os" -> "Operating System");
    unknown names pass through (lookup_detail then matches them case-insensitively)."""
    return _ATTRIBUTE_NAMES.get(name.strip().lower(), name.strip())


def attribute_matches(details: dict, attribute_name: str, attribute_value: str) -> bool:
    """filter_by_attribute's test: the detail's `str(value).lower()` is non-empty and contains the value."""
    value = fields.lookup_detail(details, canonical_attribute(attribute_name))
    text = str(value).lower() if value is not None else ""
    return bool(text) and str(attribute_value).lower() in text


# ---------------------------------------------------------------------------------------------------------
# The built-in handlers: `handler(box, params, result) -> dict` (ToolHandler)
# ---------------------------------------------------------------------------------------------------------

def _search_products(box: ToolBox, params: dict, result: ToolResult) -> dict:
    query, page = _search_args(params)
    hits = box.catalog.search(query, limit=PAGE_SIZE, offset=page * PAGE_SIZE, mode=box.search_mode)
    return search_answer(hits, page)


def _cached_search_products(box: ToolBox, params: dict) -> dict | None:
    """search_products' answer from the catalog's page cache, on the event loop, or None: a page already
    computed (a repeated search, a warmed first query) never queues behind the tool threads' searches
    (docs/decisions.md#page-cache). Arguments it cannot read go the thread path, which reports them."""
    cached_search = getattr(box.catalog, "cached_search", None)
    if cached_search is None:
        return None
    try:
        query, page = _search_args(params)
    except Exception:
        return None
    hits = cached_search(query, limit=PAGE_SIZE, offset=page * PAGE_SIZE, mode=box.search_mode)
    return None if hits is None else search_answer(hits, page)


def _filter_by_attribute(box: ToolBox, params: dict, result: ToolResult) -> dict:
    ids = _id_list(params, "product_ids")
    name, value = str(params["attribute_name"]), str(params["attribute_value"])
    products = box.catalog.get_products(ids)
    return {"product_ids": [p.product_id for p in products if attribute_matches(p.details, name, value)]}


def _get_product_details(box: ToolBox, params: dict, result: ToolResult) -> dict:
    pid = str(params["product_id"])
    product = box.catalog.get_product(pid)
    if product is None:
        return {"error": f"Product {pid} not found"}
    return {"product": {"product_id": product.product_id, "title": product.title,
                        "main_category": product.main_category, "store": product.store,
                        "price": product.price, "features": list(product.features),
                        "description": list(product.description), "details": dict(product.details),
                        "bought_together": None}}


def _get_review_content(box: ToolBox, params: dict, result: ToolResult) -> dict:
    query, pid = str(params["query"]), str(params["product_id"])
    # Keyword search modes keep review search keyword-only too (original: the harness's FTS5 phrase
    # AND over title + text); the semantic modes search reviews by BM25 + embedding (hybrid).
    mode = box.search_mode if box.search_mode in ("original", "fts") else "hybrid"
    reviews = box.catalog.search_reviews(pid, query, limit=REVIEW_LIMIT, mode=mode)
    if not reviews:
        return {"reviews": [], "message": "No matching reviews found"}
    return {"reviews": [{"product_id": r.product_id, "rating": r.rating, "title": r.title, "text": r.text}
                        for r in reviews]}


def _get_product_review_stats(box: ToolBox, params: dict, result: ToolResult) -> dict:
    products = box.catalog.get_products(_id_list(params, "product_ids"))
    return {"products": [{"product_id": p.product_id, "average_rating": p.average_rating,
                          "rating_number": p.rating_number} for p in products]}


def _get_store_products(box: ToolBox, params: dict, result: ToolResult) -> dict:
    store, page = str(params["store_name"]), _page(params)
    hits = box.catalog.store_products(store, limit=PAGE_SIZE, offset=page * PAGE_SIZE)
    return {"store": store, "products": [{"product_id": h.product_id, "title": h.title} for h in hits.hits],
            "page": page, "total_count": hits.total}


def _get_user_profile(box: ToolBox, params: dict, result: ToolResult) -> dict:
    return profile_response(box.task.user_persona)


def _ask_user(box: ToolBox, params: dict, result: ToolResult) -> dict:
    question = params["question"]
    answer = box.user.ask(question if isinstance(question, str) else json.dumps(question))
    result.revealed_slot_id = box.user.log[-1].slot_id
    return answer


async def _python_execute(box: ToolBox, params: dict, result: ToolResult) -> dict:
    code = params["code"]
    sandbox = box.sandbox or sandbox_mod.default_sandbox()
    # The episode's own key: the shared sandbox queues calls per episode and serves episodes in turn.
    ran = await sandbox.execute_async(code, owner=box.sandbox_owner)
    result.sandbox_timing = (ran.queued_s, ran.run_s)   # the step records the wait apart from the run
    return ran.to_tool_dict()


def _recommend_product(box: ToolBox, params: dict, result: ToolResult) -> dict:
    pid = params["product_id"]
    reasoning = params.get("reasoning", "")
    product = box.catalog.get_product(str(pid)) if isinstance(pid, (str, int)) else None
    result.recommended_id = str(pid) if pid is not None else None
    result.valid_recommendation = product is not None
    return {"recommended_product": {"product_id": product.product_id, "title": product.title} if product else None,
            "reasoning": reasoning if isinstance(reasoning, str) else json.dumps(reasoning)}


# ---------------------------------------------------------------------------------------------------------
# The 10 built-in tools, in the original's order; text copied from docs/original-harness.md §2.2
# ---------------------------------------------------------------------------------------------------------

def _object(properties: dict, required: list[str]) -> dict:
    return {"type": "object", "properties": properties, "required": required}


BUILTIN_TOOLS: tuple[Tool, ...] = (
    Tool("search_products",
         "Search the product catalog by text query. Only searches product TITLES (not descriptions, features, or "
         "attributes). Uses BM25 ranking. Returns up to 20 results per page with product_id and title.",
         _object({
             "query": {"type": "string", "description": "Search query text"},
             "page": {"type": "integer", "description": "Page number (0-indexed). Page 0 returns the first 20 "
                                                        "results, page 1 returns results 21-40, etc.", "default": 0},
         }, ["query"]),
         _search_products, fast_path=_cached_search_products),
    Tool("filter_by_attribute",
         "Filter candidate products by a structured detail attribute using case-insensitive substring matching. "
         "Use the canonical detail key name exactly as stored in the catalog (e.g. 'Brand', 'Material', "
         "'Compatible Phone Models', 'Connector Type'). Only filters within the provided candidate set (max 10 "
         "products). Does NOT search the full catalog.",
         _object({
             "product_ids": {"type": "array", "items": {"type": "string"},
                             "description": "Product IDs to filter (max 10)", "maxItems": 10},
             "attribute_name": {"type": "string", "description": "Canonical attribute key to filter on, such as "
                                                                 "'Brand', 'Item Form', 'Hair Type', or 'Skin Type'"},
             "attribute_value": {"type": "string", "description": "The attribute value to match (case-insensitive)"},
         }, ["product_ids", "attribute_name", "attribute_value"]),
         _filter_by_attribute),
    Tool("get_product_details",
         "Get full structured details of a single product, including title, store, price, structured detail "
         "attributes, and feature descriptions. Does NOT include rating or review data.",
         _object({
             "product_id": {"type": "string", "description": "Product ID to retrieve"},
         }, ["product_id"]),
         _get_product_details),
    Tool("get_review_content",
         "Search product reviews by text query for a specific product. Returns the top 5 most relevant reviews "
         "with full content including rating, title, text.",
         _object({
             "query": {"type": "string", "description": "Search query for review content"},
             "product_id": {"type": "string", "description": "Product ID to search reviews for"},
         }, ["query", "product_id"]),
         _get_review_content),
    Tool("get_product_review_stats",
         "Get rating statistics for one or more products (max 10). Returns only product_id, average_rating, and "
         "rating_number. Does NOT return review text content.",
         _object({
             "product_ids": {"type": "array", "items": {"type": "string"},
                             "description": "Product IDs to retrieve rating info for (max 10)", "maxItems": 10},
         }, ["product_ids"]),
         _get_product_review_stats),
    Tool("get_store_products",
         "Get products from a specific store. Returns up to 20 results per page with product_id and title.",
         _object({
             "store_name": {"type": "string", "description": "Exact store name"},
             "page": {"type": "integer", "description": "Page number (0-indexed)", "default": 0},
         }, ["store_name"]),
         _get_store_products),
    Tool("get_user_profile",
         "Retrieve the current user's profile including demographics, lifestyle, shopping habits, and any "
         "product-specific requirements (e.g. skin type, preferred size, brand preference). Call this to discover "
         "implicit needs that the user hasn't stated in their query.",
         _object({}, []),
         _get_user_profile, blocking=False),
    Tool("ask_user",
         "Ask the user a clarifying question to gather information. The number of chars in question must be under "
         "100, otherwise the tool will return error. You can only ask user up to 10 turns.",
         _object({
             "question": {"type": "string", "description": "The question to ask the user"},
         }, ["question"]),
         _ask_user, blocking=False),
    Tool("python_execute",
         "Run short Python code for calculations or lightweight text/data transformation when other tools are not "
         "enough. Returns printed stdout only. Limited to a small set of safe built-in modules.",
         _object({
             "code": {"type": "string", "description": "Python code to execute"},
         }, ["code"]),
         _python_execute),  # async: the sandbox awaits its jail without holding a thread
    Tool("recommend_product",
         "Submit your final product recommendation. Call this only when you have enough evidence. This ends the "
         "search process.",
         _object({
             "product_id": {"type": "string", "description": "Product ID to recommend"},
             "reasoning": {"type": "string", "description": "Brief explanation of why this product is recommended"},
         }, ["product_id", "reasoning"]),
         _recommend_product, terminal=True),
)

# Derived views, kept for existing callers: the built-ins' names in order, the tool that ends an episode, and the
# per-name text and schemas.
TOOL_ORDER: tuple[str, ...] = tuple(t.name for t in BUILTIN_TOOLS)
TERMINAL_TOOL: str = next(t.name for t in BUILTIN_TOOLS if t.terminal)
TOOL_DESCRIPTIONS: dict[str, str] = {t.name: t.description for t in BUILTIN_TOOLS}
TOOL_PARAMETERS: dict[str, dict] = {t.name: t.parameters for t in BUILTIN_TOOLS}

# ---------------------------------------------------------------------------------------------------------
# Registration: a user's tools follow the built-ins, in registration order
# ---------------------------------------------------------------------------------------------------------

_BUILTIN_BY_NAME: dict[str, Tool] = {t.name: t for t in BUILTIN_TOOLS}
_registered: dict[str, Tool] = {}
_registry_lock = threading.Lock()


def _refused(message: str) -> Exception:
    """The registries' error (ecab.core.plugins.PluginError, a ValueError), imported only when needed: it pulls
    the config stack, which the tools themselves do not need."""
    from ecab.core.plugins import PluginError
    return PluginError(message)


def register_tool(tool: Tool, *, replace: bool = False) -> Tool:
    """Add a user's tool: from the next ToolBox on it is in the schemas sent to the agent (after the built-ins,
    in registration order) and dispatched, error-handled and counted against the budget like any tool.

    A taken name is refused (PluginError, a ValueError) unless `replace` (the new record then takes the old
    one's place); registering the same record again is a no-op. Built-ins cannot be replaced, and a user's tool
    cannot be terminal (recommend_product is the one call that ends an episode). Registration is per process:
    `unregister_tool` or the `registered_tool` context manager takes it back."""
    if not isinstance(tool, Tool):
        raise _refused(f"register_tool takes a Tool record, got {type(tool).__name__}")
    if tool.name in _BUILTIN_BY_NAME:
        raise _refused(f"tool {tool.name!r} is a built-in tool and cannot be registered or replaced; "
                       f"give yours another name")
    if tool.terminal:
        raise _refused(f"tool {tool.name!r}: a registered tool cannot be terminal ({TERMINAL_TOOL} is the one "
                       f"tool that ends an episode)")
    with _registry_lock:
        taken = _registered.get(tool.name)
        if taken is not None and taken is not tool and not replace:
            raise _refused(f"tool {tool.name!r} is already registered (pass replace=True to replace it)")
        _registered[tool.name] = tool
    return tool


def unregister_tool(name: str) -> Tool:
    """Remove a tool `register_tool` added and return it (built-ins stay)."""
    with _registry_lock:
        tool = _registered.pop(name, None)
    if tool is None:
        what = "a built-in tool" if name in _BUILTIN_BY_NAME else "not a registered tool"
        raise _refused(f"cannot unregister tool {name!r}: it is {what}")
    return tool


@contextlib.contextmanager
def registered_tool(tool: Tool, *, replace: bool = False) -> Iterator[Tool]:
    """`register_tool` for the duration of a `with` block (tests, a scoped run); the replaced record, if any,
    comes back afterwards."""
    with _registry_lock:
        previous = _registered.get(tool.name)
    register_tool(tool, replace=replace)
    try:
        yield tool
    finally:
        with _registry_lock:
            if previous is not None:
                _registered[tool.name] = previous
            elif _registered.get(tool.name) is tool:
                del _registered[tool.name]


def all_tools() -> tuple[Tool, ...]:
    """Every tool an episode offers: the 10 built-ins in TOOL_ORDER, then the registered ones in order."""
    with _registry_lock:
        return BUILTIN_TOOLS + tuple(_registered.values())


@functools.lru_cache(maxsize=32)
def import_tools(paths: tuple[str, ...]) -> tuple[Tool, ...]:
    """The tools a config names by import path (`tools.extra: [my_pkg.tools:price_of]`): each names a Tool
    record, or a function of no arguments returning one or a list of them. Imported by name in every process
    that builds a ToolBox (process and Ray workers too), once per process; a path that does not import, a name
    that is no Tool, or a built-in's name is one line naming `tools.extra`."""
    from ecab.core.plugins import PluginError, import_target

    tools: list[Tool] = []
    for path in paths:
        found = import_target(path, key="tools.extra")
        if callable(found) and not isinstance(found, Tool):
            try:
                found = found()
            except TypeError as exc:
                raise PluginError(f"tools.extra: {path} is a function that needs arguments ({exc}); name a Tool "
                                  f"record, or a function of no arguments that returns Tools") from None
        for tool in found if isinstance(found, (list, tuple)) else [found]:
            if not isinstance(tool, Tool):
                raise PluginError(f"tools.extra: {path} gave {type(tool).__name__}, not a Tool record")
            if tool.name in _BUILTIN_BY_NAME or tool.terminal:
                raise PluginError(f"tools.extra: {path}: {tool.name!r} is a built-in's name or a terminal tool")
            tools.append(tool)
    return tuple(tools)


def get_tool(name: str) -> Tool | None:
    """The built-in or registered tool called `name`, or None."""
    with _registry_lock:
        return _BUILTIN_BY_NAME.get(name) or _registered.get(name)


def tool_schemas(names: tuple[str, ...] | list[str] | None = None) -> list[dict]:
    """OpenAI function schemas of `names`, by default every tool (the built-ins in TOOL_ORDER, then the
    registered ones); fresh copies: callers may adapt them freely."""
    tools = {t.name: t for t in all_tools()}
    if names is None:
        names = list(tools)
    unknown = [n for n in names if n not in tools]
    if unknown:
        raise ValueError(f"unknown tool name(s) {unknown}; expected names from {list(tools)}")
    return [tools[n].schema() for n in names]


# ---------------------------------------------------------------------------------------------------------
# The per-episode toolbox
# ---------------------------------------------------------------------------------------------------------

@dataclass
class ToolBox:
    """The tools of one episode: a fresh user state per instance, like the original's per-sample tools. The tool
    set (`tools`) is fixed when the box is made: the built-ins plus the tools registered at that moment."""

    catalog: CatalogReader
    task: schema.Task
    _: KW_ONLY
    search_mode: str = "hybrid"
    user_matcher: str = "original"
    sandbox: sandbox_mod.Sandbox | None = None
    history: list[ToolResult] = field(default_factory=list)
    extra_tools: tuple[str, ...] = ()      # tools.extra: import paths of users' Tool records (import_tools)
    # This episode's key in the sandbox's fair queue: a fresh object, so no two boxes ever share one.
    sandbox_owner: object = field(default_factory=object, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.search_mode not in SEARCH_MODES:
            raise ValueError(f"unknown search_mode {self.search_mode!r}; expected one of {list(SEARCH_MODES)}")
        self.user = ScriptedUser(self.task.clarification_script, matcher=self.user_matcher)
        self.tools: dict[str, Tool] = {t.name: t for t in all_tools()}
        for tool in import_tools(tuple(self.extra_tools)):
            self.tools.setdefault(tool.name, tool)

    def schemas(self) -> list[dict]:
        """The schemas sent to the agent: one per tool of this box, in order."""
        return [t.schema() for t in self.tools.values()]

    async def call(self, name: str, arguments_json: str | dict | None) -> ToolResult:
        """Execute one tool call; never raises for anything the agent sent."""
        started = time.perf_counter()
        result = await self._dispatch(name, arguments_json)
        result.latency_s = time.perf_counter() - started
        self.history.append(result)
        return result

    async def _dispatch(self, name: str, arguments_json: str | dict | None) -> ToolResult:
        tool = self.tools.get(name)
        terminal = tool is not None and tool.terminal
        try:
            params = self._parse_arguments(arguments_json)
        except json.JSONDecodeError as exc:
            return ToolResult(name, None, {"error": f"Invalid tool arguments JSON: {exc}"}, is_error=True,
                              terminal=terminal, error_kind="invalid_json")
        result = ToolResult(name, params, {}, terminal=terminal)
        if tool is None:
            result.content, result.is_error, result.error_kind = {"error": f"Unknown tool: {name}"}, True, "unknown_tool"
            return result
        try:
            if not isinstance(params, dict):
                raise ToolArgumentError(f"arguments must be a JSON object, got {type(params).__name__}")
            result.content = await tool.run(self, params, result)
        except Exception as exc:  # the original agent's catch-all: str(exc), so KeyError reads 'query'
            result.content, result.error_kind = {"error": f"Tool call failed: {exc}"}, "call_failed"
        result.is_error = "error" in result.content and result.content["error"] is not None
        if result.is_error and result.error_kind is None:
            result.error_kind = "tool_error"  # the tool itself answered with an error (e.g. product not found)
        return result

    @staticmethod
    def _parse_arguments(arguments_json: str | dict | None) -> Any:
        if isinstance(arguments_json, dict):
            return arguments_json
        if arguments_json is None or not str(arguments_json).strip():
            return {}
        return json.loads(arguments_json)

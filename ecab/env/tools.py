"""The agent's 10 tools: names, descriptions and JSON schemas exactly as the original sends them
(docs/original-harness.md §2.1, §2.2), and a per-episode `ToolBox` that executes calls with the original's error
handling.

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
"""
from __future__ import annotations

import asyncio
import copy
import json
import time
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from ecab import fields, schema
from ecab.catalog.base import CatalogReader
from ecab.env import sandbox as sandbox_mod
from ecab.env.user import ScriptedUser, profile_response

TOOL_ORDER = ("search_products", "filter_by_attribute", "get_product_details", "get_review_content",
              "get_product_review_stats", "get_store_products", "get_user_profile", "ask_user",
              "python_execute", "recommend_product")
TERMINAL_TOOL = "recommend_product"
SEARCH_MODES = ("hybrid", "fts", "vector", "original")
PAGE_SIZE = 20
MAX_IDS = 10
REVIEW_LIMIT = 5


def _object(properties: dict, required: list[str]) -> dict:
    return {"type": "object", "properties": properties, "required": required}


# ---------------------------------------------------------------------------------------------------------
# The schemas, text copied from docs/original-harness.md §2.2
# ---------------------------------------------------------------------------------------------------------

TOOL_DESCRIPTIONS: dict[str, str] = {
    "search_products": "Search the product catalog by text query. Only searches product TITLES (not descriptions, "
                       "features, or attributes). Uses BM25 ranking. Returns up to 20 results per page with "
                       "product_id and title.",
    "filter_by_attribute": "Filter candidate products by a structured detail attribute using case-insensitive "
                           "substring matching. Use the canonical detail key name exactly as stored in the catalog "
                           "(e.g. 'Brand', 'Material', 'Compatible Phone Models', 'Connector Type'). Only filters "
                           "within the provided candidate set (max 10 products). Does NOT search the full catalog.",
    "get_product_details": "Get full structured details of a single product, including title, store, price, "
                           "structured detail attributes, and feature descriptions. Does NOT include rating or "
                           "review data.",
    "get_review_content": "Search product reviews by text query for a specific product. Returns the top 5 most "
                          "relevant reviews with full content including rating, title, text.",
    "get_product_review_stats": "Get rating statistics for one or more products (max 10). Returns only product_id, "
                                "average_rating, and rating_number. Does NOT return review text content.",
    "get_store_products": "Get products from a specific store. Returns up to 20 results per page with product_id "
                          "and title.",
    "get_user_profile": "Retrieve the current user's profile including demographics, lifestyle, shopping habits, "
                        "and any product-specific requirements (e.g. skin type, preferred size, brand preference). "
                        "Call this to discover implicit needs that the user hasn't stated in their query.",
    "ask_user": "Ask the user a clarifying question to gather information. The number of chars in question must "
                "be under 100, otherwise the tool will return error. You can only ask user up to 10 turns.",
    "python_execute": "Run short Python code for calculations or lightweight text/data transformation when other "
                      "tools are not enough. Returns printed stdout only. Limited to a small set of safe built-in "
                      "modules.",
    "recommend_product": "Submit your final product recommendation. Call this only when you have enough evidence. "
                         "This ends the search process.",
}

TOOL_PARAMETERS: dict[str, dict] = {
    "search_products": _object({
        "query": {"type": "string", "description": "Search query text"},
        "page": {"type": "integer", "description": "Page number (0-indexed). Page 0 returns the first 20 results, "
                                                   "page 1 returns results 21-40, etc.", "default": 0},
    }, ["query"]),
    "filter_by_attribute": _object({
        "product_ids": {"type": "array", "items": {"type": "string"}, "description": "Product IDs to filter (max 10)",
                        "maxItems": 10},
        "attribute_name": {"type": "string", "description": "Canonical attribute key to filter on, such as 'Brand', "
                                                            "'Item Form', 'Hair Type', or 'Skin Type'"},
        "attribute_value": {"type": "string", "description": "The attribute value to match (case-insensitive)"},
    }, ["product_ids", "attribute_name", "attribute_value"]),
    "get_product_details": _object({
        "product_id": {"type": "string", "description": "Product ID to retrieve"},
    }, ["product_id"]),
    "get_review_content": _object({
        "query": {"type": "string", "description": "Search query for review content"},
        "product_id": {"type": "string", "description": "Product ID to search reviews for"},
    }, ["query", "product_id"]),
    "get_product_review_stats": _object({
        "product_ids": {"type": "array", "items": {"type": "string"},
                        "description": "Product IDs to retrieve rating info for (max 10)", "maxItems": 10},
    }, ["product_ids"]),
    "get_store_products": _object({
        "store_name": {"type": "string", "description": "Exact store name"},
        "page": {"type": "integer", "description": "Page number (0-indexed)", "default": 0},
    }, ["store_name"]),
    "get_user_profile": _object({}, []),
    "ask_user": _object({
        "question": {"type": "string", "description": "The question to ask the user"},
    }, ["question"]),
    "python_execute": _object({
        "code": {"type": "string", "description": "Python code to execute"},
    }, ["code"]),
    "recommend_product": _object({
        "product_id": {"type": "string", "description": "Product ID to recommend"},
        "reasoning": {"type": "string", "description": "Brief explanation of why this product is recommended"},
    }, ["product_id", "reasoning"]),
}


def tool_schemas(names: tuple[str, ...] | list[str] = TOOL_ORDER) -> list[dict]:
    """OpenAI function schemas in TOOL_ORDER (fresh copies: callers may adapt them freely)."""
    unknown = [n for n in names if n not in TOOL_DESCRIPTIONS]
    if unknown:
        raise ValueError(f"unknown tool name(s) {unknown}; expected names from {list(TOOL_ORDER)}")
    return [{"type": "function", "function": {"name": n, "description": TOOL_DESCRIPTIONS[n],
                                              "parameters": copy.deepcopy(TOOL_PARAMETERS[n])}}
            for n in names]


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
    error_kind: str | None = None          # invalid_json | unknown_tool | call_failed | tool_error

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
# The per-episode toolbox
# ---------------------------------------------------------------------------------------------------------

@dataclass
class ToolBox:
    """The tools of one episode: a fresh user state per instance, like the original's per-sample tools."""

    catalog: CatalogReader
    task: schema.Task
    _: KW_ONLY
    search_mode: str = "hybrid"
    user_matcher: str = "original"
    sandbox: sandbox_mod.Sandbox | None = None
    history: list[ToolResult] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.search_mode not in SEARCH_MODES:
            raise ValueError(f"unknown search_mode {self.search_mode!r}; expected one of {list(SEARCH_MODES)}")
        self.user = ScriptedUser(self.task.clarification_script, matcher=self.user_matcher)
        self._handlers = {
            "search_products": self._search_products,
            "filter_by_attribute": self._filter_by_attribute,
            "get_product_details": self._get_product_details,
            "get_review_content": self._get_review_content,
            "get_product_review_stats": self._get_product_review_stats,
            "get_store_products": self._get_store_products,
        }

    @staticmethod
    def schemas() -> list[dict]:
        return tool_schemas()

    async def call(self, name: str, arguments_json: str | dict | None) -> ToolResult:
        """Execute one tool call; never raises for anything the agent sent."""
        started = time.perf_counter()
        result = await self._dispatch(name, arguments_json)
        result.latency_s = time.perf_counter() - started
        self.history.append(result)
        return result

    async def _dispatch(self, name: str, arguments_json: str | dict | None) -> ToolResult:
        try:
            params = self._parse_arguments(arguments_json)
        except json.JSONDecodeError as exc:
            return ToolResult(name, None, {"error": f"Invalid tool arguments JSON: {exc}"}, is_error=True,
                              terminal=name == TERMINAL_TOOL, error_kind="invalid_json")
        result = ToolResult(name, params, {}, terminal=name == TERMINAL_TOOL)
        if name not in TOOL_DESCRIPTIONS:
            result.content, result.is_error, result.error_kind = {"error": f"Unknown tool: {name}"}, True, "unknown_tool"
            return result
        try:
            if not isinstance(params, dict):
                raise ToolArgumentError(f"arguments must be a JSON object, got {type(params).__name__}")
            result.content = await self._run(name, params, result)
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

    async def _run(self, name: str, params: dict, result: ToolResult) -> dict:
        if name == "search_products" and (cached := self._cached_search_products(params)) is not None:
            return cached
        if name in self._handlers:  # catalog-backed: may block (LanceDB), keep the event loop free
            return await asyncio.to_thread(self._handlers[name], params)
        if name == "get_user_profile":
            return profile_response(self.task.user_persona)
        if name == "ask_user":
            question = params["question"]
            answer = self.user.ask(question if isinstance(question, str) else json.dumps(question))
            result.revealed_slot_id = self.user.log[-1].slot_id
            return answer
        if name == "python_execute":
            code = params["code"]
            box = self.sandbox or sandbox_mod.default_sandbox()
            return await box.run_code_async(code)
        return await asyncio.to_thread(self._recommend_product, params, result)

    # -- catalog-backed handlers (run in a worker thread) ---------------------------------------------

    def _search_products(self, params: dict) -> dict:
        query, page = _search_args(params)
        hits = self.catalog.search(query, limit=PAGE_SIZE, offset=page * PAGE_SIZE, mode=self.search_mode)
        return search_answer(hits, page)

    def _cached_search_products(self, params: dict) -> dict | None:
        """search_products' answer from the catalog's page cache, on the event loop, or None: a page already
        computed (a repeated search, a warmed first query) never queues behind the tool threads' searches
        (docs/decisions.md#page-cache). Arguments it cannot read go the thread path, which reports them."""
        cached_search = getattr(self.catalog, "cached_search", None)
        if cached_search is None:
            return None
        try:
            query, page = _search_args(params)
        except Exception:
            return None
        hits = cached_search(query, limit=PAGE_SIZE, offset=page * PAGE_SIZE, mode=self.search_mode)
        return None if hits is None else search_answer(hits, page)

    def _filter_by_attribute(self, params: dict) -> dict:
        ids = _id_list(params, "product_ids")
        name, value = str(params["attribute_name"]), str(params["attribute_value"])
        products = self.catalog.get_products(ids)
        return {"product_ids": [p.product_id for p in products if attribute_matches(p.details, name, value)]}

    def _get_product_details(self, params: dict) -> dict:
        pid = str(params["product_id"])
        product = self.catalog.get_product(pid)
        if product is None:
            return {"error": f"Product {pid} not found"}
        return {"product": {"product_id": product.product_id, "title": product.title,
                            "main_category": product.main_category, "store": product.store,
                            "price": product.price, "features": list(product.features),
                            "description": list(product.description), "details": dict(product.details),
                            "bought_together": None}}

    def _get_review_content(self, params: dict) -> dict:
        query, pid = str(params["query"]), str(params["product_id"])
        # Keyword search modes keep review search keyword-only too (original: the harness's FTS5 phrase
        # AND over title + text); the semantic modes search reviews by BM25 + embedding (hybrid).
        mode = self.search_mode if self.search_mode in ("original", "fts") else "hybrid"
        reviews = self.catalog.search_reviews(pid, query, limit=REVIEW_LIMIT, mode=mode)
        if not reviews:
            return {"reviews": [], "message": "No matching reviews found"}
        return {"reviews": [{"product_id": r.product_id, "rating": r.rating, "title": r.title, "text": r.text}
                            for r in reviews]}

    def _get_product_review_stats(self, params: dict) -> dict:
        products = self.catalog.get_products(_id_list(params, "product_ids"))
        return {"products": [{"product_id": p.product_id, "average_rating": p.average_rating,
                              "rating_number": p.rating_number} for p in products]}

    def _get_store_products(self, params: dict) -> dict:
        store, page = str(params["store_name"]), _page(params)
        hits = self.catalog.store_products(store, limit=PAGE_SIZE, offset=page * PAGE_SIZE)
        return {"store": store, "products": [{"product_id": h.product_id, "title": h.title} for h in hits.hits],
                "page": page, "total_count": hits.total}

    def _recommend_product(self, params: dict, result: ToolResult) -> dict:
        pid = params["product_id"]
        reasoning = params.get("reasoning", "")
        product = self.catalog.get_product(str(pid)) if isinstance(pid, (str, int)) else None
        result.recommended_id = str(pid) if pid is not None else None
        result.valid_recommendation = product is not None
        return {"recommended_product": {"product_id": product.product_id, "title": product.title} if product else None,
                "reasoning": reasoning if isinstance(reasoning, str) else json.dumps(reasoning)}

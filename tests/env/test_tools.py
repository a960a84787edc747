"""The 10 tools: schemas as the original sends them, the ToolBox's error handling and each handler."""
from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

from ecab import schema
from ecab.catalog.base import CatalogReader, SearchHit, SearchPage
from ecab.env import tools
from ecab.env.tools import TOOL_ORDER, ToolBox, tool_schemas
from sandbox_support import new_box

HARNESS_DOC = Path(__file__).resolve().parents[2] / "docs" / "original-harness.md"


class FakeCatalog:
    """A tiny in-memory CatalogReader: title search is an AND of lowercase words, like mode 'original'."""

    fingerprint = "fake-1"

    def __init__(self, products: list[schema.Product], reviews: list[schema.Review]):
        self.products = {p.product_id: p for p in products}
        self.reviews = reviews
        self.search_calls: list[dict] = []
        self.review_modes: list[str | None] = []

    def count(self):
        return len(self.products)

    def get_product(self, product_id):
        return self.products.get(product_id)

    def get_products(self, product_ids):
        return [self.products[i] for i in product_ids if i in self.products]

    def get_reviews(self, product_id, limit=20):
        return [r for r in self.reviews if r.product_id == product_id][:limit]

    def search_reviews(self, product_id, query, limit=5, *, mode=None):
        self.review_modes.append(mode)
        words = query.lower().split()
        hits = [r for r in self.reviews if r.product_id == product_id
                and words and all(w in (r.title + " " + r.text).lower() for w in words)]
        return hits[:limit]

    def search(self, query, *, limit=20, offset=0, mode=None, where=None):
        self.search_calls.append({"query": query, "limit": limit, "offset": offset, "mode": mode})
        words = re.findall(r"\w+", query.lower())
        matches = [p for p in self.products.values() if words and all(w in p.title.lower() for w in words)]
        return SearchPage([SearchHit(p.product_id, p.title) for p in matches[offset:offset + limit]], len(matches))

    def store_products(self, store, *, limit=20, offset=0):
        matches = [p for p in self.products.values() if p.store == store]
        return SearchPage([SearchHit(p.product_id, p.title) for p in matches[offset:offset + limit]], len(matches))

    def iter_products(self, batch_size=1024):
        items = list(self.products.values())
        for i in range(0, len(items), batch_size):
            yield items[i:i + batch_size]


def product(pid, title, store="Acme", details=None, **kw):
    return schema.Product(product_id=pid, title=title, store=store, main_category="Computers",
                          details=details or {}, average_rating=kw.pop("average_rating", 4.5),
                          rating_number=kw.pop("rating_number", 100), price=kw.pop("price", 19.99),
                          features=["fast"], description=["a laptop"], **kw)


PRODUCTS = [
    product("L1", "Acme Laptop 14 inch", details={"OS": "Windows 11 Home", "Brand": "Acme"}),
    product("L2", "Acme Laptop 15 inch", details={"Operating System": "Chrome OS", "Material Type": "Aluminum"}),
    product("L3", "Zeta Laptop Pro", store="Zeta", details={"operating system": "macOS", "Colour": "Grey"}),
    *[product(f"C{i:02d}", f"Phone Case model {i}", store="Casey", details={"Material": ["TPU", "Silicone"]})
      for i in range(25)],
]
REVIEWS = [
    schema.Review(review_id=1, product_id="L1", rating=5.0, title="Great battery", text="Battery lasts all day"),
    schema.Review(review_id=2, product_id="L1", rating=2.0, title="Loud fan", text="The fan is loud"),
    schema.Review(review_id=3, product_id="L2", rating=4.0, title="Battery ok", text="battery is fine"),
]

TASK = schema.Task.from_dict({
    "id": "t1", "intent_category": "product_search", "user_query": "a laptop",
    "user_persona": {"user_id": "U1", "demographics": {}, "lifestyle": {}, "shopping_habits": {},
                     "product_requirements": {"brand": "Acme"}},
    "clarification_script": {"clarification_slots": [
        {"slot_id": "cl_1", "linked_rubric_ids": [], "hidden_info": "", "trigger_keywords": ["color"],
         "user_response": "Grey please.", "revealed": False}], "max_clarification_turns": 2},
    "target_product": PRODUCTS[0].target_view(), "rubrics": [],
})


@pytest.fixture
def catalog():
    return FakeCatalog(PRODUCTS, REVIEWS)


@pytest.fixture
def box(catalog):
    return ToolBox(catalog, TASK)


def call(box, name, args):
    return asyncio.run(box.call(name, args if isinstance(args, str) else json.dumps(args)))


# ---------------------------------------------------------------------------------------------------------
# Schemas
# ---------------------------------------------------------------------------------------------------------

def doc_tool_sections() -> dict[str, str]:
    """docs/original-harness.md §2.2: one `#### Tool N: `name`` section per tool, in the original's order."""
    text = HARNESS_DOC.read_text(encoding="utf-8")
    parts = re.split(r"^#### Tool \d+: `(\w+)`.*$", text, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def test_schema_order_and_shape():
    schemas = tool_schemas()
    assert [s["function"]["name"] for s in schemas] == list(TOOL_ORDER)
    assert len(TOOL_ORDER) == 10
    for s in schemas:
        assert s["type"] == "function" and set(s["function"]) == {"name", "description", "parameters"}
        params = s["function"]["parameters"]
        assert params["type"] == "object" and set(params["required"]) <= set(params["properties"])
    assert isinstance(CatalogReader, type)


def test_descriptions_match_the_documented_text():
    sections = doc_tool_sections()
    assert list(sections) == list(TOOL_ORDER)
    for name in TOOL_ORDER:
        match = re.search(r"^> (.*)$", sections[name], flags=re.M)
        assert match and tools.TOOL_DESCRIPTIONS[name] == match.group(1), name


def test_parameter_schemas_match_the_documented_json():
    sections = doc_tool_sections()
    for name in TOOL_ORDER:
        documented = json.loads(re.search(r"^```json\n(.*?)^```$", sections[name], flags=re.M | re.S).group(1))
        assert tools.TOOL_PARAMETERS[name] == documented, name


def test_schema_copies_are_independent():
    first = tool_schemas()
    first[0]["function"]["parameters"]["properties"].clear()
    assert tool_schemas()[0]["function"]["parameters"]["properties"]


# ---------------------------------------------------------------------------------------------------------
# Error paths (docs/original-harness.md §2.1)
# ---------------------------------------------------------------------------------------------------------

def test_invalid_json(box):
    result = call(box, "search_products", '{"query": ')
    assert result.content["error"].startswith("Invalid tool arguments JSON: Expecting value")
    assert result.is_error and result.arguments is None and result.error_kind == "invalid_json"


def test_unknown_tool(box):
    result = call(box, "buy_now", {"x": 1})
    assert result.content == {"error": "Unknown tool: buy_now"} and result.is_error


def test_missing_key_reads_like_keyerror(box):
    assert call(box, "search_products", {}).content == {"error": "Tool call failed: 'query'"}
    assert call(box, "ask_user", {"q": "x"}).content == {"error": "Tool call failed: 'question'"}
    assert call(box, "python_execute", {}).content == {"error": "Tool call failed: 'code'"}


def test_non_object_arguments_and_bad_types(box):
    assert call(box, "search_products", "[1]").content == {
        "error": "Tool call failed: arguments must be a JSON object, got list"}
    assert "product_ids must be a list" in call(box, "get_product_review_stats", {"product_ids": "L1"}).content["error"]
    assert "page must be an integer" in call(box, "search_products", {"query": "x", "page": "two"}).content["error"]


def test_empty_arguments_mean_no_arguments(box):
    result = call(box, "get_user_profile", "")
    assert not result.is_error and result.content["profile"]["user_id"] == "U1"


# ---------------------------------------------------------------------------------------------------------
# Handlers
# ---------------------------------------------------------------------------------------------------------

def test_search_products_pages_and_true_total(box, catalog):
    first = call(box, "search_products", {"query": "phone case"}).content
    assert len(first["products"]) == 20 and first["page"] == 0 and first["total_found"] == 25
    assert set(first["products"][0]) == {"product_id", "title"}
    second = call(box, "search_products", {"query": "phone case", "page": 1}).content
    assert [p["product_id"] for p in second["products"]] == [f"C{i:02d}" for i in range(20, 25)]
    assert second["total_found"] == 25  # the original would report min(25, 40) = 25, and 20 on page 0
    negative = call(box, "search_products", {"query": "phone case", "page": -3}).content
    assert negative["page"] == 0
    assert catalog.search_calls[1] == {"query": "phone case", "limit": 20, "offset": 20, "mode": "hybrid"}
    assert call(box, "search_products", {"query": "nothing matches"}).content == {
        "products": [], "page": 0, "total_found": 0}


def test_search_mode_is_passed_through(catalog):
    box = ToolBox(catalog, TASK, search_mode="original")
    call(box, "search_products", {"query": "laptop"})
    assert catalog.search_calls[-1]["mode"] == "original"
    with pytest.raises(ValueError, match="unknown search_mode"):
        ToolBox(catalog, TASK, search_mode="magic")


@pytest.mark.parametrize("attribute_name", ["Operating System", "operating system", "OS", "os"])
def test_filter_resolves_aliases(box, attribute_name):
    ids = ["L1", "L2", "L3", "missing"]
    result = call(box, "filter_by_attribute", {"product_ids": ids, "attribute_name": attribute_name,
                                                "attribute_value": "WINDOWS"})
    assert result.content == {"product_ids": ["L1"]}
    result = call(box, "filter_by_attribute", {"product_ids": ids, "attribute_name": attribute_name,
                                                "attribute_value": "os"})
    assert result.content == {"product_ids": ["L2", "L3"]}  # "Chrome OS", "macOS"; input order kept


def test_filter_material_alias_list_values_and_limit(box):
    result = call(box, "filter_by_attribute", {"product_ids": ["L2", "L1"], "attribute_name": "Material",
                                                "attribute_value": "alum"})
    assert result.content == {"product_ids": ["L2"]}  # found under "Material Type"
    ids = [f"C{i:02d}" for i in range(12)]
    result = call(box, "filter_by_attribute", {"product_ids": ids, "attribute_name": "material",
                                                "attribute_value": "silicone"})
    assert result.content == {"product_ids": ids[:10]}  # str(list) is searched; only the first 10 ids used
    result = call(box, "filter_by_attribute", {"product_ids": ["L1"], "attribute_name": "Voltage",
                                                "attribute_value": ""})
    assert result.content == {"product_ids": []}  # an absent detail never matches


def test_get_product_details(box):
    content = call(box, "get_product_details", {"product_id": "L1"}).content
    assert list(content["product"]) == ["product_id", "title", "main_category", "store", "price", "features",
                                        "description", "details", "bought_together"]
    assert content["product"]["bought_together"] is None and content["product"]["details"]["OS"] == "Windows 11 Home"
    missing = call(box, "get_product_details", {"product_id": "NOPE"})
    assert missing.content == {"error": "Product NOPE not found"} and missing.is_error


def test_get_review_content_only_that_product(box):
    content = call(box, "get_review_content", {"query": "battery", "product_id": "L1"}).content
    assert content == {"reviews": [{"product_id": "L1", "rating": 5.0, "title": "Great battery",
                                    "text": "Battery lasts all day"}]}
    assert call(box, "get_review_content", {"query": "screen", "product_id": "L1"}).content == {
        "reviews": [], "message": "No matching reviews found"}


@pytest.mark.parametrize("search_mode, review_mode", [("original", "original"), ("fts", "fts"),
                                                      ("hybrid", "hybrid"), ("vector", "hybrid")])
def test_review_search_follows_the_search_mode(catalog, search_mode, review_mode):
    box = ToolBox(catalog, TASK, search_mode=search_mode)
    call(box, "get_review_content", {"query": "battery", "product_id": "L1"})
    assert catalog.review_modes == [review_mode]


def test_review_stats_and_store_products(box):
    content = call(box, "get_product_review_stats", {"product_ids": ["L3", "nope", "L1"]}).content
    assert content == {"products": [{"product_id": "L3", "average_rating": 4.5, "rating_number": 100},
                                    {"product_id": "L1", "average_rating": 4.5, "rating_number": 100}]}
    store = call(box, "get_store_products", {"store_name": "Casey", "page": 1}).content
    assert store["store"] == "Casey" and store["page"] == 1 and store["total_count"] == 25
    assert len(store["products"]) == 5
    assert call(box, "get_store_products", {"store_name": "casey"}).content["total_count"] == 0


def test_profile_and_ask_user_turn_accounting(catalog, box):
    assert call(box, "get_user_profile", {}).content["profile"]["product_requirements"] == {"brand": "Acme"}
    first = call(box, "ask_user", {"question": "Which color?"})
    assert first.content == {"user_response": "Grey please.", "turns_remaining": 1}
    assert first.revealed_slot_id == "cl_1"
    too_long = call(box, "ask_user", {"question": "x" * 101})
    assert too_long.content["turns_remaining"] == 0 and too_long.revealed_slot_id is None
    assert call(box, "ask_user", {"question": "color?"}).content["turns_remaining"] == 0
    assert box.user.turns_used == 3 and box.user.revealed_slot_ids == ["cl_1"]
    assert TASK.clarification_script.clarification_slots[0].revealed is False
    fresh = ToolBox(catalog, TASK)  # a new episode starts over
    assert call(fresh, "ask_user", {"question": "color?"}).content["turns_remaining"] == 1


@pytest.fixture
def sandbox_here():
    """python_execute needs a working sandbox: one clear skip without bubblewrap (a failure under CI=true)."""
    new_box().close()


def test_python_execute_through_toolbox(box, sandbox_here):
    ok = call(box, "python_execute", {"code": "import math\nprint(math.sqrt(16))"})
    assert ok.content == {"output": "4.0\n", "error": None} and not ok.is_error
    bad = call(box, "python_execute", {"code": "open('/etc/passwd')"})
    assert bad.is_error and bad.content["error"].startswith("Tool call failed: NameError")
    queued, ran = ok.sandbox_timing     # the wait for a slot apart from the run, for the step (issue 30)
    assert queued >= 0 and ran > 0 and ok.content.keys() == {"output", "error"}, "the agent sees neither"


def test_a_python_execute_step_records_its_wait_apart_from_its_run(box, sandbox_here):
    from ecab.agents.base import ScriptedAgent
    from ecab.env.episode import EpisodeSettings, run_episode

    class Calculates(ScriptedAgent):
        def plan(self):
            yield "python_execute", {"code": "print(2 ** 10)"}
            yield "recommend_product", {"product_id": "L2", "reasoning": "x"}

    traj = asyncio.run(run_episode(TASK, Calculates(), box, EpisodeSettings(budget=5)))
    executed, recommended = traj.steps
    assert executed.sandbox_run_s > 0 and executed.sandbox_queued_s >= 0
    assert executed.tool_latency_s >= executed.sandbox_run_s
    assert recommended.sandbox_run_s is None and "sandbox_run_s" not in recommended.to_dict(), "only where it ran"


def test_recommend_product(box):
    good = call(box, "recommend_product", {"product_id": "L2", "reasoning": "matches"})
    assert good.content == {"recommended_product": {"product_id": "L2", "title": "Acme Laptop 15 inch"},
                            "reasoning": "matches"}
    assert good.terminal and good.valid_recommendation and good.predicted_product_id == "L2"
    bad = call(box, "recommend_product", {"product_id": "NOPE", "reasoning": "guess"})
    assert bad.content == {"recommended_product": None, "reasoning": "guess"}
    assert bad.terminal and not bad.valid_recommendation and bad.recommended_id == "NOPE"
    assert bad.predicted_product_id is None and not bad.is_error
    broken = call(box, "recommend_product", "{oops")
    assert broken.terminal and broken.is_error  # any recommend_product call ends the episode


def test_results_recorded_with_latency(box):
    result = call(box, "get_product_details", {"product_id": "L1"})
    assert box.history[-1] is result and result.latency_s > 0
    assert json.loads(result.content_json) == result.content


def test_concurrent_episodes_share_one_loop(catalog, sandbox_here):
    async def episode(i):
        box = ToolBox(catalog, TASK)
        a = await box.call("ask_user", json.dumps({"question": "color?"}))
        b = await box.call("python_execute", json.dumps({"code": f"print({i} * 2)"}))
        c = await box.call("search_products", json.dumps({"query": "laptop"}))
        return a.content["turns_remaining"], b.content["output"], c.content["total_found"]

    async def main():
        return await asyncio.gather(*(episode(i) for i in range(30)))

    assert asyncio.run(main()) == [(1, f"{i * 2}\n", 3) for i in range(30)]


def test_real_task_toolbox(catalog, released_samples):
    task = next(t for t in schema.read_tasks(released_samples) if t.id == "v3_sample_0001")
    box = ToolBox(catalog, task)
    profile = call(box, "get_user_profile", {}).content["profile"]
    assert profile == task.user_persona.to_dict() and profile["user_id"] == "U_62534"
    answer = call(box, "ask_user", {"question": "What material do you prefer?"})
    assert answer.revealed_slot_id == "cl_1" and answer.content["turns_remaining"] == 9


# ---------------------------------------------------------------------------------------------------------
# Against the real LanceDB catalog (built once for this module, real embeddings)
# ---------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def lance_catalog(tmp_path_factory):
    from ecab.catalog.base import CatalogBatch
    from ecab.catalog.embed import get_embedder
    from ecab.catalog.facade import Catalog
    from ecab.catalog.writer import build_catalog

    path = build_catalog([CatalogBatch(PRODUCTS, REVIEWS)], tmp_path_factory.mktemp("tools") / "catalog",
                         embedder=get_embedder(), fingerprint="tools-test", progress=False)
    return Catalog.open(path)


def test_real_catalog_is_a_catalog_reader(lance_catalog):
    assert isinstance(lance_catalog, CatalogReader) and lance_catalog.count() == len(PRODUCTS)


def test_real_catalog_search_original_and_hybrid(lance_catalog):
    box = ToolBox(lance_catalog, TASK, search_mode="original")
    page1 = call(box, "search_products", {"query": "Phone Case", "page": 1}).content
    assert page1["total_found"] == 25 and page1["page"] == 1 and len(page1["products"]) == 5
    assert call(box, "search_products", {"query": "phone cases"}).content["total_found"] == 0  # no stemming
    hybrid = ToolBox(lance_catalog, TASK)
    found = call(hybrid, "search_products", {"query": "laptop"}).content
    assert found["products"] and found["products"][0]["product_id"] in {"L1", "L2", "L3"}
    assert found["total_found"] >= len(found["products"])


def test_a_cached_search_page_is_answered_on_the_loop_without_a_tool_thread(lance_catalog, monkeypatch):
    """A page the catalog already holds (a repeat, a warmed first query) does not queue behind the tool threads
    (docs/decisions.md#page-cache); the answer is the one the thread path gives."""
    box = ToolBox(lance_catalog, TASK)
    args = {"query": "phone case", "page": 1}
    lance_catalog.clear_caches()
    first = call(box, "search_products", args).content                 # a miss: searched in a tool thread
    threads = []
    real_to_thread = asyncio.to_thread
    monkeypatch.setattr(asyncio, "to_thread", lambda *a, **k: threads.append(a) or real_to_thread(*a, **k))
    assert call(box, "search_products", args).content == first and threads == []
    assert lance_catalog.search_cache_stats() == {"hits": 1, "misses": 1}
    call(box, "search_products", {"query": "phone case", "page": 2})    # not cached: the thread path
    assert len(threads) == 1
    bad = call(box, "search_products", {"query": "phone case", "page": "two"})   # unreadable: the thread path says so
    assert bad.is_error and "page must be an integer" in json.dumps(bad.content) and len(threads) == 2


def test_real_catalog_handlers(lance_catalog):
    box = ToolBox(lance_catalog, TASK)
    details = call(box, "get_product_details", {"product_id": "L1"}).content["product"]
    assert details["details"] == {"OS": "Windows 11 Home", "Brand": "Acme"} and details["bought_together"] is None
    assert call(box, "filter_by_attribute", {"product_ids": ["L1", "L2", "L3"], "attribute_name": "Operating System",
                                             "attribute_value": "windows"}).content == {"product_ids": ["L1"]}
    reviews = call(box, "get_review_content", {"query": "battery", "product_id": "L1"}).content["reviews"]
    assert reviews and {r["product_id"] for r in reviews} == {"L1"}
    assert set(reviews[0]) == {"product_id", "rating", "title", "text"}
    stats = call(box, "get_product_review_stats", {"product_ids": ["L2", "zz"]}).content
    assert stats == {"products": [{"product_id": "L2", "average_rating": 4.5, "rating_number": 100}]}
    store = call(box, "get_store_products", {"store_name": "Casey"}).content
    assert store["total_count"] == 25 and len(store["products"]) == 20
    assert call(box, "recommend_product", {"product_id": "L3", "reasoning": "r"}).valid_recommendation
    assert call(box, "recommend_product", {"product_id": "L9", "reasoning": "r"}).content["recommended_product"] is None

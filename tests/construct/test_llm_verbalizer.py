"""The optional LLM verbalizer (`construct.verbalizer=llm`, ecab/construct/llm_verbalizer.py) against ecab's
simulator over real HTTP (model=sim: construction starts it), on the session `small_catalog` of conftest.py.

It may rephrase the user query only: rubrics, persona and clarification stay those of the template build;
a reply that drops a required phrase or leaks a hidden value falls back to the template query; replies are
cached, so a rebuild calls no model and is byte-identical; a missing API key fails before any work.
"""
from __future__ import annotations

import json
import random
import urllib.request

import pytest

from ecab.config import ConfigError
from ecab.construct import llm_verbalizer
from ecab.construct import sim_policy as verbalizer_policy
from ecab.construct.benchmark_cache import benchmark_fingerprint
from ecab.construct.benchmark_folder import BENCHMARK_FILE, REJECTED_FILE, REJECTIONS_TABLE
from ecab.construct.candidate import Skip, choose_verbalizer, run_stages
from ecab.construct.catalog_scan import scan_catalog
from ecab.construct.draft import Draft
from ecab.construct.pipeline import construct
from ecab.construct.settings import construct_settings
from ecab.construct.validate import rubric_lock, validate_draft
from ecab.construct.verbalize import verbalize as template_verbalize
from ecab.core.seeds import task_rng

# Implicit clues (product_search), negatives (negative_constraint) and vouchers with numbers (coupon_budget).
INTENTS = ["product_search", "negative_constraint", "coupon_budget"]
N = 2


def cfg(verbalizer: str = "template", workers: int = 1, **llm) -> dict:
    return {"construct": {"seed": 0, "n_per_intent": N, "intents": INTENTS, "max_matches": 3, "workers": workers,
                          "max_attempts": 3, "verbalizer": verbalizer,
                          "llm": {"model": "sim", "temperature": 0.0, "max_attempts": 2, "cache": True, **llm}}}


def sim_requests(conf: dict) -> int:
    """Requests the build's simulator has answered so far (its /v1/sim/stats endpoint)."""
    from ecab.construct.settings import construct_settings, serve_verbalizer
    # the same server every build of this process uses (started by the build, not by reading the config)
    base_url = serve_verbalizer(construct_settings(conf)).llm.model.base_url
    with urllib.request.urlopen(f"{base_url}/sim/stats", timeout=10) as response:
        return json.loads(response.read())["requests"]


def task_rows(out) -> list[dict]:
    return [json.loads(line) for line in (out / BENCHMARK_FILE).read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def template_build(small_catalog, tmp_path_factory):
    out = tmp_path_factory.mktemp("template") / "bench"
    return construct(cfg(), small_catalog, out_dir=out, progress=False), out


@pytest.fixture(scope="module")
def llm_conf(tmp_path_factory) -> dict:
    return cfg("llm", workers=2, cache_dir=str(tmp_path_factory.mktemp("verbalizer_cache")))


@pytest.fixture(scope="module")
def llm_build(small_catalog, tmp_path_factory, llm_conf):
    """Built by one spawned worker alone (parent_builds=False): it reaches the parent's simulator by the URL
    in Settings. Returns (result, out folder, requests the simulator answered during the build)."""
    out = tmp_path_factory.mktemp("llm") / "bench"
    before = sim_requests(llm_conf)
    result = construct(llm_conf, small_catalog, out_dir=out, progress=False, parent_builds=False)
    return result, out, sim_requests(llm_conf) - before


# ---------------------------------------------------------------------------------------------------------
# (a) only the query changes
# ---------------------------------------------------------------------------------------------------------

def test_llm_build_rephrases_queries_and_leaves_every_rubric_as_the_template_build(template_build, llm_build):
    (template, template_out), (llm, llm_out, requests) = template_build, llm_build
    assert set(llm.built_by) == {"workers"}                   # no candidate was built in the parent
    assert requests >= len(llm.tasks) > 0                     # the worker called the simulator over HTTP
    assert [t.id for t in llm.tasks] == [t.id for t in template.tasks]
    assert len(llm.tasks) == N * len(INTENTS)
    assert all(t.sample_status == "ok" and t.validation_passed for t in llm.tasks)
    for before, after in zip(task_rows(template_out), task_rows(llm_out)):
        assert after["user_query"] != before["user_query"], after["id"]
        provenance = after["generation_artifacts"].pop("verbalizer")    # the audit trail of the rewrite
        assert provenance["verbalizer"] == "llm" and provenance["template_query"] == before["user_query"]
        for row in (before, after):
            row.pop("user_query")
        # rubrics (ids, types, fields, expected values, sources, surfaces), persona, clarification, target...
        assert after == before
        for rubric in after["rubrics"]:
            if rubric["info_source"] == "query":
                assert rubric["query_surface"] in next(t.user_query for t in llm.tasks if t.id == after["id"])


def test_fingerprint_keys_on_the_llm_model_only_when_it_verbalizes(small_catalog, monkeypatch, llm_conf):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    template_fp = benchmark_fingerprint(cfg(), small_catalog)
    sim_fp = benchmark_fingerprint(llm_conf, small_catalog)
    gpt_fp = benchmark_fingerprint(cfg("llm", model="gpt-5-mini"), small_catalog)
    assert len({template_fp, sim_fp, gpt_fp}) == 3
    assert "llm" not in construct_settings(cfg()).fingerprint_fields()
    assert construct_settings(cfg("llm", model="gpt-5-mini")).fingerprint_fields()["llm"]["model_id"] == "gpt-5-mini"
    # reasoning models get no temperature, as in the LLM judge
    assert construct_settings(cfg("llm", model="gpt-5-mini")).llm.model.temperature is None
    # the worker count and the cache location never change the benchmark
    assert benchmark_fingerprint(cfg("llm", workers=1, cache_dir="/elsewhere"), small_catalog) == sim_fp


# ---------------------------------------------------------------------------------------------------------
# (b) a bad rewrite falls back to the template query
# ---------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def leaky_candidate(small_catalog):
    """(intent, index, product id, value pools) of a candidate whose draft has a hidden (persona or
    clarification) string value, so a reply can leak it."""
    settings = construct_settings(cfg())
    scan = scan_catalog(small_catalog, settings)
    for intent in INTENTS:
        for index, pid in enumerate(scan.candidates[intent][:20]):
            draft = staged_draft(small_catalog, intent, index, pid, scan.knowledge)
            if draft is not None and hidden_values(draft) and template_validates(draft, small_catalog, index):
                return intent, index, pid, scan.knowledge
    pytest.fail("no candidate with a hidden value in the small catalog")


def template_validates(draft: Draft, catalog, index: int) -> bool:
    """Whether the template verbalizer's text for this draft passes validation (a candidate the pipeline
    would accept)."""
    import copy

    trial = copy.deepcopy(draft)
    template_verbalize(trial, task_rng(0, trial.intent, index, 0))
    validate_draft(trial, catalog, max_matches=3)
    return trial.rejection is None


def staged_draft(catalog, intent: str, index: int, pid: str, pools) -> Draft | None:
    """A draft after the rubric stages and the lock, before any text (as build_candidate makes it)."""
    draft = Draft(sample_id=f"ecab_{intent}_{index + 1:04d}", intent=intent, product=catalog.get_product(pid))
    try:
        run_stages(draft, task_rng(0, intent, index, 0), pools, catalog=catalog, load_bearing_only=True)
    except Skip:
        return None
    draft.meta["rubric_lock"] = rubric_lock(draft.rubrics)
    return draft


def hidden_values(draft: Draft) -> list[str]:
    return [r.expected_value for r in draft.rubrics if r.info_source in ("persona", "clarification")
            and r.type == "attribute_match" and isinstance(r.expected_value, str) and len(r.expected_value) > 3]


def verbalize_with(replies, small_catalog, leaky_candidate, tmp_path, monkeypatch):
    """Verbalize the leaky candidate's draft with the LLM verbalizer while the simulator answers with
    `replies(template query, required phrases, draft, messages)`, call after call. Returns (draft, the
    template's query for the same draft and rng, the message lists the simulator received)."""
    intent, index, pid, pools = leaky_candidate
    seen: list[list[dict]] = []
    draft = staged_draft(small_catalog, intent, index, pid, pools)

    def fake_reply(messages):
        seen.append(messages)
        query, phrases = verbalizer_policy.parse_prompt(messages[1]["content"])
        return replies[len(seen) - 1](query, phrases, draft)

    monkeypatch.setattr(verbalizer_policy, "verbalizer_reply", fake_reply)
    template = staged_draft(small_catalog, intent, index, pid, pools)
    template_verbalize(template, random.Random(1))
    verbalize = choose_verbalizer(construct_settings(cfg("llm", cache_dir=str(tmp_path / "cache"))))
    verbalize(draft, random.Random(1))
    return draft, template.user_query, seen


def drop_first_phrase(query, phrases, draft):
    return query.replace(phrases[0], "something nice")


def leak_hidden_value(query, phrases, draft):
    return f"{query} It has to be {hidden_values(draft)[0]}."


def good_rewrite(query, phrases, draft):
    return f"Hello there! {query}"


def test_a_reply_that_drops_a_phrase_then_leaks_falls_back_to_the_template(small_catalog, leaky_candidate,
                                                                          tmp_path, monkeypatch):
    draft, template_query, seen = verbalize_with([drop_first_phrase, leak_hidden_value], small_catalog,
                                                 leaky_candidate, tmp_path, monkeypatch)
    assert len(seen) == 2                                       # asked once more, then gave up
    assert draft.user_query == template_query
    assert draft.meta["verbalizer"] == "template_fallback" and draft.meta["verbalizer_attempts"] == 2
    first, second = draft.meta["verbalizer_issues"]
    assert any("is not in the query" in issue for issue in first)
    assert any(issue.startswith("leak:") for issue in second)
    # the second request quoted the first reply's failures
    assert seen[1][-1]["role"] == "user" and first[0] in seen[1][-1]["content"]
    validate_draft(draft, small_catalog, max_matches=3)         # the template text still validates, lock held
    assert draft.rejection is None, draft.validation_issues


def test_a_second_reply_that_passes_is_kept(small_catalog, leaky_candidate, tmp_path, monkeypatch):
    draft, template_query, seen = verbalize_with([leak_hidden_value, good_rewrite], small_catalog,
                                                 leaky_candidate, tmp_path, monkeypatch)
    assert len(seen) == 2 and draft.user_query == f"Hello there! {template_query}"
    assert draft.meta["verbalizer"] == "llm" and draft.meta["verbalizer_attempts"] == 2
    assert draft.meta["template_query"] == template_query


def test_a_reply_adding_a_number_is_refused(small_catalog, leaky_candidate, tmp_path, monkeypatch):
    def add_price(query, phrases, draft):
        return f"{query} Ideally under $12345."

    draft, template_query, _ = verbalize_with([add_price, add_price], small_catalog, leaky_candidate, tmp_path,
                                              monkeypatch)
    assert draft.user_query == template_query and draft.meta["verbalizer"] == "template_fallback"
    assert "12345" in draft.meta["verbalizer_issues"][0][-1]


# ---------------------------------------------------------------------------------------------------------
# (c) the cache: a rebuild calls no model and is byte-identical
# ---------------------------------------------------------------------------------------------------------

def test_rebuild_with_the_same_config_is_cached_and_byte_identical(small_catalog, tmp_path, llm_build, llm_conf):
    _, first_out, _ = llm_build
    again = {"construct": {**llm_conf["construct"], "workers": 1}}     # workers never change the output
    before = sim_requests(again)
    construct(again, small_catalog, out_dir=tmp_path / "again", progress=False)
    assert sim_requests(again) == before                               # every reply came from the cache
    for name in (BENCHMARK_FILE, REJECTED_FILE, REJECTIONS_TABLE):
        assert (tmp_path / "again" / name).read_bytes() == (first_out / name).read_bytes(), name


# ---------------------------------------------------------------------------------------------------------
# (d) a missing API key fails before any work
# ---------------------------------------------------------------------------------------------------------

class UntouchableCatalog:
    """A catalog that records any use: construction must fail before reading it."""

    fingerprint = "untouchable"

    def __init__(self):
        self.used: list[str] = []

    def __getattr__(self, name):
        self.used.append(name)
        raise AssertionError(f"the catalog was used ({name}) before the configuration was checked")


def test_missing_api_key_is_one_clear_error_before_any_work(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    catalog = UntouchableCatalog()
    with pytest.raises(ConfigError) as failure:
        construct(cfg("llm", workers=2, model="gpt-5-mini"), catalog, progress=False)
    message = str(failure.value)
    assert "construct.llm.model=gpt-5-mini needs the environment variable OPENAI_API_KEY" in message
    assert "\n" not in message
    assert catalog.used == []


def test_unknown_model_names_the_construct_key():
    with pytest.raises(ConfigError, match="construct.llm.model: unknown model 'no-such-model'"):
        construct_settings(cfg("llm", model="no-such-model"))


# ---------------------------------------------------------------------------------------------------------
# The simulator's policy
# ---------------------------------------------------------------------------------------------------------

def test_sim_policy_keeps_every_phrase_and_changes_the_text():
    query = ("I need a phone case in Black. It has to be one made of silicone. "
             "Nothing in Blue or Red, please. I have a $5.00 coupon.")
    phrases = ["phone case", "in Black", "made of silicone", "Nothing in Blue or Red", "a $5.00 coupon"]
    messages = [{"role": "system", "content": llm_verbalizer.SYSTEM_PROMPT},
                {"role": "user", "content": llm_verbalizer.user_prompt(query, phrases)}]
    assert verbalizer_policy.is_verbalizer_request(messages)
    assert not verbalizer_policy.is_verbalizer_request([{"role": "system", "content": "You are a shopper."}])
    reply = verbalizer_policy.verbalizer_reply(messages)
    assert reply.startswith("I'm shopping for a phone case in Black.") and reply != query
    assert all(p in reply for p in phrases)
    assert verbalizer_policy.verbalizer_reply(messages) == reply          # deterministic
    # a reorder that would break a phrase is dropped for a plainer variant
    split = ["Black. It has"]
    reply = verbalizer_policy.verbalizer_reply(
        [messages[0], {"role": "user", "content": llm_verbalizer.user_prompt(query, split)}])
    assert split[0] in reply

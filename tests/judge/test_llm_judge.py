"""The LLM judge over real HTTP: an aiohttp chat-completions endpoint on 127.0.0.1 driven through the real
openai client. By default the endpoint answers with the simulator's judge policy (ecab.judge.sim_policy);
a test can queue scripted replies (a missing rubric, the string "false", a 429) in front of it.
"""
from __future__ import annotations

import asyncio
import gzip
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from aiohttp import web

from ecab.judge.episode import make_judgement
from ecab.judge.llm import (JUDGE_MARKER, JUDGE_SYSTEM_PROMPT, LLMJudge, JudgeReplyError, JudgeSettings, judge_settings,
                            parse_results, user_prompt)
from ecab.judge.sim_policy import is_judge_request, judge_reply
from ecab.llm.cache import ReplyCache
from ecab.runs import RunFolder
from ecab.schema import Product, Review, Rubric, Task, Trajectory

REPO = Path(__file__).resolve().parents[2]
MODEL_ID = "sim-judge"


# ---------------------------------------------------------------------------------------------------------
# The endpoint
# ---------------------------------------------------------------------------------------------------------

class JudgeEndpoint:
    """A chat-completions server in a background thread; `script` holds replies to send before the policy:
    a string (the message content), or (status, headers) for an HTTP error."""

    def __init__(self):
        self.requests: list[dict] = []
        self.script: list = []
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self.port = None

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append(body)
        item = self.script.pop(0) if self.script else None
        if isinstance(item, tuple):
            status, headers = item
            return web.json_response({"error": {"message": "scripted error", "type": "rate_limit"}},
                                     status=status, headers=headers)
        content = item if isinstance(item, str) else judge_reply(body["messages"])
        prompt_chars = sum(len(str(m.get("content") or "")) for m in body["messages"])
        return web.json_response({
            "id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion", "created": int(time.time()),
            "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": prompt_chars // 4, "completion_tokens": len(content) // 4,
                      "total_tokens": prompt_chars // 4 + len(content) // 4},
        })

    def _serve(self):
        asyncio.set_event_loop(self._loop)
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._handle)
        self._runner = web.AppRunner(app)
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    def start(self) -> "JudgeEndpoint":
        self._thread.start()
        assert self._ready.wait(10), "judge endpoint did not start"
        return self

    def stop(self):
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


@pytest.fixture()
def endpoint():
    server = JudgeEndpoint().start()
    yield server
    server.stop()


def settings_for(endpoint: JudgeEndpoint, cache_dir=None, **judge) -> JudgeSettings:
    cfg = {"name": "llm", "model": {"name": "sim-judge", "base_url": endpoint.base_url, "model_id": MODEL_ID,
                                    "api_key_env": None, "price_per_million": {"input": 1.0, "output": 4.0},
                                    "max_retry_wait_s": 1, "backoff_base_s": 0.01},
           "temperature": 0.0, "granularity": "sample", "types": ["review_opinion"], "max_attempts": 3,
           "transport_attempts": 3, "cache_dir": str(cache_dir) if cache_dir else None, **judge}
    return judge_settings(cfg)


# ---------------------------------------------------------------------------------------------------------
# A product and a task
# ---------------------------------------------------------------------------------------------------------

PRODUCT = Product.from_dict({
    "product_id": "P1", "title": "Braidex USB-C Charger Cable 6ft Braided", "main_category": "Electronics",
    "store": "Braidex", "average_rating": 4.6, "rating_number": 120, "price": 12.99,
    "features": ["Nylon braided jacket", "Fast charging up to 60W"], "description": ["A long cable."],
    "details": {"Brand": "Braidex", "Connector Type": "USB Type C", "Cable Length": "6 Feet"},
})
REVIEWS = [
    Review.from_dict({"review_id": 1, "product_id": "P1", "rating": 5, "title": "Great",
                      "text": "Charges my laptop quickly.\nThe braided jacket survived my dog. " + "x" * 600}),
    Review.from_dict({"review_id": 2, "product_id": "P1", "rating": 2, "title": "Meh",
                      "text": "The cable frayed after two weeks."}),
]
RUBRICS = [
    Rubric(id="r1", type="entity_match", field="title", expected_value="charger cable", description="a cable"),
    Rubric(id="r2", type="review_opinion", field="reviews", expected_value="charges laptop quickly",
           description="reviews say it charges a laptop quickly"),
    Rubric(id="r3", type="review_opinion", field="reviews", expected_value={"opinion": "cable frayed"},
           description="reviews mention fraying", info_source="persona"),
    Rubric(id="r4", type="review_opinion", field="reviews", expected_value="waterproof in heavy rain",
           description="reviews say it is waterproof"),
]
TARGET = PRODUCT.target_view()


def make_task(target_id: str = "P1") -> Task:
    return Task.from_dict({"id": "t1", "intent_category": "review_driven", "user_query": "a braided cable",
                           "target_product": {**TARGET, "product_id": target_id},
                           "rubrics": [r.to_dict() for r in RUBRICS]})


def traj_for(task: Task, predicted: str | None) -> Trajectory:
    return Trajectory(id=task.id, intent_category=task.intent_category, predicted_product_id=predicted,
                      model="oracle", unit={"task_id": task.id, "model": "oracle", "budget": 100, "seed": 1,
                                            "trial": 0}, termination="recommended")


class FakeCatalog:
    def get_product(self, pid):
        return PRODUCT if pid == "P1" else None

    def get_reviews(self, pid, limit=20):
        return REVIEWS[:limit] if pid == "P1" else []


def judge_once(settings: JudgeSettings, cache: ReplyCache | None = None, target_id: str = "P1"):
    async def go():
        judge = LLMJudge(settings, cache=cache)
        try:
            task = make_task(target_id)
            return await judge.judge_episode(task, traj_for(task, "P1"), FakeCatalog()), judge.usage
        finally:
            await judge.aclose()
    return asyncio.run(go())


def reply(*entries) -> str:
    return json.dumps({"results": [{"rubric_id": rid, "satisfied": sat, "reasoning": why} for rid, sat, why in entries]})


# ---------------------------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------------------------

def test_parse_matches_by_rubric_id_not_position():
    content = json.dumps({"results": [[{"rubric_id": "b", "satisfied": False, "reasoning": "no"}],
                                      {"rubric_id": "a", "satisfied": True, "reasoning": "yes"}]})
    assert parse_results(content, ["a", "b"]) == {"a": (True, "yes"), "b": (False, "no")}


@pytest.mark.parametrize("content, message", [
    (reply(("a", True, "")), "missing rubric_id(s) ['b']"),
    (reply(("a", True, ""), ("b", True, ""), ("c", True, "")), "unknown rubric_id 'c'"),
    (reply(("a", True, ""), ("a", False, ""), ("b", True, "")), "appears twice"),
    (reply(("a", "yes", ""), ("b", True, "")), "satisfied is 'yes'"),
    (reply(("a", 1, ""), ("b", True, "")), "satisfied is 1"),
    ("not json", "not valid JSON"),
    ('{"verdicts": []}', 'no "results" list'),
    ("", "empty"),
])
def test_parse_rejects_mismatches(content, message):
    with pytest.raises(JudgeReplyError, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("]", r"\]")):
        parse_results(content, ["a", "b"])


def test_string_false_is_false_not_truthy():
    parsed = parse_results(reply(("a", "false", "x"), ("b", "True", "y")), ["a", "b"])
    assert parsed == {"a": (False, "x"), "b": (True, "y")}


def test_prompt_shows_the_full_product_and_full_reviews():
    prompt = user_prompt(PRODUCT, RUBRICS, reviews=REVIEWS)
    assert '"description": [' in prompt and '"main_category": "Electronics"' in prompt
    assert "x" * 600 in prompt                       # no 500-character cut
    assert "Charges my laptop quickly. The braided" in prompt   # one review per line
    assert '| expected: "cable frayed"' in prompt     # the opinion, whichever shape it came in
    assert JUDGE_SYSTEM_PROMPT.startswith(JUDGE_MARKER)
    assert is_judge_request({"messages": [{"role": "system", "content": JUDGE_SYSTEM_PROMPT}]})
    assert not is_judge_request({"messages": [{"role": "system", "content": "You are a shopping assistant"}]})


# ---------------------------------------------------------------------------------------------------------
# Over HTTP
# ---------------------------------------------------------------------------------------------------------

def test_sim_policy_judges_and_rules_keep_the_other_types(endpoint):
    judgement, usage = judge_once(settings_for(endpoint))
    by_id = {v.rubric_id: v for v in judgement.verdicts}
    assert [v.rubric_id for v in judgement.verdicts] == ["r1", "r2", "r3", "r4"]
    assert by_id["r1"].method == "rule" and by_id["r1"].satisfied is True
    assert {by_id[r].method for r in ("r2", "r3", "r4")} == {"llm"}
    assert (by_id["r2"].satisfied, by_id["r3"].satisfied, by_id["r4"].satisfied) == (True, True, False)
    assert by_id["r3"].info_source == "persona"
    assert len(endpoint.requests) == 1                 # granularity sample: one call for the three rubrics
    request = endpoint.requests[0]
    assert request["response_format"] == {"type": "json_object"} and request["temperature"] == 0.0
    assert request["model"] == MODEL_ID and request["messages"][0]["content"].startswith(JUDGE_MARKER)
    assert usage.calls == 1 and usage.input_tokens > 0 and usage.cost_usd > 0
    assert judgement.extras["judge_usage"]["calls"] == 1
    # P1 is the target: correct by exact match although r4 fails (a judge_misjudged_count case)
    assert judgement.exact_product_match is True and judgement.all_satisfied is False and judgement.correct is True


def test_rubric_granularity_makes_one_call_per_llm_rubric(endpoint):
    judgement, usage = judge_once(settings_for(endpoint, granularity="rubric"))
    assert len(endpoint.requests) == 3 and usage.calls == 3
    assert all(len(json.loads(judge_reply(r["messages"]))["results"]) == 1 for r in endpoint.requests)
    assert [v.satisfied for v in judgement.verdicts] == [True, True, True, False]


def test_results_matched_by_id_and_string_false(endpoint):
    endpoint.script = [reply(("r4", True, "rain ok"), ("r3", "false", "no fray"), ("r2", True, "fast"))]
    judgement, _ = judge_once(settings_for(endpoint))
    by_id = {v.rubric_id: v for v in judgement.verdicts}
    assert (by_id["r2"].satisfied, by_id["r3"].satisfied, by_id["r4"].satisfied) == (True, False, True)
    assert by_id["r3"].reasoning == "no fray" and by_id["r4"].reasoning == "rain ok"
    assert len(endpoint.requests) == 1


def test_missing_rubric_retries_with_a_note_then_succeeds(endpoint):
    endpoint.script = [reply(("r2", True, "fast"), ("r3", False, ""))]   # r4 missing; then the policy answers
    judgement, usage = judge_once(settings_for(endpoint))
    assert len(endpoint.requests) == 2 and usage.invalid_replies == 1
    second = endpoint.requests[1]["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert "missing rubric_id(s) ['r4']" in second[-1]["content"]
    assert [v.satisfied for v in judgement.verdicts] == [True, True, True, False]


def test_a_reply_that_never_matches_leaves_the_rubrics_unscored(endpoint):
    bad = reply(("r2", True, ""), ("r3", True, ""))            # r4 always missing
    endpoint.script = [bad, bad, bad]
    judgement, usage = judge_once(settings_for(endpoint, max_attempts=3), target_id="OTHER")
    assert len(endpoint.requests) == 3 and usage.unscored == 3
    llm = [v for v in judgement.verdicts if v.method == "llm"]
    assert all(v.satisfied is None for v in llm)
    assert all("unscored" in v.reasoning and "missing rubric_id(s) ['r4']" in v.reasoning for v in llm)
    assert judgement.all_satisfied is None and judgement.correct is None     # never counted wrong


def test_429_is_retried_by_the_shared_policy(endpoint):
    endpoint.script = [(429, {"Retry-After": "0"}), (503, {"retry-after-ms": "10"})]
    judgement, usage = judge_once(settings_for(endpoint))
    assert len(endpoint.requests) == 3 and usage.retries == 2 and usage.calls == 3
    assert [v.satisfied for v in judgement.verdicts] == [True, True, True, False]


def test_no_product_makes_no_call(endpoint):
    task = make_task()

    async def go():
        judge = LLMJudge(settings_for(endpoint))
        return await judge.judge_episode(task, traj_for(task, None), FakeCatalog())
    judgement = asyncio.run(go())
    assert endpoint.requests == [] and {v.method for v in judgement.verdicts} == {"no_product"}


def test_a_rejudge_hits_the_cache(endpoint, tmp_path):
    settings = settings_for(endpoint, cache_dir=tmp_path / "cache")
    cache = ReplyCache(settings.cache_dir)
    first, first_usage = judge_once(settings, cache)
    assert len(endpoint.requests) == 1 and first_usage.cache_hits == 0
    cache.close()
    cache = ReplyCache(settings.cache_dir)                       # a new process would open it the same way
    second, second_usage = judge_once(settings, cache)
    assert len(endpoint.requests) == 1                            # zero new requests
    assert second_usage.cache_hits == 1 and second_usage.calls == 0 and second_usage.cost_usd == 0
    assert [v.to_dict() for v in second.verdicts] == [v.to_dict() for v in first.verdicts]
    # another judge model (or temperature) is another key
    other = settings_for(endpoint, cache_dir=tmp_path / "cache", temperature=0.5)
    judge_once(other, cache)
    assert len(endpoint.requests) == 2
    cache.close()


def test_unscored_replies_are_not_cached(endpoint, tmp_path):
    settings = settings_for(endpoint, cache_dir=tmp_path / "cache", max_attempts=1)
    cache = ReplyCache(settings.cache_dir)
    endpoint.script = [reply(("r2", True, ""))]
    judgement, _ = judge_once(settings, cache)
    assert judgement.all_satisfied is None and len(cache) == 0
    judgement, _ = judge_once(settings, cache)                    # asks again, now answered properly
    assert judgement.all_satisfied is False and len(cache) == 1 and len(endpoint.requests) == 2
    cache.close()


def test_skip_exact_keeps_rules_verdicts_for_exact_matches(endpoint, embedder):
    from ecab.catalog.review_match import ReviewChecker
    task = make_task()

    async def go():
        judge = LLMJudge(settings_for(endpoint, skip_exact=True), review_checker=ReviewChecker(embedder))
        try:
            return await judge.judge_episode(task, traj_for(task, "P1"), FakeCatalog())
        finally:
            await judge.aclose()
    # P1 is the task's target: an exact match, so no call is made
    judgement = asyncio.run(go())
    assert judgement.exact_product_match is True and judgement.correct is True
    assert endpoint.requests == [] and {v.method for v in judgement.verdicts} <= {"rule", "embedding"}


def test_attribute_fallback_sends_only_unsettled_attribute_rubrics(endpoint):
    task = Task.from_dict({"id": "t2", "intent_category": "product_search", "user_query": "q",
                           "target_product": TARGET, "rubrics": [
                               {"id": "a1", "type": "attribute_match", "field": "details.Material",
                                "expected_value": "Polyester"},               # no Material key: the LLM decides
                               {"id": "a2", "type": "attribute_match", "field": "details.Connector Type",
                                "expected_value": "Lightning"},               # present and different: rules
                               {"id": "a3", "type": "attribute_match", "field": "details.Brand",
                                "expected_value": "Braidex"}]})               # satisfied by rules

    async def go():
        judge = LLMJudge(settings_for(endpoint, types=[], attribute_fallback=True))
        try:
            return await judge.judge_episode(task, traj_for(task, "P1"), FakeCatalog())
        finally:
            await judge.aclose()
    judgement = asyncio.run(go())
    assert [v.method for v in judgement.verdicts] == ["llm", "rule", "rule"]
    assert "[a1]" in endpoint.requests[0]["messages"][1]["content"]
    assert "[a2]" not in endpoint.requests[0]["messages"][1]["content"]


def test_make_judgement_unscored_does_not_hide_a_failure():
    task = make_task()
    from ecab.schema import Verdict
    verdicts = [Verdict(rubric_id="r1", satisfied=False), Verdict(rubric_id="r2", satisfied=None, method="llm")]
    assert make_judgement(task, traj_for(task, "X"), verdicts, judge_name="llm").all_satisfied is False


def test_missing_judge_key_is_a_clear_error(monkeypatch):
    from ecab.config import ConfigError
    from ecab.judge.dispatch import check_judge_config
    from omegaconf import OmegaConf
    monkeypatch.delenv("ECAB_TEST_JUDGE_KEY", raising=False)
    cfg = OmegaConf.create({"name": "llm", "model": {"name": "j", "base_url": "http://127.0.0.1:9/v1",
                                                     "model_id": "j", "api_key_env": "ECAB_TEST_JUDGE_KEY"}})
    with pytest.raises(ConfigError, match="ECAB_TEST_JUDGE_KEY"):
        check_judge_config(cfg)
    with pytest.raises(ConfigError, match="judge.granularity"):
        judge_settings({**OmegaConf.to_container(cfg), "granularity": "batch"})


# ---------------------------------------------------------------------------------------------------------
# python -m ecab.judge on a real run folder
# ---------------------------------------------------------------------------------------------------------

def gunzip(path: Path) -> str:
    return gzip.decompress(path.read_bytes()).decode("utf-8")


def _python(args: list[str], env: dict) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, *args], cwd=REPO, env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, f"{args} failed:\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}"
    return result


@pytest.fixture(scope="module")
def oracle_run(tmp_path_factory):
    """A finished run of the oracle on a 300-product synthetic catalog, one task per intent."""
    root = tmp_path_factory.mktemp("rejudge")
    env = {**os.environ, "ECAB_CACHE_DIR": str(root / "cache"), "HF_HUB_OFFLINE": "1"}
    _python(["-m", "ecab.run", "model=oracle", "catalog.products=300", "benchmark.n_per_intent=1",
             f"run.dir={root / 'runs'}", "run.name=oracle", "run.progress=false"], env)
    return root / "runs" / "oracle", env


@pytest.mark.slow
def test_rejudge_cli_writes_both_verdict_files_and_hits_the_cache(oracle_run, endpoint, embedder):
    run_dir, env = oracle_run
    folder = RunFolder(run_dir)
    assert folder.active_judge() == "rules" and set(folder.judge_files()) == {"rules"}
    rules_before = gunzip(run_dir / "verdicts.rules.jsonl.gz")
    model = (f"judge.model={{name:sim-judge,base_url:'{endpoint.base_url}',model_id:{MODEL_ID},api_key_env:null,"
             f"price_per_million:{{input:1.0,output:4.0}}}}")
    args = ["-m", "ecab.judge", str(run_dir), "judge=llm", model]
    out = _python(args, env).stdout
    calls = len(endpoint.requests)
    assert calls > 0 and "re-judged" in out
    # verdict files, one per judge: the active one is the LLM's, the rules verdicts are kept beside it
    assert gunzip(run_dir / "verdicts.rules.jsonl.gz") == rules_before
    llm_text = gunzip(run_dir / "verdicts.llm.jsonl.gz")
    llm_lines = [json.loads(line) for line in llm_text.splitlines()]
    assert folder.active_judge() == "llm" and folder.verdicts_path.name == "verdicts.llm.jsonl.gz"
    assert sorted(p.name for p in run_dir.glob("verdicts*")) == ["verdicts.llm.jsonl.gz", "verdicts.rules.jsonl.gz"]
    assert {j["judge"] for j in llm_lines} == {"llm"}
    methods = {v["method"] for j in llm_lines for v in j["verdicts"]}
    assert "llm" in methods and "rule" in methods
    review_verdicts = [v for j in llm_lines for v in j["verdicts"] if v["type"] == "review_opinion"]
    assert review_verdicts and all(v["method"] == "llm" for v in review_verdicts)
    # the summary was re-reduced with the judge's cost
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["judge_model"] == f"llm:{MODEL_ID}"
    judge_cost = summary["tokens_and_cost"]["judge"]
    assert judge_cost["total"]["calls"] == calls and judge_cost["total"]["input_tokens"] > 0
    assert judge_cost["total"]["cost_usd"] > 0 and judge_cost["mean_per_episode"]["cost_usd"] > 0
    assert summary["tokens_and_cost"]["by_model"]["oracle"]["episodes"] == summary["total_samples"]
    assert summary["by_rubric_type"]["review_opinion"]["methods"]["llm"] == len(review_verdicts)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["judge"]["model_id"] == MODEL_ID and set(manifest["judges"]) == {"llm"}
    # the oracle recommends every target: the exact matches are still judged (judge_misjudged_count)
    assert summary["exact_match_correct"] == summary["total_samples"]
    assert summary["overall_accuracy"] == 1.0

    # re-judging the same run: zero new requests, all from the cache
    _python(args, env)
    assert len(endpoint.requests) == calls
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["tokens_and_cost"]["judge"]["total"]["calls"] == 0
    assert summary["tokens_and_cost"]["judge"]["total"]["cache_hits"] == calls
    llm_text = gunzip(run_dir / "verdicts.llm.jsonl.gz")
    assert [json.loads(line)["verdicts"] for line in llm_text.splitlines()] == [j["verdicts"] for j in llm_lines]

    # back to the rules judge (in process: the session's embedder is already loaded): both files stay,
    # the manifest's active judge follows the chosen judge, and the reduce stage reads its verdicts
    from ecab.reduce.rejudge import rejudge
    from ecab.reduce import reduce_run
    summary = rejudge(run_dir, ["judge=rules"])
    assert summary["judge_model"] == "rules" and summary["tokens_and_cost"]["judge"]["episodes"] == 0
    assert folder.active_judge() == "rules" and {j.judge for j in folder.read_verdicts()} == {"rules"}
    assert gunzip(run_dir / "verdicts.llm.jsonl.gz") == llm_text
    assert reduce_run(run_dir)["overall_accuracy"] == 1.0


def test_rejudge_cli_errors_are_one_line(tmp_path):
    result = subprocess.run([sys.executable, "-m", "ecab.judge", str(tmp_path / "nope"), "judge=llm"], cwd=REPO,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "run folder not found" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_judge_model_sim_serves_the_simulator_for_the_judging_pass(tmp_path):
    """judge.model=sim without a base_url: the simulator is started for the pass and its judge policy
    answers (through its latency, 429 and 5xx injection: the shared retry policy absorbs them)."""
    from ecab.config import load_config
    from ecab.judge.dispatch import judge_run
    cfg = load_config(["judge=llm", "judge.model=sim", f"judge.cache_dir={tmp_path / 'cache'}"])
    task = make_task("OTHER")
    trajectories = [traj_for(task, "P1")]
    judged = judge_run(cfg.judge, {task.id: task}, trajectories, FakeCatalog())
    describe = judged.describe
    assert judged.judge == "llm" and judged.judge_model.startswith("llm:")
    verdicts = {v.rubric_id: v for v in judged.judgements[0].verdicts}
    assert [verdicts[r].method for r in ("r1", "r2", "r3", "r4")] == ["rule", "llm", "llm", "llm"]
    assert [verdicts[r].satisfied for r in ("r2", "r3", "r4")] == [True, True, False]
    assert describe["usage"]["calls"] >= 1 and describe["usage"]["cost_usd"] > 0
    assert describe["base_url"].startswith("http://127.0.0.1:")
    # the second pass is served from the cache (a new simulator, no request reaches it)
    describe = judge_run(cfg.judge, {task.id: task}, trajectories, FakeCatalog()).describe
    assert describe["usage"]["calls"] == 0 and describe["usage"]["cache_hits"] == 1

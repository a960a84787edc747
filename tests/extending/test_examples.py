"""The worked examples in examples/ (docs/extending.md) run as a user runs them, without editing ecab: the
plain agent and the loop-owning agent with `python -m ecab.run model=<example>`, the loop-owning agent and the
custom judge under runner=ray, the custom judge on a finished run with `python -m ecab.judge`, and
`ecab.evaluate` from Python."""
import gzip
import json
import subprocess
import sys

import pytest

from conftest import REPO_ROOT, SMALL_RUN

import ecab

# Whole runs in spawned processes and on Ray (minutes): the slow tier (make test-slow).
pytestmark = pytest.mark.slow


def run_cli(module, *args, cwd=REPO_ROOT, timeout=900):
    proc = subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-3000:])
    return proc


def trajectories(folder):
    return [json.loads(line) for path in sorted((folder / "trajectories").glob("*.jsonl.gz"))
            for line in gzip.open(path, "rt")]


@pytest.fixture(scope="module")
def common(small_run_cache, tmp_path_factory):
    return [*SMALL_RUN, "benchmark.limit=4", f"cache_dir={small_run_cache}",
            f"run.dir={tmp_path_factory.mktemp('example-runs')}"]


def test_the_plain_python_agent_runs_by_its_config_name_in_spawned_processes(common):
    # runner.processes=2: the agent's module is imported by name in each spawned episode process
    run_cli("ecab.run", *common, "model=example-agent", "run.name=plain", "runner.processes=2")
    folder = next(a for a in common if a.startswith("run.dir=")).split("=", 1)[1]
    records = trajectories(__import__("pathlib").Path(folder) / "plain")
    assert len(records) == 4
    for record in records:
        tools = [s["tool"] for s in record["steps"]]
        assert tools == ["get_user_profile", "ask_user", "search_products", "recommend_product"]
        assert record["model"] == "example-agent" and record["termination"] == "recommended"


@pytest.mark.xdist_group("ray")   # starts a Ray: one at a time under pytest-xdist
def test_the_loop_agent_the_custom_judge_and_a_users_tool_run_under_ray(common):
    from pathlib import Path
    run_cli("ecab.run", *common, "model=example-loop-agent", "judge=example-judge", "runner=ray",
            "runner.workers=1", "run.name=loop-ray", "tools.extra=[examples.extra_tool:PRICE_OF]")
    folder = Path(next(a for a in common if a.startswith("run.dir=")).split("=", 1)[1]) / "loop-ray"
    records = trajectories(folder)
    assert len(records) == 4
    assert all(r["steps"][0]["tool"] == "get_user_profile" for r in records)
    priced = [s for r in records for s in r["steps"] if s["tool"] == "get_price"]
    assert priced and not any(s["is_error"] for s in priced)    # the Ray workers imported the tool by name
    assert {r["termination"] for r in records} <= {"recommended", "no_tool_call"}
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["judge_model"] == "exact"
    assert summary["judge_scores"]["budget_left"]["n"] == 4
    assert 0 < summary["judge_scores"]["budget_left"]["mean"] < 1
    verdicts = [json.loads(line) for line in gzip.open(folder / "verdicts.exact.jsonl.gz", "rt")]
    assert all(v["judge"] == "exact" and v["correct"] == v["exact_product_match"] for v in verdicts)


def test_evaluate_from_python_and_rejudging_with_the_custom_judge(common):
    result = ecab.evaluate([*common, "model=oracle", "run.name=oracle", "benchmark.limit=5"], report=False)
    assert result.accuracy == 1.0 and result.summary["total_samples"] == 5
    run_cli("ecab.judge", str(result.path), "judge=example-judge")
    verdicts = [json.loads(line) for line in gzip.open(result.path / "verdicts.exact.jsonl.gz", "rt")]
    assert len(verdicts) == 5 and all(v["correct"] for v in verdicts)   # the oracle recommends every target


def test_evaluate_takes_keywords_and_refuses_a_bad_key(common):
    with pytest.raises(ecab.ConfigError, match="model"):
        ecab.evaluate([*common], model="no-such-model")
    assert ecab.api.as_overrides(["a=1"], benchmark={"limit": 5, "name": None}, trials=2) == \
        ["a=1", "benchmark.limit=5", "benchmark.name=null", "trials=2"]


def test_a_users_tool_by_import_path_joins_the_box_and_a_bad_one_is_one_line(small_catalog):
    import asyncio

    from ecab.env.tools import ToolBox, import_tools
    from ecab.schema import Task

    task = Task.from_dict({"id": "t", "intent_category": "product_search", "user_query": "cable",
                           "target_product": small_catalog.get_product("PROBE-USBC").target_view(),
                           "rubrics": [{"id": "r1", "type": "entity_match", "field": "title",
                                        "expected_value": "Braidex"}]})
    box = ToolBox(small_catalog, task, extra_tools=("examples.extra_tool:PRICE_OF",))
    assert [s["function"]["name"] for s in box.schemas()][-1] == "get_price"
    result = asyncio.run(box.call("get_price", '{"product_id": "PROBE-USBC"}'))
    assert result.content == {"product_id": "PROBE-USBC", "price": 12.99}
    for path, message in (("examples.extra_tool:price_of", "is a function that needs arguments"),
                          ("examples.extra_tool:__doc__", "gave str, not a Tool record"),
                          ("examples.extra_tool:nope", "has no attribute 'nope'")):
        with pytest.raises(ecab.ConfigError, match=message):
            import_tools((path,))


def test_a_catalog_source_of_ones_own_builds_from_the_yaml_the_docs_show(tmp_path, catalog_batches):
    import re

    from ecab.catalog.build import ensure_catalog
    from ecab.config import load_config, parse

    shop = tmp_path / "shop.jsonl"
    products = catalog_batches[0].products[:40]
    with shop.open("w", encoding="utf-8") as out:
        for product in products:
            reviews = [r.to_dict() for r in catalog_batches[0].reviews if r.product_id == product.product_id]
            out.write(json.dumps({**product.to_dict(), "reviews": reviews}) + "\n")
    doc = (REPO_ROOT / "docs" / "extending.md").read_text(encoding="utf-8")
    yaml = re.search(r"# my_conf/catalog/myshop.yaml[^\n]*\n(.*?)```", doc, flags=re.S).group(1)
    (tmp_path / "conf" / "catalog").mkdir(parents=True)
    (tmp_path / "conf" / "catalog" / "myshop.yaml").write_text(yaml.replace("/data/myshop.jsonl", str(shop)))
    cfg = parse(load_config([f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "catalog=myshop",
                             "catalog.batch_size=16"]))
    catalog = ensure_catalog(cfg.catalog, tmp_path / "cache", progress=False)
    assert catalog.count() == 40
    first = products[0]
    assert catalog.get_product(first.product_id).title == first.title
    written = {r.review_id for r in catalog_batches[0].reviews if r.product_id == first.product_id}
    assert written and {r.review_id for r in catalog.get_reviews(first.product_id, limit=100)} == written

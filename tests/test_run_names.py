"""Default run names (issue 29 items 2 and 3; ecab/config/naming.py): every identity setting that differs from
the defaults is in the name, so runs of different configs never share a folder; an own endpoint is labelled as
such and not charged the provider's list prices. Real Hydra composition (`load_config` + `parse`), no network."""
from __future__ import annotations

import dataclasses
import itertools

import pytest

from ecab.config import load_config, naming, parse
from ecab.llm.settings import model_settings
from ecab.run import identity_of, redact, run_name, stable_hash


def name(*overrides: str) -> str:
    return run_name(load_config(list(overrides)))


def test_defaults_only_keep_the_short_name(tmp_path):
    assert name() == "heuristic-b100-generated"
    assert name("model=oracle", "budget=25") == "oracle-b25-generated"
    assert name("benchmark=released", f"cache_dir={tmp_path}") == "heuristic-b100-released"
    assert name("run.name=mine", "budget=7") == "mine"


def test_every_differing_setting_is_named_compactly():
    assert name("budget=25", "benchmark.limit=20", "tools.search=fts") == "heuristic-b25-generated-limit20-search=fts"
    # the root seed and the catalog's: the dotted path where the last name is ambiguous
    assert name("seed=3", "catalog.seed=4") == "heuristic-b100-generated-catalog.seed4-seed3"
    assert name("catalog=targets", "benchmark=file", "benchmark.path=/data/x/mine.jsonl").startswith(
        "heuristic-b100-file-mine-catalog=targets-")


def test_keys_that_only_follow_another_and_locations_are_not_named(tmp_path):
    # construct.n_per_intent is ${benchmark.n_per_intent}: one override, named once
    assert name("benchmark.n_per_intent=2") == "heuristic-b100-generated-n_per_intent2"
    assert name(f"cache_dir={tmp_path}", "benchmark.limit=2") == name("benchmark.limit=2")
    # neither the scheduling (runner) nor the read guard changes a result, nor the name
    assert name("runner=ray", "runner.concurrency=3", "benchmark.max_line_bytes=10") == "heuristic-b100-generated"


def test_long_differences_keep_a_readable_prefix_and_a_hash():
    long = ("model.temperature=0.5", "construct.max_matches=2", "catalog.builder=ray", "trials=3",
            "episode.final_warning=true", "construct.min_query_matches=3")
    first = name("model=gpt-5", *long)
    other = name("model=gpt-5", *long[:-1], "construct.min_query_matches=4")
    assert first.startswith("gpt-5-b100-generated-model.temperature0.5") and first != other
    suffix = first[len("gpt-5-b100-generated-"):]
    assert len(suffix) <= naming.MAX_SUFFIX and len(suffix.rsplit("-", 1)[1]) == naming.HASH_CHARS


@pytest.mark.slow
def test_a_sweep_over_any_keys_never_collides():
    """Names are distinct whenever identities (config hashes) are: the collision `-m` sweeps died of."""
    axes = [["model=heuristic", "model=oracle"], ["budget=25", "budget=50"], ["benchmark.limit=null", "benchmark.limit=5"],
            ["tools.search=hybrid", "tools.search=fts"], ["seed=0", "seed=1"], ["catalog.seed=0", "catalog.seed=1"],
            ["trials=1", "trials=2"]]
    by_name: dict[str, str] = {}
    for combo in itertools.product(*axes):
        cfg = parse(load_config(list(combo)))
        identity = stable_hash(identity_of(redact(dataclasses.asdict(cfg))))
        assert by_name.setdefault(run_name(cfg), identity) == identity, combo
    assert len(by_name) == 2 ** len(axes)


def test_the_name_is_the_same_from_a_composed_or_a_parsed_config_and_the_defaults_are_composed_once():
    overrides = ["model=oracle", "benchmark.limit=3", "catalog.products=600"]
    composed = load_config(overrides)
    before = naming._composed_defaults.cache_info()
    assert run_name(composed) == run_name(parse(composed)) == "oracle-b100-generated-products600-limit3"
    after = naming._composed_defaults.cache_info()
    assert after.misses - before.misses <= 1 and after.hits > before.hits


def test_sweep_names_are_readable_and_independent_of_override_order():
    assert naming.sweep_name(["model=heuristic,oracle", "budget=10,25"]) == "sweep-budget=10,25-model=heuristic,oracle"
    assert naming.sweep_name(["budget=10,25", "model=heuristic,oracle", "run.dir=x", "cache_dir=y"]) == \
        "sweep-budget=10,25-model=heuristic,oracle"
    fixed = naming.sweep_name(["model=heuristic,oracle", "catalog.products=600"])
    assert fixed.startswith("sweep-model=heuristic,oracle-") and fixed != naming.sweep_name(
        ["model=heuristic,oracle", "catalog.products=700"])
    # the issue's sweep keeps both swept keys readable, a fixed override only in the hash
    issue = naming.sweep_name(["model=heuristic,oracle", "budget=10,25,50,100", "benchmark.limit=20"])
    assert issue.startswith("sweep-budget=10,25,50,100-model=heuristic,oracle-") and len(issue) == 55
    assert issue == naming.sweep_name(["budget=10,25,50,100", "benchmark.limit=20", "model=heuristic,oracle"])


def test_a_long_list_of_swept_values_is_named_by_its_ends_and_stays_distinct():
    many = ",".join(f"m{i}" for i in range(30))
    name_ = naming.sweep_name([f"model={many}", "seed=1,2"])
    assert name_.startswith("sweep-model=m0,..,m29-seed=1,2-")
    assert name_ != naming.sweep_name([f"model={many.replace('m17', 'x')}", "seed=1,2"])     # the hash tells them
    assert naming.sweep_name(["budget=range(1,100)"]).startswith("sweep-budget=1,..,99-")


# ------------------------------------------------------------------------------------- an own endpoint

def test_an_own_endpoint_is_labelled_as_such():
    assert name("model=gpt-5") == "gpt-5-b100-generated"
    assert name("model=gpt-5", "model.base_url=http://my-vllm:8000/v1") == "gpt-5@my-vllm-8000-b100-generated"
    assert name("model=gpt-5", "model.model_id=qwen3") == "gpt-5=qwen3-b100-generated"
    assert name("model=gpt-5", "model.base_url=http://my-vllm:8000/v1", "budget=10") == \
        "gpt-5@my-vllm-8000-b10-generated"


def prices(*overrides: str) -> dict:
    return model_settings(parse(load_config(list(overrides))).model).price_per_million


def test_an_own_endpoint_is_not_charged_the_providers_prices():
    assert prices("model=gpt-5") == {"input": 1.25, "cached_input": 0.125, "output": 10.0}
    assert prices("model=gpt-5", "model.base_url=http://my-vllm:8000/v1") == {}    # unknown, not GPT-5's
    assert prices("model=gpt-5", "model.model_id=qwen3") == {}
    given = prices("model=gpt-5", "model.base_url=http://my-vllm:8000/v1", "model.price_per_million.input=0.1",
                   "model.price_per_million.output=0.2")
    assert given == {"input": 0.1, "output": 0.2}      # the user's; the provider's cached price is not


def test_the_simulator_filling_base_url_is_not_an_own_endpoint():
    """model=sim: ecab.run points base_url at the simulator it starts (run.py start_simulator), after the name is
    fixed; neither that nor the simulator's made-up prices count as an override."""
    cfg = parse(load_config(["model=sim"]))
    served = dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, base_url="http://127.0.0.1:5555/v1"))
    assert run_name(cfg) == "sim-b100-generated"
    assert model_settings(served.model).price_per_million == {"input": 1.0, "output": 4.0}


@pytest.mark.parametrize("overrides,expected", [
    (["model=gpt-5", "model.base_url=http://my-vllm:8000/v1"], "unknown"),
    (["model=gpt-5"], {"input": 1.25, "cached_input": 0.125, "output": 10.0}),
    (["model=oracle"], None),
])
def test_the_manifest_says_which_prices_the_cost_uses(overrides, expected):
    from ecab.run import agent_prices
    assert agent_prices(parse(load_config(overrides))) == expected


@pytest.mark.parametrize("overrides", [
    ["model=gpt-5"],
    ["model=gpt-5", "model.base_url=http://127.0.0.1:18765/v1", "model.model_id=ecab-sim-heuristic"],
    ["model=gpt-5", "model.base_url=http://my-vllm:8000/v1"],
    ["model=gpt-5", "model.model_id=org/qwen3"],
    ["model=sim"],
    ["model=heuristic"],
])
def test_reports_name_the_model_as_the_run_name_does(overrides):
    """summary.json's model, the report and the compare pages show the run name's model label, read back from
    the config.yaml ecab.run writes (reduce/model_label.py): an own endpoint is never shown as plain gpt-5."""
    import yaml
    from omegaconf import OmegaConf

    from ecab.reduce.model_label import config_label, run_model
    cfg = parse(load_config(overrides))
    written = yaml.safe_load(OmegaConf.to_yaml(OmegaConf.create(redact(dataclasses.asdict(cfg)))))
    label = config_label(written)
    assert label == naming.run_model_label(cfg) and run_name(cfg) == f"{label}-b100-generated"
    assert run_model({}, written, "fallback") == (label, cfg.model.name)          # a run from before the manifest
    assert run_model({"model": label, "model_config": cfg.model.name}, None) == (label, cfg.model.name)

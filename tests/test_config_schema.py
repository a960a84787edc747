"""The typed config (ecab/config/schema.py): conf/ composes against the schemas in Hydra's ConfigStore, `parse`
gives the typed object once with every check, plug-in keys compose, catalog sources are a registry."""
import dataclasses
import sys
import textwrap

import pytest

from ecab.config import (CatalogConfig, ConfigError, EcabConfig, EndpointModelConfig, LLMJudgeConfig,
                         LocalRunnerConfig, ModelConfig, RayRunnerConfig, TargetsCatalogConfig, load_config, parse,
                         section)


def test_every_group_option_parses_to_its_schema():
    cases = {
        (): (ModelConfig, CatalogConfig, LocalRunnerConfig),
        ("model=gpt-5", "catalog=targets", "benchmark.path=/nowhere.jsonl", "runner=ray", "judge=llm"):
            (EndpointModelConfig, TargetsCatalogConfig, RayRunnerConfig),
    }
    for overrides, (model, catalog, runner) in cases.items():
        cfg = parse(load_config(list(overrides)))
        assert isinstance(cfg, EcabConfig)
        assert type(cfg.model) is model and type(cfg.catalog) is catalog and type(cfg.runner) is runner
    assert isinstance(parse(load_config(["judge=llm"])).judge, LLMJudgeConfig)
    assert parse(parse(load_config([]))) is not None   # parse of a typed config returns it


def test_a_users_python_agent_composes_with_its_own_options(tmp_path, monkeypatch):
    import shutil

    import ecab.config

    conf = tmp_path / "conf"
    shutil.copytree(ecab.config.CONF_DIR, conf)
    (conf / "model" / "mine.yaml").write_text("name: mine\nkind: python\ntarget: my_pkg.agents:make_agent\n"
                                              "options: {depth: 3}\n")
    monkeypatch.setattr(ecab.config, "CONF_DIR", conf)
    cfg = parse(load_config(["model=mine", "+model.options.width=2"]))
    assert (cfg.model.name, cfg.model.kind, cfg.model.target, cfg.model.options) == \
        ("mine", "python", "my_pkg.agents:make_agent", {"depth": 3, "width": 2})
    judge = parse(load_config(["judge.kind=python", "judge.target=my_pkg.judges:make", "+judge.options.x=1"])).judge
    assert (judge.name, judge.kind, judge.target, judge.options) == ("rules", "python", "my_pkg.judges:make", {"x": 1})
    assert parse(load_config([])).judge.kind is None     # None: the name (rules or llm)


@pytest.mark.parametrize("overrides, message", [
    (["budget=2.5"], "budget must be a positive integer, got 2.5"),
    (["budget=abc"], "budget must be a positive integer, got 'abc'"),
    (["construct.min_query_load_bearing=1.5"], "construct.min_query_load_bearing must be a number in [0, 1], got 1.5"),
    (["catalog.builder=spark"], "catalog.builder: unknown builder 'spark'; choose one of: local, ray"),
    (["tools.search=grep"], "tools.search must be hybrid, fts, vector or original, got 'grep'"),
    (["runner.processes=two"], "runner.processes must be auto or a whole number >= 1, got 'two'"),
    (["+runner.admission.targt=1"], "runner.admission: unknown key(s) targt"),
    (["benchmark=file"], "missing required config key 'benchmark.path'"),
    (["catalog=productdb"], "missing required config key 'catalog.path'"),
])
def test_a_bad_value_is_one_line_naming_the_key(overrides, message):
    with pytest.raises(ConfigError) as info:
        parse(load_config(overrides))
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


def test_a_section_from_a_partial_mapping_gets_the_yaml_values():
    judge = section(LLMJudgeConfig, {"name": "llm", "model": "sim"}, defaults=["judge=llm"])
    assert judge.granularity == "sample" and judge.max_attempts == 3 and judge.model == "sim"
    with pytest.raises(ConfigError, match="judge.concurrency must be a positive integer, got 0"):
        section(LLMJudgeConfig, {"concurrency": 0}, defaults=["judge=llm"])


def test_the_run_identity_leaves_out_unset_schema_keys():
    from ecab.run import identity_of, redact, stable_hash

    def identity(*overrides):
        return identity_of(redact(dataclasses.asdict(parse(load_config(list(overrides))))))

    plain = identity()
    assert "target" not in plain["model"] and "options" not in plain["catalog"] and "name" not in plain["benchmark"]
    assert "runner" not in plain and "judge" not in plain and "max_line_bytes" not in plain["benchmark"]
    assert stable_hash(identity("model.target=x:y")) != stable_hash(plain)
    assert stable_hash(identity("runner.concurrency=3", "judge=llm")) == stable_hash(plain)


def test_reading_the_config_starts_no_simulator():
    from ecab.construct.settings import construct_settings

    settings = construct_settings(parse(load_config(["construct.verbalizer=llm", "construct.llm.model=sim"])))
    assert settings.llm.model.sim is not None and settings.llm.model.base_url is None


# ------------------------------------------------------------------------------------------ catalog sources

def test_builtin_sources_keep_their_fingerprints_and_target_options_enter_only_when_set():
    from ecab.catalog.build import catalog_fingerprint, fingerprint_inputs

    cfg = parse(load_config([])).catalog
    spec = fingerprint_inputs(cfg)
    assert "target" not in spec and "options" not in spec
    assert set(spec) == {"store_version", "source", "source_version", "embedding_model", "shards", "size", "seed"}
    with_options = dataclasses.replace(cfg, options={"x": 1})
    assert catalog_fingerprint(with_options) != catalog_fingerprint(cfg)


def test_a_registered_source_and_a_python_target_build_the_same_products(tmp_path, monkeypatch):
    from ecab.catalog.build import catalog_fingerprint, iter_source
    from ecab.catalog.sources import CATALOG_SOURCES, register_catalog_source

    module = tmp_path / "my_catalog_source.py"
    module.write_text(textwrap.dedent("""
        from ecab.catalog.synthetic import iter_synthetic

        def products(cfg):
            yield from iter_synthetic(cfg.options.get("n", 7), cfg.seed, cfg.batch_size)
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("my_catalog_source", None)
    base = dataclasses.asdict(parse(load_config([])).catalog)
    by_target = CatalogConfig(**{**base, "source": "python", "target": "my_catalog_source:products",
                                 "options": {"n": 5}})
    assert sum(len(b.products) for b in iter_source(by_target)) == 5

    import my_catalog_source
    register_catalog_source("test-mine", my_catalog_source.products, replace=True)
    try:
        registered = CatalogConfig(**{**base, "source": "test-mine", "options": {"n": 5}})
        assert sum(len(b.products) for b in iter_source(registered)) == 5
        assert catalog_fingerprint(registered) != catalog_fingerprint(by_target)
    finally:
        CATALOG_SOURCES._entries.pop("test-mine", None)
    with pytest.raises(ConfigError, match="catalog.target"):
        list(iter_source(CatalogConfig(**{**base, "source": "python"})))

"""The model layer (ecab/llm): one settings type read the same way by every role, errors that name the config key
they came from, and the boundary of the layer and of the simulator (neither imports a stage)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ecab.config import ConfigError
from ecab.llm import ChatClient, resolve_api_key
from ecab.llm.settings import model_settings

ECAB = Path(__file__).resolve().parents[2] / "ecab"
STAGES = ("ecab.agents", "ecab.judge", "ecab.construct", "ecab.env", "ecab.runner", "ecab.reduce", "ecab.catalog",
          "ecab.bench", "ecab.run")


def test_one_model_config_reads_the_same_for_the_agent_the_judge_and_the_verbalizer(monkeypatch):
    from ecab.construct.llm_verbalizer import resolve
    from ecab.judge.llm import judge_settings

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    agent = model_settings("gpt-5-mini")
    judge = judge_settings({"name": "llm", "model": "gpt-5-mini", "max_attempts": 3,
                                       "transport_attempts": 4, "concurrency": 8, "timeout_s": 50}).model
    verbalizer = resolve({"model": "gpt-5-mini", "temperature": 0.0, "max_attempts": 2}).model
    for role in (judge, verbalizer):
        assert (role.model_id, role.price_per_million, role.max_tokens_param, role.extra_body) == \
            (agent.model_id, agent.price_per_million, agent.max_tokens_param, agent.extra_body)
        assert role.temperature is None          # a reasoning model takes no temperature, whatever the role asks
        assert role.max_output_tokens == agent.max_output_tokens == 16384
    assert agent.temperature == 1.0 and agent.max_attempts == 8
    # the judge's own HTTP attempts, timeout and gate; the verbalizer keeps the model's
    assert (judge.max_attempts, judge.timeout_s, judge.concurrency) == (4, 50.0, 8)
    assert (verbalizer.max_attempts, verbalizer.timeout_s) == (agent.max_attempts, agent.timeout_s)


def test_a_role_without_an_output_limit_gets_the_role_default():
    inline = model_settings({"name": "x", "model_id": "m", "price_input_per_mtok": 2},
                                       config_key="judge.model")
    assert inline.max_output_tokens is None and inline.price_per_million == {"input": 2.0}
    role = inline.for_role(temperature=0.0)
    assert role.temperature == 0.0 and role.max_output_tokens == 4096
    assert ChatClient(role, api_key="k").request([])["max_completion_tokens"] == 4096


@pytest.mark.parametrize("key", ["model", "judge.model", "construct.llm.model"])
def test_errors_name_the_config_key_the_model_came_from(key, monkeypatch):
    with pytest.raises(ConfigError, match=f"^{key}: unknown model 'nope'"):
        model_settings("nope", config_key=key)
    with pytest.raises(ConfigError, match=f"^{key}.http_client must be one of aiohttp, httpx"):
        model_settings({"model_id": "m", "http_client": "curl"}, config_key=key)
    with pytest.raises(ConfigError, match=rf"^{key}.price_per_million.output must be a number"):
        model_settings({"model_id": "m", "price_per_million": {"output": "cheap"}}, config_key=key)
    with pytest.raises(ConfigError, match=rf"keys do not belong in the config \({key}.api_key\)"):
        model_settings({"model_id": "m", "api_key": "sk-inline"}, config_key=key)
    monkeypatch.delenv("ECAB_TEST_LAYER_KEY", raising=False)
    settings = model_settings({"name": "n", "model_id": "m", "api_key_env": "ECAB_TEST_LAYER_KEY"},
                                         config_key=key)
    with pytest.raises(ConfigError, match=f"^{key}=n needs the environment variable ECAB_TEST_LAYER_KEY"):
        resolve_api_key(settings)


def test_settings_are_hashable_and_equal_by_value():
    a, b = model_settings("kimi-k2.6"), model_settings("kimi-k2.6")
    assert a == b and hash(a) == hash(b) and a.extra_body == {"reasoning": {"max_tokens": 2048}}
    assert hash(a.replace(base_url="http://elsewhere/v1")) != hash(a)


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


@pytest.mark.parametrize("package", ["llm", "sim"])
def test_the_model_layer_and_the_simulator_import_no_stage(package):
    """Function-level imports count too. `python -m ecab.sim` (its __main__) may import every stage's policy."""
    for path in sorted((ECAB / package).glob("*.py")):
        if path.name == "__main__.py":
            continue
        staged = sorted(name for name in _imports(path) if name.startswith(STAGES))
        assert staged == [], f"{path.relative_to(ECAB.parent)} imports {staged}"


def test_a_model_without_a_price_table_costs_unknown_not_zero():
    """An own endpoint without prices (settings.py honest_prices) has no price table: a reply's cost is None
    (unknown), and a running total with one such reply stays unknown (env/agent_protocol.py add_cost)."""
    from ecab.env.agent_protocol import add_cost
    from ecab.llm.settings import ModelSettings
    unpriced = ModelSettings(name="gpt-5", model_id="ecab-sim-heuristic", base_url="http://127.0.0.1:18765/v1")
    assert unpriced.cost_usd(1000, 100) is None
    priced = unpriced.replace(price_per_million={"input": 1.0, "output": 2.0})
    assert priced.cost_usd(1_000_000, 1_000_000) == 3.0
    assert add_cost(0.0, None) is None and add_cost(None, 1.0) is None and add_cost(1.0, 2.0) == 3.0

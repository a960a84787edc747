"""The extension points (ecab/core/plugins.py): a registered or imported agent and judge are found by their
config, a wrong name or import path is one line naming the key, and an installed package registers through
the `ecab.plugins` entry-point group."""
import asyncio
import textwrap

import pytest

import ecab
from ecab.agents import AGENTS, agent_factory, check_agent_config, make_agent
from ecab.config import ConfigError
from ecab.core import plugins
from ecab.judge.dispatch import JUDGES, check_judge_config, configured_judge
from ecab.schema import Task, Trajectory

TASK = Task.from_dict({"id": "t1", "intent_category": "product_search", "user_query": "a cable",
                       "target_product": {"product_id": "P1", "title": "Cable"},
                       "rubrics": [{"id": "r1", "type": "entity_match", "field": "title", "expected_value": "cable"},
                                   {"id": "r2", "type": "entity_match", "field": "title", "expected_value": "usb"}]})


@pytest.fixture
def registered():
    """Names registered by a test, removed after it so no test sees another's agents or judges."""
    names = []
    yield names
    for registry, name in names:
        registry.unregister(name)


def test_a_registered_agent_is_built_by_its_kind_with_its_options(registered):
    @ecab.register_agent("test-echo")
    def make(context):
        class Echo:
            name = "echo"
            options = context.options

            async def act(self, messages, tools):
                return ecab.AgentTurn(message={"role": "assistant", "content": context.query})
        return Echo()
    registered.append((AGENTS, "test-echo"))

    agent = make_agent({"kind": "test-echo", "options": {"depth": 3}}, TASK, seed=1, budget=7)
    assert agent.agent.options == {"depth": 3}          # the user's agent, guarded (make_agent)
    turn = asyncio.run(agent.act([], []))
    assert turn.message["content"] == "a cable"
    with pytest.raises(ConfigError, match="already registered"):
        ecab.register_agent("test-echo", lambda c: None)


@pytest.mark.parametrize("model, message", [
    ({"kind": "nope"}, "unknown model.kind 'nope'; choose one of: heuristic, openai, oracle, query-only, random"),
    ({"kind": "python"}, "model.kind=python needs model.target"),
    ({"kind": "python", "target": "examples.plain_agent"}, "model.target must be an import path"),
    ({"kind": "python", "target": "no_such_package_xyz.mod:make"}, "model.target: cannot import 'no_such_package_xyz.mod'"),
    ({"kind": "python", "target": "examples.plain_agent:missing"}, "has no attribute 'missing'"),
    ({"kind": "python", "target": "examples.plain_agent:__doc__"}, "is not callable"),
])
def test_a_wrong_agent_config_is_one_line_naming_the_key(model, message):
    with pytest.raises(ConfigError) as caught:
        check_agent_config(model)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_a_python_target_is_imported_by_name():
    from examples.plain_agent import make_agent as example
    assert agent_factory({"kind": "python", "target": "examples.plain_agent:make_agent"}) is example


def test_a_user_judge_needs_only_judge_episode_and_gets_the_correctness_rule(registered):
    class Strict:
        async def judge_episode(self, task, trajectory, catalog):
            return [ecab.Verdict(rubric_id=r.id, type=r.type, satisfied=r.id == "r1") for r in task.rubrics]

    ecab.register_judge("test-strict", lambda context: Strict())
    registered.append((JUDGES, "test-strict"))
    config = {"name": "strict", "kind": "test-strict"}
    check_judge_config(config)
    traj = Trajectory(id="t1", predicted_product_id="P2", unit={"task_id": "t1"})
    with configured_judge(config) as judge:
        judgement = asyncio.run(judge.judge_episode(TASK, traj, None))
        assert (judge.name, judge.model_name) == ("strict", "strict")
        assert judge.describe()["kind"] == "Strict"
    assert judgement.judge == "strict" and judgement.all_satisfied is False and judgement.correct is False
    assert [v.satisfied for v in judgement.verdicts] == [True, False]


def test_a_judge_factory_that_returns_no_judge_is_named():
    with pytest.raises(ConfigError, match="expected an object with async judge_episode"):
        with configured_judge({"name": "x", "kind": "python", "target": "builtins:str"}):
            pass


def install_plugin(folder, monkeypatch, distribution: str, entry_point: str) -> None:
    """An installed distribution in `folder` with one `ecab.plugins` entry point, seen by a fresh lookup."""
    info = folder / f"{distribution.replace('-', '_')}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[ecab.plugins]\n{entry_point}\n")
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setattr(plugins, "_loaded", False)


def test_an_installed_package_registers_through_the_entry_point_group(tmp_path, monkeypatch):
    (tmp_path / "ecab_test_plugin.py").write_text(textwrap.dedent("""
        import ecab

        def register():
            ecab.register_agent("from-entry-point", lambda context: None)
    """))
    install_plugin(tmp_path, monkeypatch, "ecab-test-plugin", "test = ecab_test_plugin:register")
    try:
        assert "from-entry-point" in AGENTS.names()
        assert AGENTS.get("from-entry-point")(None) is None
    finally:
        AGENTS.unregister("from-entry-point")


def test_a_broken_plugin_is_named_not_a_traceback(tmp_path, monkeypatch):
    install_plugin(tmp_path, monkeypatch, "broken-plugin", "broken = no_such_module_abc:register")
    with pytest.raises(plugins.PluginError, match="plugin 'broken' .* failed to load: ModuleNotFoundError"):
        AGENTS.get("anything-unregistered")


def test_the_public_api_is_lazy_and_complete():
    import subprocess
    import sys
    probe = ("import sys, ecab; heavy = [m for m in ('ray', 'torch', 'lancedb', 'openai') if m in sys.modules]; "
             "print(heavy); print(sorted(n for n in ecab.__all__ if getattr(ecab, n, None) is None))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == "[]"           # importing ecab pulls in nothing heavy
    assert out.stdout.splitlines()[1] == "[]"           # every public name resolves
    for name in ("evaluate", "Agent", "AgentTurn", "Judge", "Verdict", "Task", "Product", "register_agent",
                 "register_judge", "register_catalog_source", "register_tool"):
        assert name in ecab.__all__


def test_a_users_agent_with_an_endpoint_gets_the_runs_shared_chat_client(registered, small_run_cache, tmp_path):
    """Not only kind=openai: any agent whose model section names an endpoint (model_id) is handed the chat
    client the runner built, with the endpoint's limiter and retries, shared by every episode."""
    from conftest import SMALL_RUN

    clients = []

    @ecab.register_agent("test-wrapped-openai")
    def wrapped(context):
        clients.append(context.chat)
        return AGENTS.get("openai")(context)        # a user's agent built around ecab's own openai agent
    registered.append((AGENTS, "test-wrapped-openai"))

    result = ecab.evaluate([*SMALL_RUN, "benchmark.limit=3", f"cache_dir={small_run_cache}", f"run.dir={tmp_path}",
                            "model=sim", "model.kind=test-wrapped-openai", "model.sim.rate_429=0",
                            "model.sim.rate_5xx=0"], report=False)
    assert len(clients) == 3 and clients[0] is not None and all(c is clients[0] for c in clients)
    assert result.summary["total_samples"] == 3 and result.summary["tokens_and_cost"]["total"]["input_tokens"] > 0


def test_a_users_broken_factory_stops_the_run_and_a_broken_act_is_the_episodes_agent_error(registered):
    from ecab.env.agent_protocol import AgentError, EndpointRefused

    def broken(context):
        raise ValueError("no model loaded")

    class Flaky:
        name = "flaky"

        async def act(self, messages, tools):
            return {}["missing"]

    for name, factory in (("test-broken", broken), ("test-nothing", lambda c: 42), ("test-flaky", lambda c: Flaky())):
        ecab.register_agent(name, factory)
        registered.append((AGENTS, name))
    with pytest.raises(EndpointRefused, match=r"the agent factory model.kind=test-broken: raised ValueError: "
                                              r"no model loaded \(.*test_plugins.py:\d+ in broken\)"):
        make_agent({"kind": "test-broken"}, TASK, seed=0)
    with pytest.raises(EndpointRefused, match="returned int: expected an Agent"):
        make_agent({"kind": "test-nothing"}, TASK, seed=0)
    agent = make_agent({"kind": "test-flaky"}, TASK, seed=0)
    assert agent.name == "flaky"
    with pytest.raises(AgentError, match=r"the agent raised KeyError: 'missing' \(.*test_plugins.py:\d+ in act\)"):
        asyncio.run(agent.act([], []))
    from ecab.agents.oracle import OracleAgent
    assert isinstance(make_agent({"kind": "oracle"}, TASK, seed=0), OracleAgent)    # ecab's own are not wrapped


def test_a_users_judge_that_raises_is_named_with_the_episode(registered):
    from ecab.env.agent_protocol import EndpointRefused

    class Buggy:
        async def judge_episode(self, task, trajectory, catalog):
            raise RuntimeError("judge bug")

    ecab.register_judge("test-buggy", lambda context: Buggy())
    registered.append((JUDGES, "test-buggy"))
    with configured_judge({"name": "buggy", "kind": "test-buggy"}) as judge:
        with pytest.raises(EndpointRefused, match=r"the judge 'buggy' raised RuntimeError: judge bug \(.*in "
                                                  r"judge_episode\) on episode t1; re-judge with python -m ecab.judge"):
            asyncio.run(judge.judge_episode(TASK, Trajectory(id="t1"), None))

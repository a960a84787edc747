"""Agents by model config: every kind of agent is a factory in one registry (`AGENTS`), ecab's own included.

A model config names its agent by `kind` (conf/model/*.yaml): the offline reference agents (oracle, heuristic,
random, query-only), `openai` for any OpenAI-compatible endpoint, a name a user registered
(`ecab.register_agent`, or an installed package's `ecab.plugins` entry point), or `python` with a `target`
import path to the user's factory (docs/extending.md). A factory gets one `AgentContext` and returns either an
`Agent` (one `act` per turn) or a loop-owning agent (`run(session)`, adapted by agents/bridge.py), so the
episode loop, the budget, the record and the judge are the same for every agent.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Callable

from ecab.config import ConfigError
from ecab.core.plugins import Registry
from ecab.env.agent_protocol import Agent, AgentError, EndpointRefused, InfraError
from ecab.schema import Task

LLM_KINDS = ("openai",)     # kinds that always call an endpoint (model_id, base_url, key, limiter)


@dataclass
class AgentContext:
    """What a factory gets to build the agent of one episode (agents keep per-episode state, so every episode
    gets a fresh one).

    `task` is the whole task, hidden parts included: ecab's reference agents (the oracle) need it. An agent
    under evaluation reads only `query` and what its tools return, as a model does."""

    task: Task
    seed: int                                   # the episode's seed (seed, task, trial), for any randomness
    budget: int                                 # the episode's budget of tool calls
    options: dict[str, Any] = field(default_factory=dict)   # model.options: the user's own keys
    model: Any = None                           # the whole model config section
    chat: Any = None                            # the run's shared ChatClient (with the endpoint's limiter), when
                                                # the model config names an endpoint (model_id); else None

    @property
    def query(self) -> str:
        """The shopper's visible query: also the episode's first user message."""
        return self.task.user_query or ""


AgentFactory = Callable[[AgentContext], Any]

AGENTS: Registry[AgentFactory] = Registry("agent", "model.kind")


def register_agent(name: str, factory: AgentFactory | None = None, *, replace: bool = False):
    """Register an agent factory under `name` (then `model.kind=<name>` selects it). Usable as a decorator:
    `@ecab.register_agent("mine")` over `def make(context: AgentContext) -> Agent`."""
    if factory is None:
        return lambda f: AGENTS.register(name, f, replace=replace)
    return AGENTS.register(name, factory, replace=replace)


def _oracle(context: AgentContext) -> Agent:
    from ecab.agents.oracle import OracleAgent
    return OracleAgent(context.task)


def _heuristic(context: AgentContext) -> Agent:
    from ecab.agents.heuristic import HeuristicAgent
    return HeuristicAgent(context.task, context.seed, budget=context.budget)


def _random(context: AgentContext) -> Agent:
    from ecab.agents.random_agent import RandomAgent
    return RandomAgent(context.task, context.seed)


def _query_only(context: AgentContext) -> Agent:
    from ecab.agents.query_only import QueryOnlyAgent
    return QueryOnlyAgent(context.task, context.seed, context.budget)


def _openai(context: AgentContext) -> Agent:
    from ecab.agents.openai_agent import OpenAIAgent
    from ecab.llm.client import ChatClient
    chat = context.chat if context.chat is not None else ChatClient(llm_settings(context.model))
    return OpenAIAgent(chat, context.budget, seed=context.seed)


for _name, _factory in (("oracle", _oracle), ("heuristic", _heuristic), ("random", _random),
                        ("query-only", _query_only), ("openai", _openai)):
    AGENTS.register(_name, _factory)

OFFLINE_KINDS = ("oracle", "heuristic", "random", "query-only")
BUILTIN_KINDS = frozenset(OFFLINE_KINDS + LLM_KINDS)   # ecab's own: an exception out of them is ecab's bug


def _get(section: Any, key: str, default: Any = None) -> Any:
    """A key of a config section given as a dict, an omegaconf node or a typed dataclass."""
    if isinstance(section, dict):
        return section.get(key, default)
    value = getattr(section, key, default)
    return default if value is None else value


def _kind(model_cfg: Any) -> str:
    return str(_get(model_cfg, "kind", ""))


def uses_endpoint(model_cfg: Any) -> bool:
    """Whether the model config names an OpenAI-compatible endpoint: always for kind openai, and for any other
    kind whose config sets `model_id` (a user's agent that calls a model through ecab's chat client)."""
    return _kind(model_cfg) in LLM_KINDS or bool(_get(model_cfg, "model_id"))


def llm_settings(model_cfg: Any):
    """The model layer's settings (ecab.llm.ModelSettings) of a model config that names an endpoint; None for
    agents that call none. The runner builds one limiter and chat client from them, shared by all episodes."""
    if not uses_endpoint(model_cfg):
        return None
    from ecab.llm.settings import model_settings
    return model_settings(model_cfg)


def agent_factory(model_cfg: Any) -> AgentFactory:
    """The factory a model config names: `kind: python` imports `target`, any other kind is looked up."""
    return AGENTS.resolve(_kind(model_cfg), _get(model_cfg, "target"))


def check_agent_config(model_cfg: Any) -> None:
    """Before any work: the model's kind is known and a python target imports (one line naming the key)."""
    agent_factory(model_cfg)


def make_agent(model_cfg: Any, task: Task, seed: int, budget: int = 100, *, chat=None) -> Agent:
    """A fresh agent for one episode. LLM agents share `chat`, the chat client the runner built with the
    endpoint's limiter; without one an openai agent makes its own, without a limiter.

    A user's agent (any kind but ecab's own) is guarded: a factory that raises, or returns no agent, would fail
    every episode the same way, so it stops the run in one line naming the factory (EndpointRefused: finished
    episodes are kept); an exception out of its `act` is that episode's agent_error, with where it was raised."""
    options = _get(model_cfg, "options") or {}
    context = AgentContext(task=task, seed=seed, budget=budget, options=dict(options), model=model_cfg, chat=chat)
    factory = agent_factory(model_cfg)
    if _kind(model_cfg) in BUILTIN_KINDS:
        return as_agent(factory, context)
    from ecab.core.plugins import describe_exception
    where = _get(model_cfg, "target") or f"model.kind={_kind(model_cfg)}"
    try:
        agent = as_agent(factory, context)
    except Exception as exc:  # noqa: BLE001 - a user's factory failing is named, not a traceback
        detail = str(exc) if isinstance(exc, ConfigError) else f"raised {describe_exception(exc)}"
        raise EndpointRefused(f"the agent factory {where}: {detail}") from None
    return agent if hasattr(agent, "session") else GuardedAgent(agent)


class GuardedAgent:
    """A user's turn-by-turn agent: what its `act` raises (other than the episode errors) ends that episode in
    agent_error with the exception and where it was raised, as the bridge does for a loop-owning agent."""

    def __init__(self, agent: Any):
        self.agent = agent
        self.name = getattr(agent, "name", None) or "agent"

    async def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]):
        from ecab.core.plugins import describe_exception
        try:
            return await self.agent.act(messages, tools)
        except (AgentError, InfraError, EndpointRefused):
            raise
        except Exception as exc:  # noqa: BLE001 - the user's agent failing is the episode's agent_error
            raise AgentError(f"the agent raised {describe_exception(exc)}") from None

    async def aclose(self) -> None:
        close = getattr(self.agent, "aclose", None)
        if close is not None:
            await close()


def as_agent(factory: AgentFactory, context: AgentContext) -> Agent:
    """Call a factory and adapt what it returns: an `Agent` as is, a loop-owning agent (an object with `run`,
    or the factory itself an `async def (session)`) through the bridge."""
    from ecab.agents.bridge import BridgeAgent
    if inspect.iscoroutinefunction(factory):
        return BridgeAgent(factory, context)
    built = factory(context)
    if callable(getattr(built, "act", None)):
        return built
    if callable(getattr(built, "run", None)):
        return BridgeAgent(built.run, context, name=getattr(built, "name", None))
    raise ConfigError(f"the agent factory {getattr(factory, '__qualname__', factory)!r} returned "
                      f"{type(built).__name__}: expected an Agent (async act(messages, tools)) or a loop-owning "
                      f"agent (async run(session))")

"""Agents by model config: the offline ones, and `kind: openai` for any OpenAI-compatible endpoint."""
from __future__ import annotations

from typing import Any

from ecab.env.agent_protocol import Agent

OFFLINE_KINDS = ("oracle", "heuristic", "random", "query-only")
LLM_KINDS = ("openai",)


def _kind(model_cfg: Any) -> str:
    return model_cfg["kind"] if isinstance(model_cfg, dict) else model_cfg.kind


def llm_settings(model_cfg: Any):
    """The model layer's settings (ecab.llm.ModelSettings) of an LLM model config; None for offline agents."""
    if _kind(model_cfg) not in LLM_KINDS:
        return None
    from ecab.llm import ModelSettings
    return ModelSettings.from_config(model_cfg)


def make_agent(model_cfg: Any, task, seed: int, budget: int = 100, *, chat=None) -> Agent:
    """A fresh agent for one episode (agents keep per-episode state). LLM agents share `chat`, the chat client
    the runner built with the endpoint's limiter; without one an LLM agent makes its own, without a limiter."""
    kind = _kind(model_cfg)
    if kind == "oracle":
        from ecab.agents.oracle import OracleAgent
        return OracleAgent(task)
    if kind == "heuristic":
        from ecab.agents.heuristic import HeuristicAgent
        return HeuristicAgent(task, seed, budget=budget)
    if kind == "random":
        from ecab.agents.random_agent import RandomAgent
        return RandomAgent(task, seed)
    if kind == "query-only":
        from ecab.agents.query_only import QueryOnlyAgent
        return QueryOnlyAgent(task, seed, budget)
    if kind == "openai":
        from ecab.agents.openai_agent import OpenAIAgent
        from ecab.llm.client import ChatClient
        return OpenAIAgent(chat if chat is not None else ChatClient(llm_settings(model_cfg)), budget)
    raise ValueError(f"unknown model kind '{kind}' (kinds: {', '.join(OFFLINE_KINDS + LLM_KINDS)})")

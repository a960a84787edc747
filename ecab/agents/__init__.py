"""Agents by model config: the offline ones, and `kind: openai` for any OpenAI-compatible endpoint."""
from __future__ import annotations

from typing import Any

from ecab.agents.base import Agent

OFFLINE_KINDS = ("oracle", "heuristic", "random")
LLM_KINDS = ("openai",)


def make_agent(model_cfg: Any, task, seed: int, budget: int = 100) -> Agent:
    """A fresh agent for one episode (agents keep per-episode state; LLM agents share one client)."""
    kind = model_cfg["kind"] if isinstance(model_cfg, dict) else model_cfg.kind
    if kind == "oracle":
        from ecab.agents.oracle import OracleAgent
        return OracleAgent(task)
    if kind == "heuristic":
        from ecab.agents.heuristic import HeuristicAgent
        return HeuristicAgent(task, seed)
    if kind == "random":
        from ecab.agents.random_agent import RandomAgent
        return RandomAgent(task, seed)
    if kind == "openai":
        from ecab.agents.openai_agent import OpenAIAgent
        return OpenAIAgent(model_cfg, budget)
    raise ValueError(f"unknown model kind '{kind}' (kinds: {', '.join(OFFLINE_KINDS + LLM_KINDS)})")

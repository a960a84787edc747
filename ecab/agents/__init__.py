"""Agents by model config: offline ones here; LLM agents (OpenAI-compatible) come with the real-models work."""
from __future__ import annotations

from typing import Any

from ecab.agents.base import Agent

OFFLINE_KINDS = ("oracle", "heuristic", "random")


def make_agent(model_cfg: Any, task, seed: int) -> Agent:
    """A fresh agent for one episode (agents keep per-episode state)."""
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
    raise ValueError(f"unknown model kind '{kind}' (offline kinds: {', '.join(OFFLINE_KINDS)})")

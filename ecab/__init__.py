"""ecab: a Ray-distributed, high-throughput evaluator for LLM shopping agents (EComAgentBench).

The public API is what this module exports (`ecab.__all__`); everything else is private by convention and may
change. docs/extending.md shows each extension point with code:

    import ecab
    result = ecab.evaluate(["model=oracle", "benchmark.limit=5"])   # what `python -m ecab.run` runs
    print(result.accuracy)

    @ecab.register_agent("mine")                                    # then: python -m ecab.run model.kind=mine
    def make(context: ecab.AgentContext) -> ecab.Agent: ...

Names are resolved on first use, so `import ecab` stays cheap (no Ray, no torch) and every submodule can be
imported on its own.
"""
from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# public name -> the module that defines it
_EXPORTS: dict[str, str] = {
    "evaluate": "ecab.api",
    "RunResult": "ecab.api",
    "load_config": "ecab.config",
    "ConfigError": "ecab.config",
    "Agent": "ecab.env.agent_protocol",
    "AgentTurn": "ecab.env.agent_protocol",
    "AgentError": "ecab.env.agent_protocol",
    "AgentContext": "ecab.agents",
    "register_agent": "ecab.agents",
    "ToolSession": "ecab.agents.bridge",
    "Judge": "ecab.judge.protocol",
    "JudgeContext": "ecab.judge.dispatch",
    "register_judge": "ecab.judge.dispatch",
    "make_judgement": "ecab.judge.episode",
    "Judgement": "ecab.schema",
    "Verdict": "ecab.schema",
    "Task": "ecab.schema",
    "Product": "ecab.schema",
    "Review": "ecab.schema",
    "Rubric": "ecab.schema",
    "Trajectory": "ecab.schema",
    "register_catalog_source": "ecab.catalog.sources",
    "CatalogBatch": "ecab.catalog.base",
    "Tool": "ecab.env.tools",
    "register_tool": "ecab.env.tools",
    "unregister_tool": "ecab.env.tools",
    "registered_tool": "ecab.env.tools",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ecab' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value          # resolved once
    return value


def __dir__() -> list[str]:
    return sorted(__all__)

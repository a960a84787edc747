"""The construction settings: built once from the typed `construct` section (ecab.config.ConstructConfig; its
checks ran when the entry point parsed the config) by `construct_settings` (docs/architecture.md §4).

`Settings` travels to every worker process with the work (it is pickled), so it holds plain values only; the
LLM verbalizer's block is resolved here, before any catalog work (its model config and API key). Its simulator
(construct.llm.model=sim) is not started here: `serve_verbalizer(settings)` starts it where construction
starts (ecab/construct/pipeline.py), so reading a config has no side effect.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ecab.config import ConfigError, ConstructConfig, EcabConfig, section

from ecab.construct.intents import get_intent
from ecab.construct.sample import DEFAULT_MIN_CATEGORY_SIZE
from ecab.construct.validate import Gate
from ecab.fields import INTENTS


@dataclass(frozen=True)
class Settings:
    """Built by `construct_settings` only: the values are conf/config.yaml's `construct` section (no defaults here)."""

    seed: int
    n_per_intent: int
    intents: tuple[str, ...]
    max_matches: int
    workers: int
    max_attempts: int
    verbalizer: str
    # verbalizer=llm: the resolved construct.llm block (llm_verbalizer.LLMVerbalizerSettings; the simulator URL
    # once serve_verbalizer ran), so spawned workers receive it with the Settings
    llm: Any
    min_category_size: int
    max_candidates: int | None            # cap on candidates tried per intent (None: the whole pool)
    # Hidden intent must matter (issues 15, 27; validate.Gate): hide only load-bearing features, then accept a
    # task only when these shares of its rubrics are load-bearing and its query alone matches this many products.
    load_bearing_only: bool
    min_hidden_load_bearing: float
    min_query_load_bearing: float
    min_query_matches: int

    @property
    def gate(self) -> Gate | None:
        """The validator's validity gate (None when every gate is off)."""
        if self.min_hidden_load_bearing <= 0 and self.min_query_load_bearing <= 0 and self.min_query_matches <= 0:
            return None
        return Gate(hidden_load_bearing=self.min_hidden_load_bearing, query_load_bearing=self.min_query_load_bearing,
                    query_matches=self.min_query_matches)

    def fingerprint_fields(self) -> dict[str, Any]:
        """What changes the output (workers does not)."""
        fields = {"seed": self.seed, "n_per_intent": self.n_per_intent, "intents": list(self.intents),
                  "max_matches": self.max_matches, "max_attempts": self.max_attempts,
                  "verbalizer": self.verbalizer, "min_category_size": self.min_category_size,
                  "max_candidates": self.max_candidates, "load_bearing_only": self.load_bearing_only,
                  "min_hidden_load_bearing": self.min_hidden_load_bearing,
                  "min_query_load_bearing": self.min_query_load_bearing, "min_query_matches": self.min_query_matches}
        if self.llm is not None:     # only then: template builds keep their fingerprints
            fields["llm"] = self.llm.fingerprint_fields()
        return fields


def construct_config(cfg: Any) -> ConstructConfig:
    """The typed `construct` section of `cfg`: the parsed config (EcabConfig), the section itself, or a mapping
    (the whole config or the group: conf/config.yaml's construct values for the keys it leaves out)."""
    if isinstance(cfg, EcabConfig):
        return cfg.construct
    if isinstance(cfg, ConstructConfig):
        return cfg
    group = cfg.get("construct", cfg) if hasattr(cfg, "get") else cfg
    return section(ConstructConfig, group, defaults=[])


def construct_settings(cfg: Any) -> Settings:
    """The construction settings of the typed construct section (see construct_config); unknown intents and a
    bad construct.llm block fail here, before any work. Settings are returned as they are."""
    if isinstance(cfg, Settings):
        return cfg
    group = construct_config(cfg)
    intents = tuple(group.intents or INTENTS)
    for intent in intents:
        get_intent(intent)
    llm = None
    if group.verbalizer == "llm":
        # Before any work: the model config and its API key are checked (the simulator starts with the build).
        from ecab.construct.llm_verbalizer import resolve
        llm = resolve(group.llm)
    return Settings(seed=group.seed, n_per_intent=group.n_per_intent, intents=intents, max_matches=group.max_matches,
                    workers=group.workers, max_attempts=group.max_attempts, verbalizer=group.verbalizer, llm=llm,
                    min_category_size=(DEFAULT_MIN_CATEGORY_SIZE if group.min_category_size is None
                                       else group.min_category_size),
                    max_candidates=group.max_candidates, load_bearing_only=group.load_bearing_only,
                    min_hidden_load_bearing=float(group.min_hidden_load_bearing),
                    min_query_load_bearing=float(group.min_query_load_bearing),
                    min_query_matches=group.min_query_matches)


def serve_verbalizer(settings: Settings) -> Settings:
    """The settings with construct.llm.model=sim pointed at the simulator this process serves (started on the
    first call, one per sim block and process, stopped at exit); any other settings as they are."""
    if settings.llm is None:
        return settings
    from ecab.construct.llm_verbalizer import simulated

    served = simulated(settings.llm)
    return settings if served is settings.llm else dataclasses.replace(settings, llm=served)


__all__ = ["ConfigError", "Settings", "construct_config", "construct_settings", "serve_verbalizer"]

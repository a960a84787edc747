"""The construction settings: the config's `construct` group, parsed and checked once (docs/architecture.md §4).

`Settings` travels to every worker process with the work (it is pickled), so it holds plain values only; the
LLM verbalizer's block is resolved here, before any catalog work (its model config, API key and simulator).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ecab.construct.intents import get_intent
from ecab.construct.sample import DEFAULT_MIN_CATEGORY_SIZE
from ecab.construct.validate import Gate
from ecab.fields import INTENTS


@dataclass(frozen=True)
class Settings:
    seed: int = 0
    n_per_intent: int = 25
    intents: tuple[str, ...] = tuple(INTENTS)
    max_matches: int = 1
    workers: int = 2
    max_attempts: int = 3
    verbalizer: str = "template"
    # verbalizer=llm: the resolved construct.llm block (llm_verbalizer.LLMVerbalizerSettings, simulator URL
    # included), so spawned workers receive it with the Settings
    llm: Any = None
    min_category_size: int = DEFAULT_MIN_CATEGORY_SIZE
    max_candidates: int | None = None     # cap on candidates tried per intent (None: the whole pool)
    # Hidden intent must matter (issues 15, 27; validate.Gate): hide only load-bearing features, then accept a
    # task only when these shares of its rubrics are load-bearing and its query alone matches this many products.
    load_bearing_only: bool = True
    min_hidden_load_bearing: float = 1.0
    min_query_load_bearing: float = 0.0
    min_query_matches: int = 5

    @classmethod
    def from_cfg(cls, cfg: Any) -> "Settings":
        """From the full config (its `construct` group) or the group itself; unknown intents fail here."""
        group = cfg.get("construct", cfg) if hasattr(cfg, "get") else cfg
        get = group.get if hasattr(group, "get") else (lambda k, d=None: getattr(group, k, d))
        intents = tuple(get("intents", None) or INTENTS)
        for intent in intents:
            get_intent(intent)
        n = int(get("n_per_intent", cls.n_per_intent))
        if n < 0:
            raise ValueError(f"construct.n_per_intent must be >= 0, got {n}")
        verbalizer, llm = str(get("verbalizer", cls.verbalizer)), None
        if verbalizer == "llm":
            # Before any work: the model config and its API key are checked, model=sim starts the simulator.
            from ecab.construct.llm_verbalizer import resolve
            llm = resolve(get("llm", None))
        shares = {}
        for key in ("min_hidden_load_bearing", "min_query_load_bearing"):
            shares[key] = float(get(key, getattr(cls, key)))
            if not 0.0 <= shares[key] <= 1.0:
                raise ValueError(f"construct.{key} must be within [0, 1], got {shares[key]}")
        min_query_matches = int(get("min_query_matches", cls.min_query_matches))
        if min_query_matches < 0:
            raise ValueError(f"construct.min_query_matches must be >= 0, got {min_query_matches}")
        return cls(seed=int(get("seed", cls.seed)), n_per_intent=n, intents=intents,
                   max_matches=int(get("max_matches", cls.max_matches)), workers=max(1, int(get("workers", cls.workers))),
                   max_attempts=max(1, int(get("max_attempts", cls.max_attempts))), verbalizer=verbalizer, llm=llm,
                   min_category_size=int(get("min_category_size", cls.min_category_size)),
                   max_candidates=None if get("max_candidates", None) is None else int(get("max_candidates")),
                   load_bearing_only=bool(get("load_bearing_only", cls.load_bearing_only)), min_query_matches=min_query_matches,
                   **shares)

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

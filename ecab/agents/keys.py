"""API keys: read from the environment variable a model config names, never from the config itself.

Model configs hold `api_key_env` (the variable's NAME, e.g. OPENAI_API_KEY); the value stays in the
process environment and in the openai client, so it never reaches config.yaml, logs or trajectories.
`api_key_env: null` means the endpoint needs no key (the simulator, a local vLLM).
"""
from __future__ import annotations

import os
from typing import Any

from ecab.config import ConfigError

NO_KEY_PLACEHOLDER = "not-needed"   # the openai client insists on some key; keyless endpoints ignore it


def _get(cfg: Any, key: str, default=None):
    if hasattr(cfg, "get"):          # dict and omegaconf DictConfig (struct mode too)
        return cfg.get(key, default)
    return getattr(cfg, key, default) if cfg is not None else default


def needs_api_key(model_cfg: Any) -> bool:
    return bool(_get(model_cfg, "api_key_env"))


def resolve_api_key(model_cfg: Any) -> str | None:
    """The key from the variable named by `api_key_env`; None when the model needs none.

    Raises ConfigError with the variable's name (never a value) when the variable is unset or empty.
    """
    variable = _get(model_cfg, "api_key_env")
    if _get(model_cfg, "api_key"):
        raise ConfigError(f"model {_get(model_cfg, 'name', '?')}: keys do not belong in the config (model.api_key); "
                          "export the key in an environment variable and name it in model.api_key_env")
    if not variable:
        return None
    value = os.environ.get(str(variable), "").strip()
    if not value:
        name = _get(model_cfg, "name", "?")
        raise ConfigError(f"model {name} needs the environment variable {variable} (its API key); "
                          f"export {variable}=... and run again, or pick an offline model "
                          "(model=heuristic, model=oracle, model=sim)")
    return value


def scrub(text: str, secret: str | None) -> str:
    """`text` with every occurrence of `secret` masked: server error messages sometimes echo the key."""
    if not text or not secret or secret == NO_KEY_PLACEHOLDER:
        return text
    return text.replace(secret, "***")

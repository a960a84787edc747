"""API keys: read from the environment variable a model config names, never from the config itself.

Model configs hold `api_key_env` (the variable's NAME, e.g. OPENAI_API_KEY); the value stays in the
process environment and in the openai client, so it never reaches config.yaml, logs or trajectories.
`api_key_env: null` means the endpoint needs no key (the simulator, a local vLLM). A key written into the
config itself is refused when the model block is parsed (ecab/llm/settings.py).
"""
from __future__ import annotations

import os

from ecab.config import ConfigError
from ecab.llm.settings import ModelSettings

NO_KEY_PLACEHOLDER = "not-needed"   # the openai client insists on some key; keyless endpoints ignore it


def resolve_api_key(settings: ModelSettings, offline: str | None = None) -> str | None:
    """The key from the variable named by `api_key_env`; None when the model needs none.

    Raises ConfigError naming the config key and the variable (never a value) when the variable is unset or
    empty; `offline` is the caller's advice for running without a key (default: the simulator).
    """
    variable = settings.api_key_env
    if not variable:
        return None
    value = os.environ.get(str(variable), "").strip()
    if not value:
        where = settings.config_key
        advice = offline or f"use the simulator ({where}=sim)"
        raise ConfigError(f"{where}={settings.name} needs the environment variable {variable} (its API key); "
                          f"export {variable}=... and run again, or {advice}")
    return value


def scrub(text: str, secret: str | None) -> str:
    """`text` with every occurrence of `secret` masked: server error messages sometimes echo the key."""
    if not text or not secret or secret == NO_KEY_PLACEHOLDER:
        return text
    return text.replace(secret, "***")

"""The model layer: everything it takes to call an OpenAI-compatible model, for every caller.

settings.py (ModelSettings: one model config, parsed once), keys.py (the API key from its variable),
client.py (ChatClient: requests, retries, gates, the reply cache, tokens and cost, classified errors),
retry.py (the tenacity policy), limits.py (the adaptive per-endpoint limiter the runners inject),
cache.py (the disk cache of replies). It imports only ecab's core (ecab.config), never a stage.
"""
from ecab.llm.client import REFUSED, REJECTED, UNAVAILABLE, ChatClient, ChatError, Reply, TokenUsage
from ecab.llm.keys import resolve_api_key
from ecab.llm.settings import ModelSettings

__all__ = ["ChatClient", "ChatError", "ModelSettings", "Reply", "TokenUsage", "resolve_api_key",
           "UNAVAILABLE", "REFUSED", "REJECTED"]

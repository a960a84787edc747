"""An OpenAI-compatible chat-completions simulator whose replies come from pluggable policies (see server.py
and policy.py); it imports no stage: the agent, the judge and construction bring their own policies."""
from ecab.sim.policy import PolicyFactory, ReplyPolicy
from ecab.sim.server import DEFAULT_MODEL_ID, FAULT_KINDS, SimConfig, SimServer, serve_if_simulated

__all__ = ["DEFAULT_MODEL_ID", "FAULT_KINDS", "PolicyFactory", "ReplyPolicy", "SimConfig", "SimServer",
           "serve_if_simulated"]

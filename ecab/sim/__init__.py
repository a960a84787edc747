"""An OpenAI-compatible chat-completions simulator driven by the heuristic policy (see server.py)."""
from ecab.sim.server import DEFAULT_MODEL_ID, FAULT_KINDS, SimConfig, SimServer

__all__ = ["DEFAULT_MODEL_ID", "FAULT_KINDS", "SimConfig", "SimServer"]

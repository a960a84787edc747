"""ecab: a Ray-distributed, high-throughput evaluator for LLM shopping agents (EComAgentBench)."""

__version__ = "0.1.0"

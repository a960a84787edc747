"""Benchmark construction: the seven-stage pipeline of SPEC §5 (see pipeline.py)."""

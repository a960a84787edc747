"""Benchmark construction: the seven-stage pipeline of docs/original-harness.md §5 (see pipeline.py)."""

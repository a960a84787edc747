"""Worked examples of ecab's extension API (docs/extending.md); each is run by tests/test_examples.py."""

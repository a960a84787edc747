"""Benchmarks (not tests): `python -m ecab.bench.search` (catalog search latency and throughput) and
`python -m ecab.bench.episodes` (episode throughput). They print tables; nothing here asserts."""

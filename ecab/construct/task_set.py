"""The configured task set, read the one way every command reads it (`python -m ecab.run`, `python -m
ecab.construct audit`, jobs/): a benchmark file (needs no catalog) or the generated benchmark of the catalog."""
from __future__ import annotations

from pathlib import Path

from ecab.config import ConfigError, EcabConfig
from ecab.schema import Task, read_tasks


def load_tasks(cfg: EcabConfig, catalog=None) -> list[Task]:
    """The runnable tasks (sample_status ok), the first `benchmark.limit` of them. Lines are capped at
    benchmark.max_line_bytes; bad UTF-8, bad JSON and repeated task ids are errors naming file:line."""
    cap = cfg.benchmark.max_line_bytes
    if cfg.benchmark.source == "file":
        tasks = read_tasks(str(cfg.benchmark.path), max_line_bytes=cap)
    else:
        from ecab.construct.benchmark_cache import ensure_benchmark
        tasks = read_tasks(ensure_benchmark(cfg, catalog, Path(cfg.cache_dir)), max_line_bytes=cap)
    tasks = [t for t in tasks if t.is_ok]
    if cfg.benchmark.limit is not None:
        tasks = tasks[: cfg.benchmark.limit]
    if not tasks:
        raise ConfigError("the benchmark has no runnable tasks (sample_status ok)")
    return tasks

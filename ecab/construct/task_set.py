"""The configured task set, read the one way every command reads it (`python -m ecab.run`, `python -m
ecab.construct audit`, jobs/): a benchmark file (needs no catalog) or the generated benchmark of the catalog."""
from __future__ import annotations

from pathlib import Path

from ecab.config import ConfigError, EcabConfig
from ecab.construct.task_selection import select_tasks
from ecab.schema import Task, read_tasks


def load_tasks(cfg: EcabConfig, catalog=None) -> list[Task]:
    """The runnable tasks (sample_status ok), selected by benchmark.ids / shuffle / limit (task_selection.py).
    Lines are capped at benchmark.max_line_bytes; bad UTF-8, bad JSON and repeated task ids are errors naming
    file:line. A limited generated benchmark is built only as far as the selection reaches
    (benchmark_cache.ensure_benchmark)."""
    cap = cfg.benchmark.max_line_bytes
    if cfg.benchmark.source == "file":
        path = Path(str(cfg.benchmark.path))
    else:
        from ecab.construct.benchmark_cache import ensure_benchmark
        path = ensure_benchmark(cfg, catalog, Path(cfg.cache_dir))
    every = read_tasks(str(path), max_line_bytes=cap)
    if not every:   # an empty (or blank) file: say which one, a user may have several benchmark files
        raise ConfigError(f"{path}: the benchmark file holds no tasks (it is empty)")
    tasks = [t for t in every if t.is_ok]
    bench = cfg.benchmark
    ids = None if bench.ids is None else [str(i) for i in bench.ids]
    tasks = select_tasks(tasks, limit=bench.limit, ids=ids, shuffle=bool(bench.shuffle), seed=cfg.seed,
                         source=str(path))
    if not tasks:
        raise ConfigError(f"{path}: the benchmark has no runnable tasks (sample_status ok)")
    return tasks

"""runner=ray: the `Runner` (ecab/runner/protocol.py) over a Ray cluster.

Topology (docs/architecture.md §7.2), one module per part:
- ray_cluster.py: the settings (`RayOptions`), one limiter actor per LLM endpoint (connecting to Ray:
  ecab/core/ray_connect.py).
- ray_catalog.py: `CatalogPool`, `shards x replicas` catalog actors, each opening its shard read-only; episode
  workers read the catalog through the same `Catalog` facade as runner=local, over Ray shard clients
  (`remote_catalog`), so results are identical and no worker loads the embedding model.
- ray_worker.py: `EpisodeWorker`, an async actor running many episodes at once (`run_unit`, the same code as
  runner=local), appending each finished trajectory to its own part file.
- ray_driver.py: `RayDriver`, the loop handing units to the workers (backpressure, requeue on a worker's death).
`RayRunner.run` starts what the run needs, drives it, and stops it again.
"""
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Mapping

import ray

from ecab.core.ray_connect import ensure_ray
from ecab.core.unit import Unit
from ecab.env.episode import EpisodeSettings
from ecab.llm.limits import LimiterSettings
from ecab.runner.episode import EpisodeOptions
from ecab.runner.protocol import OnDone, RunnerStats
from ecab.runner.ray_catalog import CatalogPool
from ecab.runner.ray_cluster import RayOptions, start_limiters
from ecab.runner.ray_driver import RayDriver
from ecab.runner.ray_worker import WorkerSpec
from ecab.runs import RunFolder
from ecab.schema import Task


class RayRunner:
    """runner=ray. A `pool` passed in (a budget study's) is used and left running; otherwise one is started
    for each run and stopped after it. `episode.model_cfg` is the typed model section (the workers unpickle it)."""

    name = "ray"

    def __init__(self, episode: EpisodeOptions, options: RayOptions, *, limits: LimiterSettings | None = None,
                 replicas: int = 1, address: str | None = None, pool: CatalogPool | None = None,
                 progress: bool = True):
        self.episode, self.options = episode, options
        self.limits = limits or LimiterSettings()
        self.replicas, self.address, self.pool, self.progress = replicas, address, pool, progress
        self.driver: RayDriver | None = None   # the current run's driver, while it runs

    def run(self, units: list[Unit], tasks: Mapping[str, Task], catalog, folder: RunFolder,
            settings: EpisodeSettings, *, on_done: OnDone | None = None) -> RunnerStats:
        if not units:
            return RunnerStats(runner="ray")
        spec = WorkerSpec(run_dir=str(Path(folder.path).resolve()), episode=self.episode,
                          settings=asdict(settings), search_mode=getattr(catalog, "mode", "hybrid"),
                          limiter_settings=asdict(self.limits))
        ensure_ray(self.address)
        pool = self.pool
        if pool is None:
            pool = CatalogPool(Path(catalog.path).resolve(), catalog.meta, self.replicas,
                               num_cpus=self.options.catalog_cpus,
                               max_concurrency=self.options.catalog_max_concurrency)
        limiters = start_limiters([spec.episode.model_cfg], spec.limiter_settings or {})
        self.driver = RayDriver(spec, dict(tasks), pool, self.options, limiters=limiters)
        try:
            return self.driver.run(units, progress=self.progress, on_done=on_done)
        finally:
            self.driver.shutdown()
            self.driver = None
            for handle in limiters.values():
                ray.kill(handle)
            if pool is not self.pool:
                pool.shutdown()

"""What a runner is: the `Runner` protocol runner=local and runner=ray implement, and `RunnerStats`, what
every runner returns.

A runner takes the units to run with their tasks, the catalog, the run folder and the episode settings;
it appends each finished trajectory to the run folder, then calls `on_done(trajectory)`; and it returns
what it counted. `ecab.run` records that under `runner_stats` in the manifest (`RunnerStats.to_dict`), and the
summary shows it as `runner`. The runner is chosen from `cfg.runner` by `ecab/runner/factory.py::make_runner`.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol

if TYPE_CHECKING:
    from ecab.catalog.base import CatalogReader
    from ecab.core.unit import Unit
    from ecab.env.episode import EpisodeSettings
    from ecab.runs import RunFolder
    from ecab.schema import Task, Trajectory

OnDone = Callable[["Trajectory"], None]


class RunnerFailed(RuntimeError):
    """A process running episodes failed or died: the run stops; what finished is in the run folder and a
    rerun resumes the rest. The message names the process and says so."""


@dataclass
class ClusterStats:
    """What only a runner spread over processes counts (runner=ray)."""

    workers: int
    nodes: int
    catalog_shards: int
    catalog_replicas: int
    worker_deaths: int = 0
    worker_restarts: int = 0
    catalog_retried_calls: int = 0
    worker_memory_mb: list[dict[str, float]] = field(default_factory=list)   # rss_start_mb, rss_peak_mb
    search_cache: dict[str, int] = field(default_factory=dict)               # summed over the workers


@dataclass
class RunnerStats:
    """What a runner retried, re-queued or restarted over one run, and its endpoints' limiter figures."""

    runner: str                                    # local | ray
    concurrency: int | None = None                 # episodes in flight (None: the run had no unit to run)
    processes: int | None = None                   # runner=local's episode processes, when more than one
    retried_units: int = 0                         # units run more than once (re-run or re-queued)
    infra_reruns: int = 0                          # episode re-runs after an infra_error
    requeued_units: int = 0                        # units handed out again after their worker died
    catalog_actor_restarts: int = 0
    cluster: ClusterStats | None = None            # runner=ray
    limiters: dict[str, dict[str, Any]] = field(default_factory=dict)   # per endpoint
    resumed_units: int | None = None               # units already done in the folder (set by ecab.run)
    admission: dict[str, Any] | None = None        # runner=local: episodes let in flight (ecab/runner/admission.py)

    def to_dict(self) -> dict[str, Any]:
        """The manifest's `runner_stats`: one flat mapping, without what this run did not have."""
        out: dict[str, Any] = {"runner": self.runner}
        if self.concurrency is not None:
            out["concurrency"] = self.concurrency
        if self.processes is not None:
            out["processes"] = self.processes
        out.update(retried_units=self.retried_units, infra_reruns=self.infra_reruns,
                   requeued_units=self.requeued_units, catalog_actor_restarts=self.catalog_actor_restarts)
        if self.cluster is not None:
            out.update(asdict(self.cluster))
        out["limiters"] = self.limiters
        if self.admission is not None:
            out["admission"] = self.admission
        if self.resumed_units is not None:
            out["resumed_units"] = self.resumed_units
        return out


class Runner(Protocol):
    """Runs units' episodes (ecab/runner/episode.py::run_unit, whichever the runner) and checkpoints each."""

    name: str

    def run(self, units: list[Unit], tasks: Mapping[str, Task], catalog: CatalogReader, folder: RunFolder,
            settings: EpisodeSettings, *, on_done: OnDone | None = None) -> RunnerStats:
        """Run every unit; each finished trajectory is in `folder` before `on_done` sees it."""
        ...

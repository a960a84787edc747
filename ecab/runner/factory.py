"""The one place a runner is chosen: `make_runner(cfg)` builds the `Runner` that `cfg.runner.name` names
(conf/runner/local.yaml, conf/runner/ray.yaml) from the typed config (ecab.config.EcabConfig: parsed and checked
once by the entry point). runner=ray's modules (and Ray itself) are imported only when it is the one chosen.
"""
from __future__ import annotations

from typing import Any, Callable

from ecab.config import ConfigError, EcabConfig, LocalRunnerConfig, RayRunnerConfig, RunnerConfig
from ecab.config.schema import process_count
from ecab.runner.episode import EpisodeOptions
from ecab.runner.protocol import Runner


def tool_options(cfg: EcabConfig) -> dict[str, Any]:
    return {"search_mode": cfg.tools.search, "user_matcher": cfg.tools.user, "extra_tools": tuple(cfg.tools.extra)}


def episode_options(cfg: EcabConfig) -> EpisodeOptions:
    """The episode setup every runner shares; the model section travels as the typed `ModelConfig` (picklable:
    process and Ray workers get a copy)."""
    return EpisodeOptions(model_cfg=cfg.model, tool_options=tool_options(cfg),
                          max_attempts=cfg.runner.max_attempts, step_delay_s=float(cfg.runner.step_delay_s),
                          checkpoint_every_s=cfg.runner.checkpoint_every_s)


# runner.processes=auto: one event loop keeps up with this many episodes in flight; more get a process per
# core (docs/decisions.md#episode-processes).
EPISODES_PER_LOOP = 128


def episode_processes(setting: Any, concurrency: int, cores: int) -> int:
    """runner.processes: a count, or auto (one process up to EPISODES_PER_LOOP episodes in flight, then one
    per EPISODES_PER_LOOP up to one per usable core)."""
    count = process_count(setting)
    return max(1, min(cores, concurrency // EPISODES_PER_LOOP)) if count is None else count


def _runner_section(cfg: EcabConfig, kind: type[RunnerConfig]) -> Any:
    if not isinstance(cfg.runner, kind):
        raise ConfigError(f"runner.name={cfg.runner.name} needs the keys of conf/runner/{cfg.runner.name}.yaml "
                          f"(choose the runner with runner={cfg.runner.name}, not runner.name=...)")
    return cfg.runner


def local_runner(cfg: EcabConfig, catalog_pool=None) -> Runner:
    from ecab.core.machine import usable_cores
    from ecab.runner.local import LocalRunner

    runner: LocalRunnerConfig = _runner_section(cfg, LocalRunnerConfig)
    processes = episode_processes(runner.processes, runner.concurrency, usable_cores())
    if processes > 1:
        from ecab.runner.local_processes import ProcessesRunner

        return ProcessesRunner(episode_options(cfg), processes=processes, concurrency=runner.concurrency,
                               limits=runner.limits, progress=cfg.run.progress, warm_queries=runner.warm_queries,
                               admission=runner.admission)
    return LocalRunner(episode_options(cfg), concurrency=runner.concurrency, limits=runner.limits,
                       progress=cfg.run.progress, warm_queries=runner.warm_queries, admission=runner.admission)


def ray_runner(cfg: EcabConfig, catalog_pool=None) -> Runner:
    from ecab.runner.ray import RayRunner

    runner: RayRunnerConfig = _runner_section(cfg, RayRunnerConfig)   # the RayOptions (ecab/runner/ray_cluster.py)
    return RayRunner(episode_options(cfg), runner, limits=runner.limits, replicas=cfg.catalog.replicas,
                     address=runner.address, pool=catalog_pool, progress=cfg.run.progress)


RUNNERS: dict[str, Callable[..., Runner]] = {"local": local_runner, "ray": ray_runner}


def make_runner(cfg: EcabConfig, *, catalog_pool=None) -> Runner:
    """The runner of `cfg.runner.name`. `catalog_pool`: running catalog actors for runner=ray to use and
    leave running (a budget study shares them between its runs); without one it starts its own."""
    name = str(cfg.runner.name)
    if name not in RUNNERS:
        raise ConfigError(f"runner.name must be one of {', '.join(RUNNERS)}, got {name!r}")
    return RUNNERS[name](cfg, catalog_pool)

"""The one place a runner is chosen: `make_runner(cfg)` builds the `Runner` that `cfg.runner.name` names
(conf/runner/local.yaml, conf/runner/ray.yaml) from the resolved config. runner=ray's modules (and Ray itself)
are imported only when it is the one chosen.
"""
from __future__ import annotations

from typing import Any, Callable

from omegaconf import OmegaConf

from ecab.config import ConfigError
from ecab.llm.limits import LimiterSettings
from ecab.runner.admission import AdmissionSettings
from ecab.runner.episode import EpisodeOptions
from ecab.runner.protocol import Runner


def runner_setting(cfg: Any, key: str, default: Any) -> Any:
    """runner.<key>, or the default when the runner config does not set it."""
    value = OmegaConf.select(cfg, f"runner.{key}", default=None)
    return default if value is None else value


def tool_options(cfg: Any) -> dict[str, Any]:
    return {"search_mode": cfg.tools.search, "user_matcher": cfg.tools.user}


def limiter_settings(cfg: Any) -> LimiterSettings:
    """runner.limits, the settings of the adaptive limiter the runner builds per endpoint (ecab/llm/limits.py)."""
    try:
        return LimiterSettings.from_config(OmegaConf.select(cfg, "runner.limits", default=None))
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def admission_settings(cfg: Any) -> AdmissionSettings:
    """runner.admission: how runner=local lets episodes start (ecab/runner/admission.py)."""
    try:
        return AdmissionSettings.from_config(OmegaConf.select(cfg, "runner.admission", default=None))
    except (TypeError, ValueError) as exc:
        raise ConfigError(str(exc)) from None


def episode_options(cfg: Any, model_cfg: Any) -> EpisodeOptions:
    return EpisodeOptions(model_cfg=model_cfg, tool_options=tool_options(cfg),
                          max_attempts=int(runner_setting(cfg, "max_attempts", 2)),
                          step_delay_s=float(runner_setting(cfg, "step_delay_s", 0.0)))


# runner.processes=auto: one event loop keeps up with this many episodes in flight; more get a process per
# core (docs/decisions.md#episode-processes).
EPISODES_PER_LOOP = 128


def episode_processes(setting: Any, concurrency: int, cores: int) -> int:
    """runner.processes: a count, or auto (one process up to EPISODES_PER_LOOP episodes in flight, then one
    per EPISODES_PER_LOOP up to one per usable core)."""
    if setting is None or str(setting) == "auto":
        return max(1, min(cores, concurrency // EPISODES_PER_LOOP))
    try:
        count = int(setting)
    except (TypeError, ValueError):
        count = 0
    if count < 1 or str(count) != str(setting).strip():
        raise ConfigError(f"runner.processes must be auto or a whole number >= 1, got {setting!r}")
    return count


def local_runner(cfg: Any, catalog_pool=None) -> Runner:
    from ecab.core.machine import usable_cores
    from ecab.runner.local import LocalRunner

    limits = limiter_settings(cfg)                          # checked whatever the model
    concurrency = int(runner_setting(cfg, "concurrency", 32))
    processes = episode_processes(runner_setting(cfg, "processes", "auto"), concurrency, usable_cores())
    warm = bool(runner_setting(cfg, "warm_queries", True))
    admission = admission_settings(cfg)
    if processes > 1:
        from ecab.runner.local_processes import ProcessesRunner

        # Children get the model section as plain values (they pickle it).
        model_cfg = OmegaConf.to_container(cfg.model, resolve=True)
        return ProcessesRunner(episode_options(cfg, model_cfg), processes=processes, concurrency=concurrency,
                               limits=limits, progress=bool(cfg.run.progress), warm_queries=warm,
                               admission=admission)
    return LocalRunner(episode_options(cfg, cfg.model), concurrency=concurrency, limits=limits,
                       progress=bool(cfg.run.progress), warm_queries=warm, admission=admission)


def ray_runner(cfg: Any, catalog_pool=None) -> Runner:
    from ecab.runner.ray import RayRunner
    from ecab.runner.ray_cluster import RayOptions

    try:
        options = RayOptions.from_config(cfg.runner)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"runner: {exc}") from None
    # Workers get the model section as plain values (they pickle it).
    model_cfg = OmegaConf.to_container(cfg.model, resolve=True)
    return RayRunner(episode_options(cfg, model_cfg), options, limits=limiter_settings(cfg),
                     replicas=int(OmegaConf.select(cfg, "catalog.replicas", default=1) or 1),
                     address=runner_setting(cfg, "address", None), pool=catalog_pool,
                     progress=bool(cfg.run.progress))


RUNNERS: dict[str, Callable[..., Runner]] = {"local": local_runner, "ray": ray_runner}


def make_runner(cfg: Any, *, catalog_pool=None) -> Runner:
    """The runner of `cfg.runner.name`. `catalog_pool`: running catalog actors for runner=ray to use and
    leave running (a budget study shares them between its runs); without one it starts its own."""
    name = str(cfg.runner.name)
    if name not in RUNNERS:
        raise ConfigError(f"runner.name must be one of {', '.join(RUNNERS)}, got {name!r}")
    return RUNNERS[name](cfg, catalog_pool)

"""The one place a runner is chosen: `make_runner(cfg)` builds the `Runner` that `cfg.runner.name` names
(conf/runner/local.yaml, conf/runner/ray.yaml) from the resolved config. runner=ray's modules (and Ray itself)
are imported only when it is the one chosen.
"""
from __future__ import annotations

from typing import Any, Callable

from omegaconf import OmegaConf

from ecab.config import ConfigError
from ecab.llm.limits import LimiterSettings
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


def episode_options(cfg: Any, model_cfg: Any) -> EpisodeOptions:
    return EpisodeOptions(model_cfg=model_cfg, tool_options=tool_options(cfg),
                          max_attempts=int(runner_setting(cfg, "max_attempts", 2)),
                          step_delay_s=float(runner_setting(cfg, "step_delay_s", 0.0)))


def local_runner(cfg: Any, catalog_pool=None) -> Runner:
    from ecab.runner.local import LocalRunner

    limits = limiter_settings(cfg)                          # checked whatever the model
    return LocalRunner(episode_options(cfg, cfg.model), concurrency=int(runner_setting(cfg, "concurrency", 32)),
                       limits=limits, progress=bool(cfg.run.progress))


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

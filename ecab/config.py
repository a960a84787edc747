"""Hydra config composition for every ecab entry point, with one-line errors.

`python -m ecab.run` uses `@hydra.main` (for multirun sweeps); the other CLIs (catalog, construct, bench,
reduce) compose the same `conf/` tree through `load_config`, so an override means the same everywhere.
"""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import NoReturn, Sequence

from omegaconf import DictConfig, OmegaConf

CONF_DIR = Path(os.environ.get("ECAB_CONF_DIR", Path(__file__).resolve().parent.parent / "conf"))


class ConfigError(ValueError):
    """A bad override, an unknown config group option, or a missing required key."""


def load_config(overrides: Sequence[str] = (), config_name: str = "config") -> DictConfig:
    """Compose `conf/<config_name>.yaml` with Hydra-style overrides (`catalog.products=20000`)."""
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    if not CONF_DIR.is_dir():
        raise ConfigError(f"config folder not found: {CONF_DIR} (set ECAB_CONF_DIR or install ecab editable)")
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            cfg = compose(config_name=config_name, overrides=list(overrides))
    except (HydraException, OmegaConfBaseException) as exc:
        raise ConfigError(explain(exc)) from None
    return cfg


def group_options(group: str) -> list[str]:
    """The choices of a config group (`model` -> ['heuristic', 'oracle', ...])."""
    return sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml"))


def explain(exc: BaseException) -> str:
    """One line: Hydra's own first line, plus the valid choices when a group option is unknown."""
    line = first_line(exc)
    missing = re.search(r"Could not find '([\w/]+)/([^']+)'", line)
    if missing and (CONF_DIR / missing.group(1)).is_dir():
        group, option = missing.groups()
        return (f"unknown {group} '{option}'; choose one of: {', '.join(group_options(group))}")
    return line


def first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def require(cfg: DictConfig, key: str) -> object:
    """The value at dotted `key`, or a ConfigError naming the key when it is missing (`???`) or null."""
    try:
        value = OmegaConf.select(cfg, key, throw_on_missing=True)
    except Exception:  # MissingMandatoryValue and interpolation errors
        value = None
    if value is None:
        raise ConfigError(f"missing required config key '{key}' (set it on the command line: {key}=...)")
    return value


def die(message: str, code: int = 2) -> NoReturn:
    """Print one clear error line and exit: the CLIs' way to refuse bad input."""
    print(f"ecab: error: {message}", file=sys.stderr)
    sys.exit(code)


def to_yaml(cfg: DictConfig) -> str:
    return OmegaConf.to_yaml(cfg, resolve=True)

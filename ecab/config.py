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
    unknown = re.search(r"Could not override '([^']+)'", line)
    if unknown:
        return f"unknown config key '{unknown.group(1)}' (see conf/config.yaml; to add a new key use +{unknown.group(1)}=...)"
    return line


def preflight(argv: Sequence[str], config_name: str = "config") -> None:
    """Check command-line overrides before `@hydra.main` runs, so a bad one gives one clear line.

    Hydra's own error for an unknown option is a multi-line dump. For a multirun sweep
    (`model=a,b budget=25,50`) every value of every swept key is checked once.
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    overrides = [a for a in argv if not a.startswith("-") and not a.startswith("hydra")
                 and not a.startswith("+hydra") and "=" in a]
    parser, parsed = OverridesParser.create(), []
    for text in overrides:
        try:
            parsed += parser.parse_overrides([text])
        except HydraException as exc:
            raise ConfigError(f"bad override '{text}': {first_line(exc)}") from None
    choices = []
    for override in parsed:
        prefix = override.input_line.split("=", 1)[0]
        values = (list(override.sweep_string_iterator()) if override.is_sweep_override()
                  else [override.get_value_element_as_str()])
        choices.append([f"{prefix}={v}" for v in values])
    base = [c[0] for c in choices]
    load_config(base, config_name)
    for i, options in enumerate(choices):
        for option in options[1:]:
            load_config(base[:i] + [option] + base[i + 1:], config_name)


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


# Every numeric knob of the run config: (key, kind, lower bound, bound inclusive, null allowed). kind: "int" or
# "number" (an int or a finite float); "rate" is a number in [0, 1]. Keys absent from a config are skipped
# (a group option without them); a value of the wrong type or out of range is one line naming the key.
NUMERIC_KEYS: tuple[tuple[str, str, float | None, bool, bool], ...] = (
    ("budget", "int", 1, True, False),
    ("trials", "int", 1, True, False),
    ("seed", "int", None, True, False),
    ("episode.wall_clock_s", "number", 0, False, True),
    ("benchmark.limit", "int", 1, True, True),
    ("benchmark.n_per_intent", "int", 1, True, False),
    ("benchmark.max_line_bytes", "int", 1, True, False),
    ("catalog.products", "int", 1, True, True),
    ("catalog.seed", "int", None, True, False),
    ("catalog.shards", "int", 1, True, False),
    ("catalog.replicas", "int", 1, True, False),
    ("catalog.batch_size", "int", 1, True, False),
    ("catalog.max_reviews", "int", 0, True, False),
    ("runner.concurrency", "int", 1, True, False),
    ("runner.workers", "int", 1, True, False),
    ("runner.max_attempts", "int", 1, True, False),
    ("runner.step_delay_s", "number", 0, True, False),
    ("runner.worker_restarts", "int", 0, True, False),
    ("runner.worker_cpus", "number", 0, True, False),
    ("runner.catalog_cpus", "number", 0, True, False),
    ("runner.catalog_max_concurrency", "int", 1, True, False),
    ("runner.limits.max_concurrency", "int", 1, True, False),
    ("runner.limits.min_concurrency", "int", 1, True, False),
    ("runner.limits.initial", "int", 1, True, True),
    ("runner.limits.decrease", "rate", 0, False, False),
    ("runner.limits.increase", "number", 0, False, False),
    ("runner.limits.max_retry_after_s", "number", 0, True, False),
    ("model.temperature", "number", 0, True, True),
    ("model.max_output_tokens", "int", 1, True, True),
    ("model.timeout_s", "number", 0, False, False),
    ("model.max_attempts", "int", 1, True, False),
    ("model.max_retry_wait_s", "number", 0, True, False),
    ("model.backoff_base_s", "number", 0, True, False),
    ("model.concurrency", "int", 1, True, False),
    ("model.wall_clock_s", "number", 0, False, True),
    ("judge.concurrency", "int", 1, True, False),
    ("judge.timeout_s", "number", 0, False, False),
    ("judge.max_attempts", "int", 1, True, False),
    ("judge.transport_attempts", "int", 1, True, False),
    ("judge.max_tokens", "int", 1, True, True),
    ("judge.max_reviews", "int", 0, True, False),
    ("construct.workers", "int", 1, True, False),
    ("construct.max_matches", "int", 1, True, False),
    ("construct.max_attempts", "int", 1, True, False),
    ("construct.max_candidates", "int", 1, True, True),
    ("construct.min_query_matches", "int", 0, True, False),
    ("construct.min_query_load_bearing", "rate", 0, True, False),
    ("construct.min_hidden_load_bearing", "rate", 0, True, False),
    ("construct.llm.max_attempts", "int", 1, True, False),
)


def check_number(key: str, value: object, kind: str, low: float | None = None, inclusive: bool = True,
                 nullable: bool = False) -> None:
    """Raise a ConfigError naming `key` unless `value` is a number of the kind and range asked for."""
    import math

    if value is None and nullable:
        return
    if kind == "int":
        ok = isinstance(value, int) and not isinstance(value, bool)
        noun = {1: "a positive integer", 0: "a non-negative integer"}.get(low, "an integer") \
            if inclusive else f"an integer > {low}"
    else:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        noun = ("a number in (0, 1)" if not inclusive else "a number in [0, 1]") if kind == "rate" else \
            "a number" if low is None else f"a number {'>=' if inclusive else '>'} {low:g}"
    if ok and low is not None:
        ok = value >= low if inclusive else value > low
    if ok and kind == "rate":
        ok = value <= 1 if inclusive else value < 1
    if not ok:
        raise ConfigError(f"{key} must be {noun}{' (or null)' if nullable else ''}, got {value!r}")


def validate_numbers(cfg: DictConfig) -> None:
    """Check every numeric knob (NUMERIC_KEYS) present in `cfg`; the first bad one is a ConfigError."""
    for key, kind, low, inclusive, nullable in NUMERIC_KEYS:
        try:
            value = OmegaConf.select(cfg, key, default=_ABSENT, throw_on_missing=True)
        except Exception:  # noqa: BLE001 - a mandatory value (???) left unset: required elsewhere
            continue
        if value is not _ABSENT:
            check_number(key, value, kind, low, inclusive, nullable)


_ABSENT = object()


def die(message: str, code: int = 2) -> NoReturn:
    """Print one clear error line and exit: the CLIs' way to refuse bad input."""
    print(f"ecab: error: {message}", file=sys.stderr)
    sys.exit(code)


def to_yaml(cfg: DictConfig) -> str:
    return OmegaConf.to_yaml(cfg, resolve=True)

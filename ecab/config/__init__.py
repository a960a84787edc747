"""Hydra config composition for every ecab entry point, with one-line errors, and its typed form.

`python -m ecab.run` uses `@hydra.main` (for multirun sweeps); the other CLIs (catalog, construct, bench,
reduce) compose the same `conf/` tree through `load_config`, so an override means the same everywhere. The
composition is checked against the schema (ecab/config/schema.py, registered in Hydra's ConfigStore);
`parse(cfg)` turns it into the typed `EcabConfig` once (every range check runs there), and everything below the
entry points takes a typed section (`ModelConfig`, `CatalogConfig`, `RunnerConfig`, ...).
"""
from __future__ import annotations

import dataclasses
import functools
import os
import re
import sys
from dataclasses import fields
from pathlib import Path
from typing import Any, Callable, NoReturn, Sequence, TypeVar

from omegaconf import DictConfig, OmegaConf

from ecab.config.checks import ConfigError, check_number, did_you_mean
from ecab.config.schema import (AdmissionConfig, BenchmarkConfig, CatalogConfig, ConstructConfig,
                                ConstructLLMConfig, EcabConfig, EndpointModelConfig, EpisodeConfig, JudgeConfig,
                                LimitsConfig, LLMJudgeConfig, LocalRunnerConfig, ModelConfig, RayRunnerConfig,
                                RunConfig, RunnerConfig, Section, TargetsCatalogConfig, ToolsConfig, field_check,
                                register_schemas)

__all__ = ["CONF_DIR", "ConfigError", "check_number", "load_config", "parse", "section", "plain", "register_schemas",
           "preflight", "explain", "group_options", "first_line", "require", "die", "to_yaml", "validate_numbers", "AdmissionConfig",
           "BenchmarkConfig", "CatalogConfig", "ConstructConfig", "ConstructLLMConfig", "EcabConfig",
           "EndpointModelConfig", "EpisodeConfig", "JudgeConfig", "LimitsConfig", "LLMJudgeConfig",
           "LocalRunnerConfig", "ModelConfig", "RayRunnerConfig", "RunConfig", "RunnerConfig", "Section",
           "TargetsCatalogConfig", "ToolsConfig"]

CONF_DIR = Path(os.environ.get("ECAB_CONF_DIR", Path(__file__).resolve().parent.parent.parent / "conf"))


def load_config(overrides: Sequence[str] = (), config_name: str = "config") -> DictConfig:
    """Compose `conf/<config_name>.yaml` with Hydra-style overrides (`catalog.products=20000`), against the typed
    schema (an unknown key or a value of the wrong type is one ConfigError line). `main_job` accepts the result;
    `parse` turns it into the typed EcabConfig."""
    return compose_overrides(overrides, config_name)[0]


def compose_overrides(overrides: Sequence[str], config_name: str = "config") -> tuple[DictConfig, list[str]]:
    """`load_config`, and the overrides as composed: one that sets a key inside a free-form section
    (`model.extra_body.tool_choice=required`, `model.extra_body={tool_choice: required}`, `model.options.x=1`)
    becomes `++key=value`. Hydra's struct mode refuses a new key there unless the user writes `+` (or `++` when
    the key may exist), which nobody expects of a section whose keys are free; keys of typed sections stay
    refused (a typo names the key)."""
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    if not CONF_DIR.is_dir():
        raise ConfigError(f"config folder not found: {CONF_DIR} (set ECAB_CONF_DIR or install ecab editable)")
    register_schemas()
    overrides = list(overrides)
    while True:
        try:
            with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
                return compose(config_name=config_name, overrides=overrides), overrides
        except (HydraException, OmegaConfBaseException) as exc:
            index = _free_form_override(exc, overrides)
            if index is None:
                raise ConfigError(explain(exc)) from None
            overrides[index] = "++" + overrides[index]


def _free_form_override(exc: BaseException, overrides: list[str]) -> int | None:
    """The index of the plain override Hydra refused only because its key is new inside a free-form
    (Dict[str, Any]) section; None for any other error."""
    refused = re.search(r"Could not override '([^']+)'", first_line(exc))
    cause = exc.__cause__
    if refused is None or cause is None or "not in struct" not in str(cause) or "reference_type=Dict[" not in str(cause):
        return None
    return next((i for i, text in enumerate(overrides)
                 if text.split("=", 1)[0] == refused.group(1)), None)


def group_options(group: str) -> list[str]:
    """The choices of a config group (`model` -> ['heuristic', 'oracle', ...])."""
    return sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml"))


def explain(exc: BaseException) -> str:
    """One line: Hydra's own first line, plus the valid choices when a group option is unknown; a value the
    schema refuses is the key's own check (`budget must be a positive integer, got 2.5`)."""
    cause = None if "Could not override '" in first_line(exc) else _omegaconf_cause(exc)
    if cause is not None:
        message = _explain_omegaconf(cause)
        if message:
            return message
    line = first_line(exc)
    missing = re.search(r"Could not find '([\w/]+)/([^']+)'", line)
    if missing and (CONF_DIR / missing.group(1)).is_dir():
        group, option = missing.groups()
        return (f"unknown {group} '{option}'; choose one of: {', '.join(group_options(group))}")
    unknown = re.search(r"Could not override '([^']+)'", line)
    if unknown:
        key = unknown.group(1)
        return (f"unknown config key '{key}'{_typo_hint(key)} (see conf/config.yaml and ecab/config/schema.py; a "
                f"plug-in's own keys go in model.options, judge.options or catalog.options: model.options.<key>=...)")
    return line


def _typo_hint(dotted: str) -> str:
    """did_you_mean for the first segment of a dotted key its section of the schema does not have, as the whole
    dotted key ("; did you mean 'catalog.products'?"), or "" (none close, or a free-form section)."""
    schema: Any = EcabConfig
    parts = dotted.split(".")
    for i, part in enumerate(parts):
        known = _schema_fields(schema)
        if part not in known:
            return did_you_mean(part, known, ".".join(parts[:i]))
        schema = _section_class(known[part])
        if schema is None:   # a value, or a free-form mapping (options, extra_body, ...)
            return ""
    return ""


def _schema_fields(schema: type) -> dict[str, Any]:
    """{field: annotation} of a section class and of the classes that extend it (a group's options: runner=local
    adds `admission` to RunnerConfig)."""
    out: dict[str, Any] = {}
    for cls in (schema, *schema.__subclasses__()):
        out.update({f.name: f.type for f in fields(cls)})
    return out


def _section_class(annotation: Any) -> type | None:
    """The Section class a field's annotation names (the schema's annotations are strings under
    `from __future__ import annotations`), or None."""
    import ecab.config.schema as schema_module

    if isinstance(annotation, str):
        annotation = getattr(schema_module, annotation.split("|")[0].strip(), None)
    return annotation if isinstance(annotation, type) and dataclasses.is_dataclass(annotation) else None


def _omegaconf_cause(exc: BaseException) -> BaseException | None:
    from omegaconf.errors import OmegaConfBaseException

    seen = exc
    for _ in range(8):
        if isinstance(seen, OmegaConfBaseException) and getattr(seen, "full_key", None):
            return seen
        nxt = seen.__cause__ or seen.__context__
        if nxt is None:
            return None
        seen = nxt
    return None


def _explain_omegaconf(exc: BaseException) -> str | None:
    from omegaconf.errors import ConfigAttributeError, ConfigKeyError, MissingMandatoryValue, ValidationError

    full_key, object_type = str(getattr(exc, "full_key", "")), getattr(exc, "object_type", None)
    if isinstance(exc, MissingMandatoryValue):
        return f"missing required config key '{full_key}' (set it on the command line: {full_key}=...)"
    if isinstance(exc, (ConfigKeyError, ConfigAttributeError)) and isinstance(object_type, type) \
            and issubclass(object_type, Section) and full_key:
        parent, key = full_key.rsplit(".", 1) if "." in full_key else (object_type.KEY or "the config", full_key)
        known = sorted(f.name for f in fields(object_type))
        return f"{parent}: unknown key(s) {key}{did_you_mean(key, known)} (known: {', '.join(known)})"
    if isinstance(exc, ValidationError):
        spec = field_check(object_type, getattr(exc, "key", None))
        if spec is not None:
            try:
                check_number(full_key, getattr(exc, "value", None), *spec)
            except ConfigError as refused:
                return str(refused)
        return f"{full_key}: {first_line(exc)}"
    return None


def parse(cfg: DictConfig | EcabConfig) -> EcabConfig:
    """The composed config as the typed `EcabConfig`: interpolations resolved, every section's checks run (one
    ConfigError line naming the key). Entry points call it once; below them code reads the typed sections."""
    if isinstance(cfg, EcabConfig):
        return cfg
    from omegaconf.errors import OmegaConfBaseException

    try:
        _refuse_unknown_keys(cfg, "")
        typed = OmegaConf.to_object(cfg)
    except OmegaConfBaseException as exc:
        raise ConfigError(_explain_omegaconf(exc) or first_line(exc)) from None
    if not isinstance(typed, EcabConfig):
        raise ConfigError("the config was not composed against the ecab schema (conf/config.yaml: defaults: "
                          "[schema, ...])")
    return typed


def _refuse_unknown_keys(node: DictConfig, prefix: str) -> None:
    """A key added with `+key=...` that its section's schema does not have is an error naming it (OmegaConf would
    set it as a plain attribute); free-form sections (`options`, `extra_body`, `sim`, ...) are not checked."""
    object_type = OmegaConf.get_type(node)
    known = {f.name for f in fields(object_type)} if dataclasses.is_dataclass(object_type) else None
    for key in node.keys():
        name = str(key)
        if known is not None and name not in known:
            where = prefix or "the config"
            raise ConfigError(f"{where}: unknown key(s) {name}{did_you_mean(name, known)} "
                              f"(known: {', '.join(sorted(known))})")
        child = node._get_node(key)
        if isinstance(child, DictConfig) and known is not None and not child._is_missing() and not child._is_none():
            _refuse_unknown_keys(child, f"{prefix}.{name}" if prefix else name)


S = TypeVar("S", bound=Section)


def section(cls: type[S], value: Any, *, defaults: Sequence[str] | None = None) -> S:
    """One section as its typed class, for a caller that is not an entry point (tests, scripts, a CLI that holds a
    node): an instance of `cls` as it is; a composed node as its typed object; a plain mapping merged over the
    section that conf/ composes with the overrides `defaults` (e.g. ["judge=llm"]), so a partial mapping gets the
    YAML's values for the keys it leaves out (None: no base, every required key must be given)."""
    if isinstance(value, cls):
        return value
    from omegaconf.errors import OmegaConfBaseException

    try:
        if isinstance(value, DictConfig) and isinstance(OmegaConf.get_type(value), type) \
                and issubclass(OmegaConf.get_type(value), cls):   # type: ignore[arg-type]
            _refuse_unknown_keys(value, cls.KEY)
            typed = OmegaConf.to_object(value)
        else:
            if isinstance(value, DictConfig):      # an untyped node: its values, as a mapping's
                value = OmegaConf.to_container(value, resolve=True)
            schema: type = cls
            node: Any = OmegaConf.create({})
            if defaults is not None:
                schema, base = _composed_section(str(CONF_DIR), os.environ.get("ECAB_CACHE_DIR", ""),
                                                 os.environ.get("HOME", ""), cls.KEY, tuple(defaults))
                node = OmegaConf.create(base)
            node = OmegaConf.merge(OmegaConf.structured(schema), node, OmegaConf.create(dict(value)))
            _refuse_unknown_keys(node, cls.KEY)
            typed = OmegaConf.to_object(node)
    except OmegaConfBaseException as exc:
        raise ConfigError(_explain_omegaconf(exc) or first_line(exc)) from None
    if not isinstance(typed, cls):
        raise ConfigError(f"{cls.KEY}: expected a {cls.__name__} section, got {type(typed).__name__}")
    return typed


@functools.lru_cache(maxsize=32)
def _composed_section(conf_dir: str, cache_env: str, home: str, key: str,
                       overrides: tuple[str, ...]) -> tuple[type, dict]:
    """(schema class, resolved values) of the section at `key` as conf/ composes it with `overrides` (cached per
    conf folder and the environment variables conf/config.yaml reads)."""
    node = OmegaConf.select(load_config(list(overrides)), key)
    schema = OmegaConf.get_type(node)
    values = OmegaConf.to_container(node, resolve=True, throw_on_missing=False)
    assert isinstance(schema, type) and isinstance(values, dict)
    return schema, values


def plain(value: Any) -> Any:
    """A typed section (or a node) as plain dicts and lists, for a file or a process boundary."""
    if isinstance(value, DictConfig):
        return OmegaConf.to_container(value, resolve=True)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def preflight(argv: Sequence[str], config_name: str = "config",
              check: Callable[[DictConfig], object] | None = None) -> list[str]:
    """Check command-line overrides before `@hydra.main` runs, so a bad one gives one clear line; returns the
    arguments for Hydra, with overrides of keys inside free-form sections as `++key=value` (compose_overrides).

    Hydra's own error for an unknown option is a multi-line dump. For a multirun sweep
    (`model=a,b budget=25,50`) every value of every swept key is checked once. `check` (ecab.run's validate for a
    sweep) is also given each of those configs, so what a job would refuse (a model's missing API key, a missing
    benchmark file) stops the sweep before its first job runs, not after some jobs have.
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    overrides = [a for a in argv if not a.startswith("-") and not a.startswith("hydra")
                 and not a.startswith("+hydra") and "=" in a]
    # a user's own config folder (docs/extending.md) holds options the checks must find
    search = [a for a in argv if a.startswith("hydra.searchpath=")]
    parser, parsed = OverridesParser.create(), []
    for text in overrides:
        try:
            parsed += parser.parse_overrides([text])
        except HydraException as exc:
            raise ConfigError(f"bad override '{text}': {first_line(exc)}") from None
    choices = []
    for override in parsed:
        prefix = str(override.input_line).split("=", 1)[0]
        values = (list(override.sweep_string_iterator()) if override.is_sweep_override()
                  else [override.get_value_element_as_str()])
        choices.append([f"{prefix}={v}" for v in values])
    base = [c[0] for c in choices]
    composed, used = compose_overrides(search + base, config_name)
    forced = {text.removeprefix("++").split("=", 1)[0] for text in used if text.startswith("++")}
    # `+key=...` adds a key Hydra does not know; one the schema does not have either (`+modle=x`, a typo) is
    # refused here, with the hint, before any work (plug-ins' own keys: model.options.<key>=...)
    _refuse_unknown_keys(composed, "")
    if check is not None:
        check(load_config(search + base, config_name))
    for i, options in enumerate(choices):
        for option in options[1:]:
            cfg = load_config(search + base[:i] + [option] + base[i + 1:], config_name)
            if check is not None:
                check(cfg)
    # what Hydra's own composition (@hydra.main) is given: the free-form keys as `++key=value`
    return [f"++{a}" if "=" in a and not a.startswith(("+", "~")) and a.split("=", 1)[0] in forced else a
            for a in argv]


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


def validate_numbers(cfg: DictConfig | EcabConfig) -> None:
    """Check every numeric knob: the schema's checks, run by `parse`; the first bad one is a ConfigError."""
    parse(cfg)


def die(message: str, code: int = 2) -> NoReturn:
    """Print one clear error line and exit: the CLIs' way to refuse bad input."""
    print(f"ecab: error: {message}", file=sys.stderr)
    sys.exit(code)


def to_yaml(cfg: DictConfig) -> str:
    return OmegaConf.to_yaml(cfg, resolve=True)

"""Default run names and sweep names: deterministic, readable, and different whenever the run differs
(docs/decisions.md#run-names).

A run's default name is `<model>-b<budget>-<benchmark>` followed by every identity setting that differs from the
default config composed for the same group choices (model, catalog, benchmark, runner), e.g.
`heuristic-b25-generated-limit20-search=fts`. An own endpoint shows in the model label (`gpt-5@my-vllm-8000`,
`gpt-5=<model_id>`). A long or lossy suffix keeps a readable prefix and ends in a short hash of the whole
difference, so two configs that differ anywhere in their identity never share a folder.

The name is a function of the parsed config alone, so `python -m ecab.run`, `ecab.evaluate` and
jobs/budget_study.py name a run alike. A sweep's name is a function of its overrides alone.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import re
from pathlib import PurePath
from typing import Any, Iterable, Sequence
from urllib.parse import urlsplit

from omegaconf import DictConfig, OmegaConf

from ecab.config import CONF_DIR, ConfigError, EcabConfig, first_line, load_config

# Sections outside a run's identity (how it is scheduled, named, judged): never in its name.
NOT_IN_IDENTITY = ("run", "runner", "judge")
# Where things are kept, not what is run: the same run wherever the cache lives, so never in a name.
LOCATIONS = ("cache_dir", "construct.llm.cache_dir", "construct.out")
# Guards on reading the input, not part of what is run: neither in the name nor in the config hash (run.py).
READ_GUARDS = ("benchmark.max_line_bytes", "benchmark.allow_missing_targets")
# Rendered in the name's base, `<model>[=<model_id>][@<host-port>]-b<budget>-<benchmark>`, not in its suffix.
IN_BASE = ("budget", "model.name", "model.model_id", "model.base_url", "benchmark.name", "benchmark.source")
# The groups a default config is composed with, and the fields that say which option a config came from.
GROUP_KEYS = {"model": ("name",), "catalog": ("source",), "benchmark": ("name", "source"), "runner": ("name",)}
RENDERED_GROUPS = ("catalog",)   # model and benchmark are in the base; the runner is not in the identity
MAX_SUFFIX = 40                  # characters after the base before the suffix is cut and hashed
# A sweep's name has no base and is read as the sweep's title: two swept keys of a few values each must fit
# (budget=10,25,50,100-model=heuristic,oracle is 42 characters, and was cut to budget=... at 40).
MAX_SWEEP_SUFFIX = 64
HASH_CHARS = 6
_UNSAFE = re.compile(r"[^A-Za-z0-9._+,=@-]")
_REMOVED = object()              # a default key the config does not have
_PLACEHOLDER_PATH = "_"          # benchmark=file's path when composing its defaults (the real one is rendered)


def run_name(cfg: EcabConfig) -> str:
    """run.name when given, else the default name (the module docstring)."""
    return cfg.run.name or default_run_name(cfg)


def run_model_label(cfg: EcabConfig) -> str:
    """The model part of the default run name (`gpt-5`, `gpt-5=qwen3@my-vllm-8000` for an own endpoint): what a
    run's summary, report and compare pages call its model, so an own endpoint is never shown as the provider's."""
    choices = group_choices(cfg)
    if choices["model"] is None:        # a user's own model section: its name
        return safe(cfg.model.name)[0]
    actual = flatten(identity_values(dataclasses.asdict(cfg)))
    defaults, links = _defaults(_composition(cfg, choices))
    return model_label(cfg, difference(actual, defaults, links))[0]


def study_name(cfg: EcabConfig, budgets: Sequence[int]) -> str:
    """A budget study's folder: `<run.name>-budget-study`, else the default run name with the budgets in the
    budget's place (`heuristic-b10,25,50-generated-limit20-budget-study`), so two studies of different budgets,
    models or task sets never share a folder. A list of budgets longer than MAX_SWEEP_VALUES is named by its ends
    and a hash of the whole list."""
    if cfg.run.name:
        return f"{cfg.run.name}-budget-study"
    text = ",".join(str(b) for b in budgets)
    if len(text) > MAX_SWEEP_VALUES:
        text = f"{budgets[0]},..,{budgets[-1]},{stable_hash(list(budgets))[:HASH_CHARS]}"
    return f"{default_run_name(cfg, budget_text=text)}-budget-study"


def default_run_name(cfg: EcabConfig, budget_text: str | None = None) -> str:
    """`budget_text` stands for the budget in the base (a budget study names its budgets there)."""
    choices = group_choices(cfg)
    actual = flatten(identity_values(dataclasses.asdict(cfg)))
    defaults, links = _defaults(_composition(cfg, choices))
    diff = difference(actual, defaults, links)
    opaque = {g: stable_hash(section_of(actual, g)) for g in ("model", "catalog", "benchmark") if choices[g] is None}
    # a section from an option conf/ does not have (a user's own folder): in the hash only, as a whole
    diff = {k: v for k, v in diff.items() if k.split(".")[0] not in opaque}
    label, lossy = model_label(cfg, diff)
    base = f"{label}-b{budget_text or cfg.budget}-{safe(str(cfg.benchmark.name or cfg.benchmark.source))[0]}"
    items: list[str] = []
    if choices["benchmark"] == "file":     # the file is the task set: always named (its stem, hashed)
        items.append(path_stem(str(cfg.benchmark.path)))
        lossy = True
    for group in RENDERED_GROUPS:
        if choices[group] not in (None, _config_defaults()[group]):
            items.append(f"{group}={choices[group]}")
    paths = (set(actual) | set(defaults)) - set(links)   # a copied key is named by the key it copies
    for key, value in diff.items():
        if key not in IN_BASE and key != "benchmark.path":
            text, cut = render_item(short_key(key, paths), value)
            items.append(text)
            lossy = lossy or cut
    material = {"diff": {k: ("<removed>" if v is _REMOVED else v) for k, v in diff.items()}, "opaque": opaque,
                "benchmark_path": str(cfg.benchmark.path) if choices["benchmark"] == "file" else None}
    suffix = bounded("-".join(items), stable_hash(material), lossy or bool(opaque))
    return f"{base}-{suffix}" if suffix else base


# ------------------------------------------------------------------------------------------ the difference

def identity_values(resolved: dict) -> dict:
    """The config as plain values without the sections outside the identity (run, runner, judge)."""
    return {k: v for k, v in resolved.items() if k not in NOT_IN_IDENTITY}


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """{dotted path: leaf} in config order; a mapping's keys are leaves of their own, an empty one has none."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, child in value.items():
            out.update(flatten(child, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: value}


def difference(actual: dict[str, Any], defaults: dict[str, Any], links: dict[str, str]) -> dict[str, Any]:
    """The leaves of `actual` that differ from `defaults` (a default key `actual` lacks: _REMOVED), without the
    locations and without a key that only follows another by interpolation (construct.n_per_intent is
    ${benchmark.n_per_intent}: the one override is named once)."""
    diff = {k: v for k, v in actual.items() if defaults.get(k, _REMOVED) != v}
    diff.update({k: _REMOVED for k in defaults if k not in actual})
    return {k: v for k, v in diff.items()
            if k not in LOCATIONS + READ_GUARDS and not (k in links and links[k] in actual and actual[links[k]] == v)}


def section_of(values: dict[str, Any], group: str) -> dict[str, Any]:
    return {k: v for k, v in values.items() if k.split(".")[0] == group}


# ------------------------------------------------------------------------------------ the default config

def group_choices(cfg: EcabConfig) -> dict[str, str | None]:
    """The conf/ option each group came from, by its identifying field (model.name, catalog.source, ...);
    None when conf/ has no such option (a user's own folder, a renamed option)."""
    out: dict[str, str | None] = {}
    for group, keys in GROUP_KEYS.items():
        section = getattr(cfg, group)
        names = [str(getattr(section, k)) for k in keys if getattr(section, k, None)]
        out[group] = next((n for n in names if (CONF_DIR / group / f"{n}.yaml").is_file()), None)
    return out


@functools.lru_cache(maxsize=1)
def _config_defaults() -> dict[str, str | None]:
    """The group options conf/config.yaml picks (heuristic, synthetic, generated, local)."""
    from ecab.config import parse
    return group_choices(parse(_compose(())))


def _composition(cfg: EcabConfig, choices: dict[str, str | None]) -> tuple[str, ...]:
    """The overrides that compose the default config of `cfg`'s group choices, at `cfg`'s cache_dir (so the
    paths under it compare equal)."""
    overrides = [f"{group}={option}" for group, option in choices.items() if option is not None]
    overrides.append(f"cache_dir={quoted(cfg.cache_dir)}")
    if choices["benchmark"] == "file":
        overrides.append(f"benchmark.path={_PLACEHOLDER_PATH}")
    return tuple(overrides)


def _defaults(overrides: tuple[str, ...]) -> tuple[dict[str, Any], dict[str, str]]:
    return _composed_defaults(str(CONF_DIR), overrides)


@functools.lru_cache(maxsize=64)
def _composed_defaults(conf_dir: str, overrides: tuple[str, ...]) -> tuple[dict[str, Any], dict[str, str]]:
    """(flat identity leaves, interpolation links) of conf/ composed with `overrides`; cached per process: a sweep
    or a budget study names many runs of the same groups."""
    composed = _compose(overrides)
    values = OmegaConf.to_container(composed, resolve=True, throw_on_missing=False)
    assert isinstance(values, dict)
    return flatten(identity_values(values)), interpolation_links(composed)


def _compose(overrides: tuple[str, ...]) -> DictConfig:
    """conf/config.yaml with `overrides`. Inside `python -m ecab.run` Hydra's app is running (its global state
    refuses a second initialization), so the app composes it, from the same conf/."""
    from hydra.core.global_hydra import GlobalHydra

    if not GlobalHydra.instance().is_initialized():
        return load_config(list(overrides))
    from hydra import compose
    return compose(config_name="config", overrides=list(overrides))


def interpolation_links(node: DictConfig, prefix: str = "") -> dict[str, str]:
    """{leaf: the key it copies} for every leaf that is exactly `${other.key}`."""
    links: dict[str, str] = {}
    for key in map(str, node.keys()):
        path = f"{prefix}.{key}" if prefix else key
        child = node._get_node(key)
        if OmegaConf.is_interpolation(node, key):
            match = re.fullmatch(r"\$\{([\w.]+)\}", str(child._value()))   # type: ignore[union-attr]
            if match:
                links[path] = match.group(1)
        elif isinstance(child, DictConfig) and not child._is_missing() and not child._is_none():
            links.update(interpolation_links(child, path))
    return links


# --------------------------------------------------------------------------------------------- rendering

def model_label(cfg: EcabConfig, diff: dict[str, Any]) -> tuple[str, bool]:
    """`<model>`, with `=<model_id>` and `@<host>-<port>` when the config's differ from its YAML's (issue 29:
    an own endpoint is never labelled as the provider's model); (label, lossy)."""
    label, lossy = safe(cfg.model.name)
    if "model.model_id" in diff:
        model_id = diff["model.model_id"]
        text, cut = safe(str(model_id).replace("/", "_")) if model_id is not _REMOVED else ("none", False)
        label, lossy = f"{label}={text}", lossy or cut
    if "model.base_url" in diff:
        host, cut = endpoint_label(diff["model.base_url"])
        label, lossy = f"{label}@{host}", lossy or cut
    return label, lossy


def endpoint_label(url: Any) -> tuple[str, bool]:
    """`my-vllm-8000` for http://my-vllm:8000/v1; lossy when the URL says more than host, port and /v1."""
    if url is None or url is _REMOVED:
        return "default", False
    parts = urlsplit(str(url))
    host = parts.hostname or str(url)
    text, cut = safe(f"{host}-{parts.port}" if parts.port else host)
    return text, cut or parts.path.rstrip("/") not in ("", "/v1") or bool(parts.query)


def short_key(path: str, paths: Iterable[str]) -> str:
    """The shortest dotted tail of `path` that no other key ends with (`limit`, `catalog.seed` beside the root
    `seed`); the full path when none is."""
    parts = path.split(".")
    others = [p.split(".") for p in paths if p != path]
    for n in range(1, len(parts) + 1):
        tail = parts[-n:]
        if not any(o[-n:] == tail for o in others if len(o) >= n):
            return ".".join(tail)
    return path


def render_item(key: str, value: Any) -> tuple[str, bool]:
    """`limit20` (a number after a key not ending in a digit), `search=fts`, `~key` (removed); (text, lossy)."""
    if value is _REMOVED:
        return f"~{key}", False
    text, lossy = render_value(value)
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    glue = "" if number and not text.startswith("-") and not key[-1].isdigit() else "="
    return f"{key}{glue}{text}", lossy


def render_value(value: Any) -> tuple[str, bool]:
    if isinstance(value, bool) or value is None:
        return json.dumps(value), False
    if isinstance(value, (int, float)):
        return str(value), False
    if isinstance(value, (list, tuple)):
        parts = [render_value(v) for v in value]
        return "+".join(p[0] for p in parts), any(p[1] for p in parts)
    if isinstance(value, str) and ("/" in value or "\\" in value):
        return path_stem(value), True
    return safe(str(value) if not isinstance(value, dict) else json.dumps(value, sort_keys=True))


def path_stem(path: str) -> str:
    """A file's readable part: its stem (and its folder's name when the stem says nothing: benchmark.jsonl)."""
    pure = PurePath(path)
    stem = pure.stem if pure.stem not in ("benchmark", "tasks", "") or not pure.parent.name else \
        f"{pure.parent.name}-{pure.stem}"
    return safe(stem)[0] or "file"


def safe(text: str) -> tuple[str, bool]:
    """`text` with every character a folder name should not hold replaced; (text, whether any was)."""
    cleaned = _UNSAFE.sub("_", text)
    return cleaned, cleaned != text


def bounded(suffix: str, digest: str, hashed: bool, limit: int = MAX_SUFFIX) -> str:
    """The suffix as it is when short and exact; else its readable prefix (whole items, up to `limit` characters)
    and the digest of the whole difference."""
    if len(suffix) <= limit and not hashed:
        return suffix
    keep: list[str] = []
    for item in suffix.split("-") if suffix else []:
        if len("-".join([*keep, item])) > limit - HASH_CHARS - 1:
            break
        keep.append(item)
    return "-".join([*keep, digest[:HASH_CHARS]])


def stable_hash(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def quoted(value: str) -> str:
    """A value as a quoted Hydra override value (paths with spaces, commas or '=')."""
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


# ------------------------------------------------------------------------------------------------ sweeps

SWEEP_IGNORED = ("run", "hydra", "cache_dir")   # where the sweep writes, not what it runs


def sweep_name(overrides: Sequence[str]) -> str:
    """`sweep-<swept key>=<values>-...`, the keys sorted, plus a hash of every override (the fixed ones too) when
    there are fixed ones or the readable part is cut: the same sweep gets the same folder, whatever the order
    of its overrides."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    try:
        parsed = OverridesParser.create().parse_overrides([str(o) for o in overrides])
    except HydraException as exc:
        raise ConfigError(f"bad override: {first_line(exc)}") from None
    kept = sorted((o for o in parsed if o.get_key_element().lstrip("+~").split(".")[0] not in SWEEP_IGNORED),
                  key=lambda o: o.get_key_element())
    swept = [o for o in kept if o.is_sweep_override()]
    keys = [o.get_key_element().lstrip("+~") for o in swept]
    items, lossy = [], False
    for override, key in zip(swept, keys):
        values, cut = _sweep_values(override)
        text, cut_key = safe(f"{short_key(key, keys)}={values}")
        items.append(text)
        lossy = lossy or cut or cut_key
    digest = stable_hash(sorted(str(o.input_line) for o in kept))
    suffix = bounded("-".join(items), digest, lossy or len(swept) < len(kept), MAX_SWEEP_SUFFIX)
    return f"sweep-{suffix}" if suffix else "sweep"


MAX_SWEEP_VALUES = 24   # a longer list of values is named by its ends ("model=a,..,z"), the hash keeps it exact


def _sweep_values(override: Any) -> tuple[str, bool]:
    try:
        values = list(override.sweep_string_iterator())
    except Exception:  # noqa: BLE001 - a sweep Hydra cannot list here (an interval): its text, hashed
        return str(override.value()), True
    text = ",".join(values)
    if len(text) > MAX_SWEEP_VALUES and len(values) > 2:
        return f"{values[0]},..,{values[-1]}", True
    return text, False


def register_resolvers() -> None:
    """`${ecab_sweep:${hydra.overrides.task}}` in conf/config.yaml's hydra.sweep.dir: the sweep's name from the
    sweep's overrides. Cached (use_cache, keyed by the argument's text): Hydra copies the sweep config's resolver
    cache into each job's config, so every job resolves the folder of the whole sweep, not one named by its own
    overrides (the mechanism Hydra's own `${now:...}` sweep folders rely on)."""
    if not OmegaConf.has_resolver("ecab_sweep"):
        OmegaConf.register_new_resolver("ecab_sweep", lambda overrides: sweep_name(list(overrides)), use_cache=True)

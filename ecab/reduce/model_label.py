"""The model a run is shown under: the label its run name's model part carries (`gpt-5=ecab-sim-heuristic@
127.0.0.1-18765` for `model=gpt-5` pointed at an own endpoint, ecab/config/naming.py `model_label`), so a
summary, a report or a compare page never shows an own endpoint as the provider's model (issue 29).

A run's manifest names it under `model` (and the plain config name under `model_config`) when ecab.run writes
them; for a run whose manifest does not (written before they were), the label is worked out from the run's
config.yaml by the same function (naming.run_model_label).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def run_model(manifest: dict[str, Any], config: dict[str, Any] | None, fallback: str = "") -> tuple[str, str]:
    """(label, config name) of a run's model: the manifest's `model` / `model_config` when it has them, else
    from config.yaml (`config`, as a dict), else `fallback` (the trajectories' model) for both."""
    section = (config or {}).get("model")
    section = section if isinstance(section, dict) else {}
    plain = _text(manifest.get("model_config")) or _text(section.get("name")) or fallback
    label = _text(manifest.get("model")) or config_label(config) or plain
    return label, plain or label


def folder_config(config_path: Path) -> dict[str, Any]:
    """A run folder's config.yaml as a dict ({} when it is missing or unreadable)."""
    try:
        parsed = yaml.safe_load(config_path.read_text(encoding="utf-8")) if config_path.is_file() else {}
    except (OSError, yaml.YAMLError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


def config_label(config: dict[str, Any] | None) -> str | None:
    """The run name's model label of a run's recorded config: its model composed again with the recorded
    model_id and base_url, named by naming.run_model_label; None when that no longer composes (a model YAML
    since removed, a user's own section): the caller falls back to the plain name."""
    section = (config or {}).get("model")
    if not isinstance(section, dict) or not _text(section.get("name")):
        return None
    from ecab.config import load_config, naming, parse
    overrides = [f"model={section['name']}"]
    for key in ("model_id", "base_url"):
        if key in section:
            value = section[key]
            overrides.append(f"model.{key}=" + ("null" if value is None else naming.quoted(str(value))))
    try:
        return naming.run_model_label(parse(load_config(overrides)))
    except Exception:  # noqa: BLE001 - no label is better than a wrong one
        return None


def relabel(usage_by_model: dict[str, Any], plain: str, label: str) -> dict[str, Any]:
    """`tokens_and_cost.by_model` with the config name's entry under the label (the episodes' units carry the
    config name), in the same order."""
    return {(label if name == plain else name): value for name, value in usage_by_model.items()}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""

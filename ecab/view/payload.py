"""One run folder, read through `ecab.runs.RunFolder` and reduce's outputs, as the report's plain JSON data.

A run becomes two parts: `main` (the run page and the episode list: summary cards and tables, plots, the
task-set audit, provenance, the tasks, one row per episode) which the page decodes at load, and `details`
(one record per episode: timeline, verdicts, products) which it decodes only when an episode is opened.
"""
from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ecab.reduce.compare import load_summary
from ecab.reduce.episodes import Episode
from ecab.runs import RunFolder
from ecab.schema import Task
from ecab.view import products, run_page
from ecab.view.episodes import OUTCOMES, ROW_COLUMNS, episode_detail, episode_row, run_episodes

AUDIT_KEYS = ("status", "source", "headline", "reason", "query_singles_out", "load_bearing", "match_query_median",
              "tasks", "structural_picks", "review_opinion")


@dataclass
class LoadedRun:
    path: Path
    summary: dict[str, Any]
    episodes: list[Episode]
    main: dict[str, Any]
    details: list[dict[str, Any]]


def image_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def embedded_plots(folder: Path) -> list[dict[str, str]]:
    """Every PNG of a plots folder as {name, title, src (a data URI)}, by file name."""
    return [{"name": p.name, "title": p.stem.replace("_", " "), "src": image_uri(p)}
            for p in sorted(folder.glob("*.png"))] if folder.is_dir() else []


def task_view(task: Task) -> dict[str, Any]:
    """What the pages show of a task: the query, the hidden parts, the target, the rubrics."""
    slots = [{"slot": s.slot_id, "rubrics": list(s.linked_rubric_ids), "hidden_info": s.hidden_info,
              "triggers": list(s.trigger_keywords), "response": s.user_response}
             for s in task.clarification_script.clarification_slots]
    return {
        "id": task.id, "intent": task.intent_category, "query": task.user_query,
        "persona": task.user_persona.to_dict(), "slots": slots,
        "target": products.product_view(task.target_product),
        "rubrics": [{"id": r.id, "type": r.type, "field": r.field, "expected": r.expected_value,
                     "description": r.description, "source": r.info_source} for r in task.rubrics],
        "implicit": list(task.implicit_rubric_ids),
        "voucher": task.voucher.to_dict() if task.voucher is not None else None,
    }


def _config(folder: RunFolder) -> tuple[str, dict[str, Any]]:
    if not folder.config_path.is_file():
        return "", {}
    text = folder.config_path.read_text(encoding="utf-8")
    try:
        parsed = yaml.safe_load(text)
    except yaml.YAMLError:
        parsed = None
    return text, parsed if isinstance(parsed, dict) else {}


def _audit(summary: dict[str, Any], manifest: dict[str, Any]) -> dict[str, Any] | None:
    audit = summary.get("task_audit") or manifest.get("task_audit")
    return {k: audit[k] for k in AUDIT_KEYS if k in audit} if isinstance(audit, dict) else None


def _recommended_products(episodes: list[Episode], catalog_dir: Path | None) -> tuple[dict[str, dict], str]:
    """The recommended products' records by id, and where they came from (said on the page)."""
    ids = [e.traj.recommended_id for e in episodes if e.traj.recommended_id]
    try:
        found = products.from_catalog(catalog_dir, ids)
    except Exception as exc:  # noqa: BLE001 - a catalog that no longer opens: fall back to the tool results
        return {}, f"the run's catalog did not open ({type(exc).__name__}); records from the agents' tool results"
    if found:
        return found, f"the run's catalog ({catalog_dir})"
    return {}, "the agents' tool results (the run's catalog is not on this machine)"


def load_run(path: str | Path, *, catalog_dir: str | Path | None = None) -> LoadedRun:
    """Read a finished run folder (reduced first if it has no summary yet) into its report data."""
    folder = RunFolder(path)
    summary = load_summary(folder.path)
    manifest, tasks, trajectories, judgements = folder.load()
    episodes = run_episodes(tasks, trajectories, judgements)
    config_text, config = _config(folder)
    catalog = Path(catalog_dir) if catalog_dir else products.catalog_path(config, manifest)
    records, product_source = _recommended_products(episodes, catalog)
    prompts: dict[str, int] = {}
    details = []
    for e in episodes:
        detail = episode_detail(e, prompts)
        pid = e.traj.recommended_id
        detail["recommended_product"] = (records.get(pid) or products.from_tool_results(e.traj, pid)) if pid else None
        details.append(detail)
    used = {e.task.id for e in episodes}
    main = {
        "name": folder.path.name, "path": str(folder.path), "model": summary.get("model"),
        "cards": run_page.headline(summary), "tables": run_page.tables(summary),
        "audit": _audit(summary, manifest), "provenance": run_page.provenance(manifest, summary),
        "plots": embedded_plots(folder.plots_dir), "config": config_text,
        "tasks": {tid: task_view(t) for tid, t in tasks.items() if tid in used},
        "columns": list(ROW_COLUMNS), "outcomes": list(OUTCOMES), "rows": [episode_row(e) for e in episodes],
        "system_prompts": list(prompts), "product_source": product_source,
    }
    return LoadedRun(folder.path, summary, episodes, main, details)


def to_json(value: Any) -> str:
    """Compact JSON that is safe inside a <script> element ("<" never appears raw)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str).replace("<", "\\u003c")

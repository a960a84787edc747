"""One run folder, read through `ecab.runs.RunFolder` and reduce's outputs, as the report's plain JSON data.

A run becomes two parts: `main` (the run page and the episode list: summary cards and tables, plots, the
task-set audit, provenance, the tasks, one row per episode) which the page decodes at load, and `details`
(one record per episode: timeline, verdicts, products) which it decodes only when an episode is opened.
A run in progress (status.py) has no summary yet: its page shows the episodes recorded so far, unjudged
("pending") until its judge stage runs, and reading it writes nothing into its folder.
"""
from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ecab.reduce.compare import load_summary
from ecab.reduce.episodes import Episode
from ecab.reduce.model_label import run_model
from ecab.runs import RunFolder
from ecab.schema import FormatError, Judgement, Task
from ecab.view import products, run_page
from ecab.view.episodes import (OUTCOMES, ROW_COLUMNS, episode_detail, episode_row, partial_episodes,
                                run_episodes)
from ecab.view.status import RunStatus, config_of, run_status

AUDIT_KEYS = ("status", "source", "headline", "reason", "query_singles_out", "load_bearing", "match_query_median",
              "tasks", "structural_picks", "review_opinion")


@dataclass
class LoadedRun:
    path: Path
    summary: dict[str, Any]
    episodes: list[Episode]
    main: dict[str, Any]
    details: list[dict[str, Any]]
    status: RunStatus


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
    text = folder.config_path.read_text(encoding="utf-8") if folder.config_path.is_file() else ""
    return text, config_of(folder)


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


def _judgements_so_far(folder: RunFolder) -> list[Judgement]:
    """The verdicts of a run in progress: none until its judge stage wrote them."""
    try:
        path = folder.verdicts_path
    except FormatError:
        return []
    return folder.read_verdicts() if path.is_file() else []


def _episodes(folder: RunFolder) -> tuple[dict[str, Any], list[Episode], dict[str, Any] | None, RunStatus]:
    """(manifest, episodes, summary, status). A finished run as reduce reads it (its summary re-reduced
    when outdated); a run in progress from what it has recorded so far, with no summary and nothing written."""
    if not folder.path.is_dir():
        raise FormatError("run folder not found", path=folder.path)
    manifest = folder.load_manifest()
    tasks = folder.read_tasks(manifest)
    latest = list(folder.latest_trajectories().values())
    status = run_status(folder, done=sum(t.termination != "infra_error" for t in latest))
    if not status.finished:
        return manifest, partial_episodes(tasks, latest, _judgements_so_far(folder)), None, status
    summary = load_summary(folder.path)     # may re-reduce, which rewrites nothing the episodes are read from
    episodes = run_episodes(tasks, folder.read_trajectories(), folder.read_verdicts())
    return manifest, episodes, summary, status


def load_run(path: str | Path, *, catalog_dir: str | Path | None = None) -> LoadedRun:
    """Read a run folder into its report data: a finished run (reduced first if its summary is outdated) or
    one in progress (the episodes recorded so far; the page says how far it has got)."""
    folder = RunFolder(path)
    manifest, episodes, summary, status = _episodes(folder)
    tasks = {e.task.id: e.task for e in episodes}
    config_text, config = _config(folder)
    catalog = Path(catalog_dir) if catalog_dir else products.catalog_path(config, manifest)
    records, product_source = _recommended_products(episodes, catalog)
    # the run name's model label (reduce/model_label.py), also over a summary reduced before it named it so
    model, model_config = run_model(manifest, config, next((e.traj.model for e in episodes if e.traj.model), ""))
    if summary is not None and summary.get("model") not in (None, "", model_config):
        model, model_config = summary["model"], summary.get("model_config") or model_config
    elif summary is not None and model != summary.get("model"):
        summary = {**summary, "model": model}
    cost_unknown = manifest.get("agent_prices") == "unknown"   # an own endpoint without prices (reduce/usage.py)
    prompts: dict[str, int] = {}
    details = []
    for e in episodes:
        detail = episode_detail(e, prompts, cost_unknown=cost_unknown)
        pid = e.traj.recommended_id
        detail["recommended_product"] = (records.get(pid) or products.from_tool_results(e.traj, pid)) if pid else None
        details.append(detail)
    rows = [episode_row(e, {model_config: model}, cost_unknown=cost_unknown) for e in episodes]
    if summary is None:     # in progress: what the recorded episodes already say, no summary yet
        summary = {"model": model or None}
        cards, tables = run_page.progress_cards(status, rows), run_page.progress_tables(rows)
        plots: list[dict[str, str]] = []
    else:
        cards, tables, plots = run_page.headline(summary), run_page.tables(summary), embedded_plots(folder.plots_dir)
    main = {
        "name": folder.path.name, "path": str(folder.path), "model": summary.get("model"),
        "status": status.to_dict(), "cards": cards, "tables": tables,
        "audit": _audit(summary, manifest), "provenance": run_page.provenance(manifest, summary),
        "plots": plots, "config": config_text,
        "tasks": {tid: task_view(t) for tid, t in tasks.items()},
        "columns": list(ROW_COLUMNS), "outcomes": list(OUTCOMES), "rows": rows,
        "system_prompts": list(prompts), "product_source": product_source,
    }
    return LoadedRun(folder.path, summary, episodes, main, details, status)


def to_json(value: Any) -> str:
    """Compact JSON that is safe inside a <script> element ("<" never appears raw)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str).replace("<", "\\u003c")

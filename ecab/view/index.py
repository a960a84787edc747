"""The index of a folder of runs (`python -m ecab.view runs/` or a sweep's folder): one static page,
<folder>/index.html, with a row per run (name, model, budget, tasks, accuracy with its 95% interval,
finished or in progress) linking to each run's report.html, which is built first when missing or older
than the run's files.

The runs are the ones the folder's sweep.json lists under "runs" (paths as written: absolute, or relative to
the sweep folder or to the working directory), else every subfolder that is a run folder (has a manifest).
Above them, the folder's sweep tables and budget studies (subfolders holding sweep.md or budget_study.md), each
linking to its table and plot, so a folder of a researcher's runs shows its summaries first.
"""
from __future__ import annotations

import html
import json
import os
import re
import time
from pathlib import Path
from typing import Any, Callable

from ecab.reduce.model_label import run_model
from ecab.runs import RunFolder
from ecab.view.live import source_files
from ecab.view.status import config_of, run_status

INDEX = "index.html"
SWEEP = "sweep.json"
TABLES = (("sweep", "sweep.md", "sweep.png"), ("budget study", "budget_study.md", "budget_study.png"))
COLUMNS = ("run", "model", "budget", "tasks", "accuracy [95% CI]", "status")


def is_run_folder(path: Path) -> bool:
    return RunFolder(path).manifest_path.is_file()


def _sweep_runs(folder: Path) -> list[Path] | None:
    """The runs a sweep.json lists, or None when there is no usable list (no file, no "runs" key)."""
    path = folder / SWEEP
    if not path.is_file():
        return None
    try:
        listed = json.loads(path.read_text(encoding="utf-8")).get("runs")
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(listed, list):
        return None
    runs = []
    for entry in listed:
        named = Path(str(entry))
        candidates = [named] if named.is_absolute() else [folder / named, named]
        runs.append(next((c for c in candidates if c.is_dir()), candidates[0]))
    return runs


def runs_of(folder: str | Path) -> list[Path]:
    """The run folders an index of `folder` lists (see the module's docstring)."""
    folder = Path(folder)
    listed = _sweep_runs(folder)
    if listed is not None:
        return listed
    return sorted(p for p in folder.iterdir() if p.is_dir() and is_run_folder(p)) if folder.is_dir() else []


def tables_of(folder: Path) -> list[tuple[str, Path, Path | None]]:
    """(kind, table, plot or None) of every sweep table and budget study in `folder`'s subfolders, by name."""
    found = []
    for sub in sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []:
        for kind, table, plot in TABLES:
            if (sub / table).is_file():
                found.append((kind, sub / table, sub / plot if (sub / plot).is_file() else None))
    return found


def render_tables(folder: Path, tables: list[tuple[str, Path, Path | None]]) -> str:
    """The list of sweep tables and budget studies, links relative to `folder` (empty when there are none)."""
    if not tables:
        return ""
    items = []
    for kind, table, plot in tables:
        link = html.escape(os.path.relpath(table, folder))
        plot_link = f' · <a href="{html.escape(os.path.relpath(plot, folder))}">plot</a>' if plot else ""
        items.append(f'<li>{html.escape(kind)}: <a href="{link}">{html.escape(table.parent.name)}</a>{plot_link}</li>')
    return f'<h2>Sweeps and budget studies</h2><ul id="tables">{"".join(items)}</ul><h2>Runs</h2>'


def report_is_stale(run_dir: Path) -> bool:
    """No report.html, or one older than a file it is read from."""
    folder = RunFolder(run_dir)
    if not folder.report_path.is_file():
        return True
    built = folder.report_path.stat().st_mtime_ns
    return any(p.is_file() and p.stat().st_mtime_ns > built for p in source_files(folder))


def _accuracy(summary: dict[str, Any]) -> str:
    rate = summary.get("overall_accuracy")
    if rate is None:
        return "n/a"
    ci = (summary.get("variance") or {}).get("accuracy") or {}
    interval = f" [{ci['low'] * 100:.1f}, {ci['high'] * 100:.1f}]" if ci.get("low") is not None else ""
    return f"{rate * 100:.1f}%{interval}"


def run_row(run_dir: Path) -> dict[str, Any]:
    """One run's line of the index: {column: text}, plus its report's path."""
    folder = RunFolder(run_dir)
    manifest = folder.read_manifest() if folder.manifest_path.is_file() else {}
    config = config_of(folder)
    status = run_status(folder)
    summary = (folder.read_summary() or {}) if status.finished else {}
    model = summary.get("model") or run_model(manifest, config)[0]   # the run name's label, not the bare config name
    budget = (summary.get("budget") or {}).get("budget") or config.get("budget") or ""
    return {"run": folder.path.name, "model": str(model), "budget": str(budget),
            "tasks": str(manifest.get("n_tasks", "")), "accuracy [95% CI]": _accuracy(summary),
            "status": status.text(), "report": folder.report_path}


def render_index(title: str, rows: list[dict[str, Any]], links: list[str], tables: str = "") -> str:
    """The page: a plain table (no script), each run's name linking to its entry of `links`; `tables`, the
    sweep tables' and studies' list (render_tables), above it."""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in COLUMNS)
    body = []
    for row, link in zip(rows, links):
        cells = [f'<td><a href="{html.escape(link)}">{html.escape(row["run"])}</a></td>']
        cells += [f"<td>{html.escape(row[c])}</td>" for c in COLUMNS[1:]]
        cls = "finished" if row["status"] == "finished" else "running"
        body.append(f'<tr class="{cls}">{"".join(cells)}</tr>')
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="generator" content="ecab.view">
<title>ecab runs: {html.escape(title)}</title>
<style>body {{ font: 14px/1.45 system-ui, sans-serif; margin: 20px; color: #1d232a; }}
table {{ border-collapse: collapse; }} th, td {{ border: 1px solid #dde2e7; padding: 3px 8px; text-align: left; }}
th {{ background: #eef1f5; }} tr.running td {{ background: #fff8e1; }} .muted {{ color: #68717c; }}</style>
</head><body><h1>Runs in {html.escape(title)}</h1>
<p class="muted">{len(rows)} run(s) · generated {time.strftime("%Y-%m-%d %H:%M:%S")}</p>{tables}
<table id="runs"><thead><tr>{head}</tr></thead><tbody>
{chr(10).join(body)}
</tbody></table></body></html>
"""


def served_names(run_dirs: list[Path]) -> dict[str, Path]:
    """A distinct URL-safe name per run (its folder name, numbered when two runs share one)."""
    names: dict[str, Path] = {}
    for run_dir in run_dirs:
        base = re.sub(r"[^A-Za-z0-9_.=@+-]+", "_", run_dir.name) or "run"
        name, k = base, 2
        while name in names:
            name, k = f"{base}-{k}", k + 1
        names[name] = run_dir
    return names


def index_rows(run_dirs: list[Path]) -> list[dict[str, Any]]:
    return [run_row(d) if is_run_folder(d) else _missing_row(d) for d in run_dirs]


def served_index(folder: Path, names: dict[str, Path]) -> str:
    """The index as the server shows it: each run's report at <name>/ (server.start_index's routes)."""
    return render_index(str(folder), index_rows(list(names.values())), [f"{name}/" for name in names])


def write_index(folder: str | Path, *, build: Callable[[Path], Any] | None = None) -> tuple[Path, list[Path]]:
    """Build the listed runs' missing or stale reports with `build(run_dir)` (default: write_report; a
    failure is left to `build` to report, the row still links where the report will be), then write
    <folder>/index.html. Returns (its path, the runs)."""
    from ecab.view.writer import write_atomic, write_report
    folder = Path(folder)
    run_dirs = runs_of(folder)
    if not run_dirs:
        raise ValueError(f"{folder}: no run folders in it (subfolders with a manifest.json, or a {SWEEP} "
                         "listing them under \"runs\")")
    for run_dir in run_dirs:
        if is_run_folder(run_dir) and report_is_stale(run_dir):
            (build or (lambda d: write_report([d])))(run_dir)
    rows = index_rows(run_dirs)
    target = folder / INDEX
    write_atomic(target, render_index(str(folder), rows, [os.path.relpath(r["report"], folder) for r in rows],
                                      render_tables(folder, tables_of(folder))))
    return target, run_dirs


def _missing_row(run_dir: Path) -> dict[str, Any]:
    return {"run": run_dir.name, "model": "", "budget": "", "tasks": "", "accuracy [95% CI]": "",
            "status": "not found", "report": RunFolder(run_dir).report_path}

"""The reduce stage: rebuild summary.json / summary.md of a run folder from the files on disk.

Inputs (docs/architecture.md §8, read through `ecab.runs.RunFolder`): the trajectories
(`trajectories/part-*.jsonl.gz`, one Trajectory per record), the verdicts of the judge the manifest names active
(`verdicts.<judge>.jsonl.gz`, one Judgement per line) and the task file named by `manifest.json`'s `tasks_path`.
Re-running it never needs the agents or the judge.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ecab.reduce.audit import judge_agreement
from ecab.reduce.budget import truncated_accuracy
from ecab.reduce.model_label import folder_config, relabel, run_model
from ecab.reduce.plots import render_run_plots
from ecab.reduce.report import render_markdown
from ecab.reduce.summary import summarize
from ecab.reduce.usage import mark_cost_unknown
from ecab.runs import RunFolder
from ecab.schema import FormatError

__all__ = ["summarize", "write_summary", "reduce_run", "render_markdown", "truncated_accuracy"]


def _name(manifest: dict[str, Any], key: str, fallback: str) -> str:
    value = manifest.get(key)
    return value if isinstance(value, str) and value else fallback


def write_summary(run_dir: str | Path, summary: dict[str, Any], *, plots: bool = True) -> None:
    """Write summary.json (the dict, indented), summary.md (rendered from it) and, unless plots=False, the
    PNG charts in plots/ (drawn from the same dict)."""
    folder = RunFolder(run_dir)
    folder.write_summary(summary, render_markdown(summary))
    if plots:
        render_run_plots(summary, folder.plots_dir)


def reduce_run(run_dir: str | Path, *, plots: bool = True) -> dict[str, Any]:
    """Rebuild every artifact of a run folder from the files on disk: summary.json, summary.md and (unless
    plots=False) plots/*.png. With the verdicts of two or more judges the judges' agreement is
    added as `judge_agreement`. Returns the summary."""
    run_dir = Path(run_dir)
    folder = RunFolder(run_dir)
    manifest, tasks, trajectories, judgements = folder.load()
    # the run name's model label (an own endpoint is never shown as the provider's model), the config name apart
    model, model_config = run_model(manifest, folder_config(folder.config_path),
                                    next((t.model for t in trajectories if t.model), ""))
    judge_model = _name(manifest, "judge_model", next((j.judge for j in judgements if j.judge), ""))
    others = folder.read_judge_verdicts()
    try:
        extra = {"judge_agreement": judge_agreement(others, tasks)} if len(others) >= 2 else {}
        if manifest.get("runner_stats"):
            extra["runner"] = manifest["runner_stats"]   # what the runner retried, re-queued or restarted
        if manifest.get("task_audit"):
            extra["task_audit"] = manifest["task_audit"]   # how hard the task set is (ecab.run writes it)
        if model_config != model:
            extra["model_config"] = model_config
        extra = extra or None
        summary = summarize(tasks, trajectories, judgements, model=model, judge_model=judge_model, extra=extra)
        usage = summary["tokens_and_cost"]
        usage["by_model"] = relabel(usage["by_model"], model_config, model)
        if manifest.get("agent_prices") == "unknown":   # an own endpoint without prices (ecab/run.py agent_prices)
            mark_cost_unknown(summary["tokens_and_cost"])
    except ValueError as exc:
        if isinstance(exc, FormatError):
            raise
        raise FormatError(str(exc), path=run_dir) from None
    write_summary(run_dir, summary, plots=plots)
    return summary

"""Judge a run's episodes with the configured judge (`judge=rules` or `judge=llm`).

Used by both `python -m ecab.run` (after the episodes) and `python -m ecab.judge` (re-judging a finished
run); they store the verdicts with `RunFolder.write_verdicts` (ecab/runs/folder.py: verdicts.jsonl for the
judge chosen last, verdicts.<judge>.jsonl for every judge that ever judged the run).
"""
from __future__ import annotations

import asyncio
from typing import Any, Iterable

from ecab.config import ConfigError
from ecab.schema import Judgement, Task, Trajectory


def judge_model_name(judge_cfg: Any) -> str:
    """The summary's `judge_model`: "rules", or "llm:<model id>"."""
    if judge_cfg.name == "llm":
        from ecab.judge.llm import JudgeSettings
        return f"llm:{JudgeSettings.from_config(judge_cfg).model_id}"
    return str(judge_cfg.name)


def check_judge_config(judge_cfg: Any) -> None:
    """Fail before any work starts: unknown judge, bad judge keys, or a missing API key for the judge."""
    if judge_cfg.name == "rules":
        return
    if judge_cfg.name != "llm":
        raise ConfigError(f"judge.name must be rules or llm, got {judge_cfg.name!r}")
    from ecab.judge.llm import JudgeSettings
    from ecab.llm.keys import resolve_api_key
    resolve_api_key(JudgeSettings.from_config(judge_cfg).model,
                    offline="judge offline with judge=rules or judge=llm judge.model=sim")


def _review_checker(judge_cfg: Any):
    from ecab.catalog.review_match import ReviewChecker
    threshold = judge_cfg.get("review_threshold") if hasattr(judge_cfg, "get") else None
    return ReviewChecker(threshold=threshold) if threshold is not None else ReviewChecker()


def judge_all(judge_cfg: Any, tasks: dict[str, Task], trajectories: Iterable[Trajectory],
              catalog) -> tuple[list[Judgement], dict[str, Any]]:
    """(one Judgement per trajectory, a description of the judge for the manifest). judge.model=sim (no
    base_url) serves the simulator, with the judge's reply policy, for the judging pass."""
    trajectories = [t for t in trajectories if t.id in tasks]
    checker = _review_checker(judge_cfg)
    if judge_cfg.name == "rules":
        from ecab.judge.episode import judge_trajectory
        judgements = [judge_trajectory(tasks[t.id], t, catalog, review_checker=checker, judge_name="rules")
                      for t in trajectories]
        return judgements, {"name": "rules", "review_checker": checker.describe()}
    check_judge_config(judge_cfg)
    from ecab.judge.llm import JudgeSettings, judge_all_llm, open_cache
    from ecab.judge.sim_policy import JudgePolicy
    from ecab.sim import serve_if_simulated
    settings = JudgeSettings.from_config(judge_cfg)
    model, simulator = serve_if_simulated(settings.model, [JudgePolicy])
    settings = settings.with_model(model)
    cache = open_cache(settings)
    try:
        judgements, describe = asyncio.run(judge_all_llm(settings, tasks, trajectories, catalog, cache=cache,
                                                         review_checker=checker))
    finally:
        if cache is not None:
            cache.close()
        if simulator is not None:
            simulator.stop()
    return judgements, describe



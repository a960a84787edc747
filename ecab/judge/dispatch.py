"""Judge a run's episodes with the configured judge (`judge=rules` or `judge=llm`): the one place that turns
the `judge` config group into a `Judge` (protocol.py).

Used by both `python -m ecab.run` (after the episodes) and `python -m ecab.judge` (re-judging a finished
run); they store the verdicts with `RunFolder.write_verdicts` (ecab/runs/folder.py: verdicts.<judge>.jsonl.gz
for every judge that ever judged the run, the manifest's `active_judge` naming the one chosen last).
"""
from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

from ecab.catalog.review_match import ReviewChecker
from ecab.config import ConfigError
from ecab.judge.protocol import Judge, judge_episodes
from ecab.judge.rules import RULES, RulesJudge
from ecab.schema import Judgement, Task, Trajectory

LLM = "llm"


def check_judge_config(judge_cfg: Any) -> None:
    """Fail before any work starts: unknown judge, bad judge keys, or a missing API key for the judge."""
    if judge_cfg.name == RULES:
        return
    if judge_cfg.name != LLM:
        raise ConfigError(f"judge.name must be rules or llm, got {judge_cfg.name!r}")
    from ecab.judge.llm import JudgeSettings
    from ecab.llm.keys import resolve_api_key
    resolve_api_key(JudgeSettings.from_config(judge_cfg).model,
                    offline="judge offline with judge=rules or judge=llm judge.model=sim")


def _review_checker(judge_cfg: Any) -> ReviewChecker:
    threshold = judge_cfg.get("review_threshold") if hasattr(judge_cfg, "get") else None
    return ReviewChecker(threshold=threshold) if threshold is not None else ReviewChecker()


@contextlib.contextmanager
def configured_judge(judge_cfg: Any) -> Iterator[Judge]:
    """The judge of the `judge` config group for one judging pass. judge=llm opens its reply cache and, for
    judge.model=sim (no base_url), serves the simulator with the judge's reply policy; both are closed after."""
    checker = _review_checker(judge_cfg)
    if judge_cfg.name == RULES:
        yield RulesJudge(review_checker=checker)
        return
    check_judge_config(judge_cfg)
    from ecab.judge.llm import JudgeSettings, LLMJudge, open_cache
    from ecab.judge.sim_policy import JudgePolicy
    from ecab.sim import serve_if_simulated
    settings = JudgeSettings.from_config(judge_cfg)
    model, simulator = serve_if_simulated(settings.model, [JudgePolicy])
    settings = settings.with_model(model)
    cache = open_cache(settings)
    try:
        yield LLMJudge(settings, cache=cache, review_checker=checker)
    finally:
        if cache is not None:
            cache.close()
        if simulator is not None:
            simulator.stop()


@dataclass
class JudgedRun:
    """What a judging pass gives its caller: the verdicts and what to record about the judge."""

    judge: str                      # the judge's name: Judgement.judge, verdicts.<judge>.jsonl
    judge_model: str                # the summary's judge_model: "rules" or "llm:<model id>"
    judgements: list[Judgement]     # one per trajectory whose task is known, in input order
    describe: dict[str, Any]        # the manifest's `judge`


def judge_run(judge_cfg: Any, tasks: dict[str, Task], trajectories: Iterable[Trajectory], catalog) -> JudgedRun:
    """Judge every trajectory whose task is in `tasks` with the configured judge."""
    with configured_judge(judge_cfg) as judge:
        judgements = asyncio.run(judge_episodes(judge, tasks, trajectories, catalog))
        return JudgedRun(judge.name, judge.model_name, judgements, judge.describe())

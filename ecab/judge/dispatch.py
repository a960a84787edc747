"""Judge a run's episodes with the configured judge: the one place that turns the `judge` config group into a
`Judge` (protocol.py). Judges are factories in one registry (`JUDGES`): ecab's rules and llm judges, a user's
registered ones (`ecab.register_judge`, `ecab.plugins` entry points) and `judge.kind=python` with a `target`
import path (docs/extending.md).

Used by both `python -m ecab.run` (after the episodes) and `python -m ecab.judge` (re-judging a finished
run); they store the verdicts with `RunFolder.write_verdicts` (ecab/runs/folder.py: verdicts.<judge>.jsonl.gz
for every judge that ever judged the run, the manifest's `active_judge` naming the one chosen last).
"""
from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

from ecab.catalog.review_match import ReviewChecker
from ecab.config import ConfigError
from ecab.core.plugins import Registry
from ecab.env.agent_protocol import EndpointRefused
from ecab.judge.episode import make_judgement
from ecab.judge.protocol import Judge, judge_episodes
from ecab.judge.rules import RULES, RulesJudge
from ecab.schema import Judgement, Task, Trajectory

LLM = "llm"


@dataclass
class JudgeContext:
    """What a judge factory gets: its name (verdicts.<name>.jsonl.gz), the user's own keys, the whole section."""

    name: str
    options: dict[str, Any] = field(default_factory=dict)
    config: Any = None


# A factory returns a Judge, or a context manager yielding one (a judge that holds a cache or a server).
JudgeFactory = Callable[[JudgeContext], Any]

JUDGES: Registry[JudgeFactory] = Registry("judge", "judge.kind")


def register_judge(name: str, factory: JudgeFactory | None = None, *, replace: bool = False):
    """Register a judge factory under `name` (then `judge.kind=<name>` selects it); usable as a decorator."""
    if factory is None:
        return lambda f: JUDGES.register(name, f, replace=replace)
    return JUDGES.register(name, factory, replace=replace)


def _section(judge_cfg: Any, key: str) -> Any:
    if isinstance(judge_cfg, dict):
        return judge_cfg.get(key)
    return getattr(judge_cfg, key, None)


def _kind(judge_cfg: Any) -> str:
    """judge.kind, or the judge's name for the built-in judges (judge=rules, judge=llm name no kind)."""
    return str(_section(judge_cfg, "kind") or _section(judge_cfg, "name"))


def judge_factory(judge_cfg: Any) -> JudgeFactory:
    return JUDGES.resolve(_kind(judge_cfg), _section(judge_cfg, "target"))


def check_judge_config(judge_cfg: Any) -> None:
    """Fail before any work starts: unknown judge, bad judge keys, or a missing API key for the judge."""
    judge_factory(judge_cfg)
    if _kind(judge_cfg) != LLM:
        return
    from ecab.judge.llm import judge_settings
    from ecab.llm.keys import resolve_api_key
    resolve_api_key(judge_settings(judge_cfg).model,
                    offline="judge offline with judge=rules or judge=llm judge.model=sim")


def _review_checker(judge_cfg: Any) -> ReviewChecker:
    threshold = _section(judge_cfg, "review_threshold")
    return ReviewChecker(threshold=threshold) if threshold is not None else ReviewChecker()


def _rules(context: JudgeContext) -> Judge:
    return RulesJudge(review_checker=_review_checker(context.config))


@contextlib.contextmanager
def _llm(context: JudgeContext) -> Iterator[Judge]:
    """judge=llm opens its reply cache and, for judge.model=sim (no base_url), serves the simulator with the
    judge's reply policy; both are closed after the pass."""
    check_judge_config(context.config)
    from ecab.judge.llm import LLMJudge, judge_settings, open_cache
    from ecab.judge.sim_policy import JudgePolicy
    from ecab.sim import serve_if_simulated
    settings = judge_settings(context.config)
    model, simulator = serve_if_simulated(settings.model, [JudgePolicy])
    settings = settings.with_model(model)
    cache = open_cache(settings)
    try:
        yield LLMJudge(settings, cache=cache, review_checker=_review_checker(context.config))
    finally:
        if cache is not None:
            cache.close()
        if simulator is not None:
            simulator.stop()


JUDGES.register(RULES, _rules)
JUDGES.register(LLM, _llm)


@contextlib.contextmanager
def configured_judge(judge_cfg: Any) -> Iterator[Judge]:
    """The judge of the `judge` config group for one judging pass, built by its factory; a factory's context
    manager is entered for the pass and left after it."""
    name = str(_section(judge_cfg, "name") or _kind(judge_cfg))
    options = _section(judge_cfg, "options") or {}
    made = judge_factory(judge_cfg)(JudgeContext(name=name, options=dict(options), config=judge_cfg))
    if hasattr(made, "__enter__") and not hasattr(made, "judge_episode"):
        with made as judge:
            yield complete_judge(judge, name)
    else:
        yield complete_judge(made, name)


def complete_judge(judge: Any, name: str) -> Judge:
    """A user's judge needs only `judge_episode`; the rest of the protocol gets plain defaults."""
    if not callable(getattr(judge, "judge_episode", None)):
        raise ConfigError(f"the judge factory for {name!r} returned {type(judge).__name__}: expected an object "
                          f"with async judge_episode(task, trajectory, catalog)")
    if isinstance(judge, Judge):
        return judge
    return UserJudge(judge, name)


class UserJudge:
    """A user's judge, completed: its verdicts may be a Judgement or a list of Verdicts (the outcome rule is
    then applied as for every judge: ecab.judge.episode.make_judgement)."""

    def __init__(self, judge: Any, name: str):
        self.inner, self.name = judge, str(getattr(judge, "name", None) or name)

    @property
    def model_name(self) -> str:
        return str(getattr(self.inner, "model_name", None) or self.name)

    async def judge_episode(self, task: Task, trajectory: Trajectory, catalog) -> Judgement:
        try:
            got = await self.inner.judge_episode(task, trajectory, catalog)
        except Exception as exc:  # noqa: BLE001 - a user's judge failing is named, not a traceback
            from ecab.core.plugins import describe_exception
            raise EndpointRefused(f"the judge {self.name!r} raised {describe_exception(exc)} on episode "
                                  f"{trajectory.id}; re-judge with python -m ecab.judge <run folder>") from None
        if isinstance(got, Judgement):
            got.judge = self.name
            return got
        return make_judgement(task, trajectory, list(got), judge_name=self.name)

    def describe(self) -> dict[str, Any]:
        describe = getattr(self.inner, "describe", None)
        return dict(describe()) if callable(describe) else {"name": self.name, "kind": type(self.inner).__name__}

    async def aclose(self) -> None:
        close = getattr(self.inner, "aclose", None)
        if close is not None:
            await close()


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

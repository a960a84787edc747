"""A run's episodes as the report shows them: one small row each for the episode list (sorted and filtered in
the browser), and one detail record each for the episode page (timeline, verdicts, products).

Outcomes come from reduce's join (`ecab.reduce.episodes.join_episodes`), so an episode the list calls
correct is one the summary counts as correct, and a runtime error is one the summary leaves out.
"""
from __future__ import annotations

from typing import Any, Sequence

from ecab.core.unit import unit_key
from ecab.reduce.episodes import Episode, join_episodes, rubric_result
from ecab.reduce.outcome import Outcome, is_excluded, outcome_of, pair_by_unit, recommend_index
from ecab.reduce.usage import episode_model, episode_usage
from ecab.schema import Judgement, Task, Trajectory
from ecab.view.timeline import build_timeline, where_learned

# The episode list's columns, in the order each row stores them (the page reads this header).
ROW_COLUMNS = ("task", "trial", "model", "intent", "category", "outcome", "exact", "termination", "calls", "asks",
               "profile_reads", "failed", "rubrics", "failed_sources", "failed_types", "tokens", "cost", "wall_s",
               "recommended")
OUTCOMES = ("correct", "wrong", "unscored", "runtime_error", "pending")


def outcome_label(e: Episode) -> str:
    if e.outcome.excluded:
        return "runtime_error"
    if e.judgement is None:
        return "pending"      # a run in progress: its judge stage has not run yet
    return {True: "correct", False: "wrong", None: "unscored"}[e.outcome.correct]


def episode_row(e: Episode, models: dict[str, str] | None = None, *, cost_unknown: bool = False) -> list[Any]:
    """The episode list's row. `models`: {config name: label} (the run's model as its name shows it,
    reduce/model_label.py); `cost_unknown`: the run had no prices for its agent, so its cost is None, not $0."""
    failed = [r for r in e.rubrics if r.satisfied is False]
    usage = episode_usage(e.traj)
    tokens = int((usage["input_tokens"] or 0) + (usage["output_tokens"] or 0))
    cost = None if cost_unknown or usage["cost_usd"] is None else round(usage["cost_usd"], 6)
    model = episode_model(e)
    return [e.task.id, int(e.traj.unit.get("trial", 0) or 0), (models or {}).get(model, model), e.task.intent_category,
            e.task.target_product.main_category or "(none)", outcome_label(e), bool(e.exact), e.traj.termination,
            e.traj.total_tool_calls, e.traj.ask_user_calls, e.traj.get_profile_calls, len(failed), len(e.rubrics),
            sorted({r.source for r in failed}), sorted({r.type for r in failed}), tokens,
            cost, round(e.traj.wall_s, 3), e.traj.recommended_id]


def _verdicts(e: Episode, steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each rubric of the task with its verdict (None when the episode was not judged) and where its
    requirement could have been learned."""
    verdicts = {v.rubric_id: v for v in (e.judgement.verdicts if e.judgement is not None else [])}
    out = []
    for rubric in e.task.rubrics:
        v = verdicts.get(rubric.id)
        row: dict[str, Any] = {"id": rubric.id, "source": rubric.info_source, "type": rubric.type,
                               "field": rubric.field, "expected": rubric.expected_value,
                               "description": rubric.description,
                               "learn": where_learned(e.task, rubric.info_source, rubric.id, steps)}
        if v is not None:
            row.update({"satisfied": v.satisfied, "method": v.method, "evidence": v.evidence,
                        "reasoning": v.reasoning, "score": v.score})
        out.append({k: val for k, val in row.items() if val not in (None, "") or k in ("satisfied", "expected")})
    return out


def _judgement_view(judgement: Judgement | None) -> dict[str, Any] | None:
    if judgement is None:
        return None
    return {"judge": judgement.judge, "exact": judgement.exact_product_match,
            "all_satisfied": judgement.all_satisfied, "correct": judgement.correct,
            "runtime_error": judgement.runtime_error, "error": judgement.error_message}


def episode_detail(e: Episode, system_prompts: dict[str, int], *, cost_unknown: bool = False) -> dict[str, Any]:
    """The episode page's data. The system prompt (one text for a whole run, usually) is stored once per
    run: `system_prompts` maps each distinct text to its number. `cost_unknown`: the run had no prices for its
    agent, so the usage's cost is None (a run recorded before costs could be None stored $0)."""
    timeline = build_timeline(e.traj, e.task)
    system = timeline.pop("system")
    traj = e.traj
    return {
        "unit": traj.unit,
        "system": system_prompts.setdefault(system, len(system_prompts)) if system is not None else None,
        **{k: v for k, v in timeline.items() if v},
        "recommended": traj.recommended_id,
        "predicted": traj.predicted_product_id,
        "reasoning": traj.reasoning,
        "error": traj.error,
        "usage": {**traj.usage, "cost_usd": None} if cost_unknown and "cost_usd" in traj.usage else traj.usage,
        "attempts": traj.attempts,
        "judgement": _judgement_view(e.judgement),
        "verdicts": _verdicts(e, timeline["steps"]),
    }


def run_episodes(tasks: dict[str, Task], trajectories: Sequence[Trajectory],
                 judgements: Sequence[Judgement]) -> list[Episode]:
    """The run's episodes in unit order, joined as reduce joins them."""
    return join_episodes(tasks, trajectories, judgements)


def partial_episodes(tasks: dict[str, Task], trajectories: Sequence[Trajectory],
                     judgements: Sequence[Judgement]) -> list[Episode]:
    """A run in progress: every recorded episode in unit order, judged or not yet (reduce's join insists on a
    judgement for each, which a run only has at its end). A record of a task not in the task set is left out."""
    episodes = []
    for traj, judgement in pair_by_unit(trajectories, judgements):
        task = tasks.get(unit_key(traj.unit, traj.id)[0])
        if task is None:
            continue
        if judgement is not None or is_excluded(traj, None):
            outcome = outcome_of(traj, judgement)
        else:
            outcome = Outcome(traj.termination, False, None, recommend_index(traj))
        verdicts = judgement.verdicts if judgement is not None and not outcome.excluded else []
        episodes.append(Episode(task, traj, judgement, outcome, tuple(rubric_result(task, v) for v in verdicts)))
    return episodes

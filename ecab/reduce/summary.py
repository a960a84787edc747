"""The run summary: every metric of the original `summary.json` (docs/original-harness.md §4.4), plus ecab's analyses.

The original keys keep their names and formulas, but the denominators are made consistent (docs/original-harness.md §8
item 19); `DENOMINATORS` below is written into the summary so a reader knows what each rate divides by.
This module puts the summary together; each analysis lives with its concept: the outcome rules in outcome.py,
the joined episode in episodes.py, groupings in groups.py, the call budget in budget.py, clarification and
interaction in interaction.py, tokens, cost, latency and tool errors in usage.py, confidence intervals in
variance.py and the judge audit in audit.py.
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Iterable, Sequence

from ecab.reduce.audit import judge_audit
from ecab.reduce.budget import budget_section
from ecab.reduce.episodes import Episode, evaluated_episodes, evaluated_rubrics, join_episodes, scored_episodes
from ecab.reduce.groups import (by_rubric_type, by_source, failure_by_source, group_by, implicit_bucket,
                                rubric_tally, voucher_group_stats, voucher_kind)
from ecab.reduce.interaction import (accuracy_given, clarification_section, interaction_section, run_warnings,
                                     review_evidence_failures, slot_count)
from ecab.reduce.rates import median, rate
from ecab.reduce.usage import latency_section, tokens_and_cost, tool_errors_section
from ecab.reduce.variance import variance_section
from ecab.schema import TERMINATIONS, Judgement, Task, Trajectory

TOP_FAILURE_REASONS = 20
RUNTIME_ERROR_EXAMPLES = 20

DENOMINATORS = {
    "runtime_errors": "episodes with termination infra_error, or whose judge could not run (judgement "
                      "runtime_error); left out of every rate below except runtime_error_rate, which divides "
                      "by all episodes (total_samples). agent_error episodes are evaluated and wrong.",
    "evaluated_samples": "all episodes minus runtime errors; the denominator of every per-episode rate and "
                         "mean: prediction_finished_rate, valid_finish_rate, avg/median_tool_calls, "
                         "avg/median_ask_user_calls, profile_called_rate, budget.cap_reached_rate, "
                         "clarification, interaction, latency and tool_errors (the original mixed all rows "
                         "and valid rows).",
    "accuracy": "scored_samples = evaluated episodes whose correctness is decided (an episode with no failed "
                "rubric but an unscored one, and no exact match, is unscored); used by overall_accuracy, "
                "exact_match_rate, non_exact_but_correct_rate, every by_* accuracy and "
                "budget.accuracy_if_cut_at.",
    "rubrics": "scored verdicts of evaluated episodes; verdicts with satisfied=null are counted in "
               "unscored_rubrics only.",
    "tokens_and_cost": "all episodes, runtime errors included: their calls were paid.",
    "judge_only_correct": "kept for compatibility; it counts all_satisfied episodes whether or not the target "
                          "matched, the same number as all_satisfied_count.",
}


# ---------------------------------------------------------------------------------------------------------
# The original's keys
# ---------------------------------------------------------------------------------------------------------

def original_keys(episodes: Sequence[Episode], *, model: str, judge_model: str) -> dict[str, Any]:
    total = len(episodes)
    evaluated, base = evaluated_episodes(episodes), scored_episodes(episodes)
    n_valid, n_scored = len(evaluated), len(base)
    errors = [e for e in episodes if not e.evaluated]
    correct = sum(e.correct for e in base)
    exact = sum(e.exact for e in evaluated)
    non_exact = sum(not e.exact and e.all_satisfied for e in evaluated)
    rubrics = rubric_tally(evaluated_rubrics(episodes))
    finished = sum(e.traj.finished for e in evaluated)
    tool_calls = [e.traj.total_tool_calls for e in evaluated]
    ask_calls = [e.traj.ask_user_calls for e in evaluated]
    profile_called = sum(e.traj.get_profile_calls > 0 for e in evaluated)
    return {
        "overall_accuracy": rate(correct, n_scored),
        "overall_rubric_satisfaction": rubrics["satisfaction"],
        "total_samples": total,
        "evaluated_samples": n_valid,
        "runtime_error_count": len(errors),
        "runtime_error_rate": rate(len(errors), total),
        "total_correct": correct,
        "exact_match_correct": exact,
        "exact_match_rate": rate(exact, n_scored),
        "non_exact_but_correct": non_exact,
        "non_exact_but_correct_rate": rate(non_exact, n_scored),
        "judge_only_correct": sum(e.all_satisfied for e in evaluated),
        "judge_misjudged_count": sum(e.exact and e.judgement.all_satisfied is False for e in evaluated),
        "total_rubrics": rubrics["count"],
        "satisfied_rubrics": rubrics["satisfied"],
        "prediction_finished_count": finished,
        "prediction_unfinished_count": n_valid - finished,
        "prediction_finished_rate": rate(finished, n_valid),
        "avg_tool_calls": rate(sum(tool_calls), n_valid),
        "median_tool_calls": median(tool_calls),
        "by_rubric_type": by_rubric_type(episodes),
        "top_failure_reasons": top_failure_reasons(episodes),
        "runtime_error_examples": [runtime_error_example(e) for e in errors[:RUNTIME_ERROR_EXAMPLES]],
        "by_intent": group_by(episodes, lambda e: e.task.intent_category),
        "by_source": by_source(episodes),
        "persona_utilization": {"profile_called_count": profile_called,
                                "profile_called_rate": rate(profile_called, max(n_valid, 1))},
        "clarification_efficiency": {
            "total_ask_user_calls": sum(ask_calls),
            "avg_ask_user_calls": rate(sum(ask_calls), max(n_valid, 1)),
            "median_ask_user_calls": median(ask_calls),
            "total_clarification_slots": sum(slot_count(e) for e in evaluated),
        },
        "model": model,
        "judge_model": judge_model,
    }


def top_failure_reasons(episodes: Sequence[Episode]) -> dict[str, int]:
    reasons = Counter(r.reason for r in evaluated_rubrics(episodes) if r.satisfied is False)
    return dict(reasons.most_common(TOP_FAILURE_REASONS))


def runtime_error_example(e: Episode) -> dict[str, Any]:
    message = e.traj.error or (e.judgement.error_message if e.judgement else None) or ""
    return {"id": e.task.id, "intent_category": e.task.intent_category, "error_message": message}


# ---------------------------------------------------------------------------------------------------------
# ecab's keys
# ---------------------------------------------------------------------------------------------------------

def terminations(episodes: Sequence[Episode]) -> dict[str, int]:
    counts = Counter(e.traj.termination for e in episodes)
    return {t: counts.get(t, 0) for t in TERMINATIONS}


def trials(episodes: Sequence[Episode]) -> int:
    return max((int(e.traj.unit.get("trial", 0)) + 1 for e in episodes), default=0)


def ecab_keys(episodes: Sequence[Episode]) -> dict[str, Any]:
    evaluated, base = evaluated_episodes(episodes), scored_episodes(episodes)
    rubrics = rubric_tally(evaluated_rubrics(episodes))
    valid_finish = sum(e.traj.termination == "recommended" for e in evaluated)
    return {
        "warnings": run_warnings(episodes),
        "denominators": DENOMINATORS,
        "scored_samples": len(base),
        "unscored_samples": len(evaluated) - len(base),
        "all_satisfied_count": sum(e.all_satisfied for e in evaluated),
        "unscored_rubrics": rubrics["unscored"],
        "valid_finish_count": valid_finish,
        "valid_finish_rate": rate(valid_finish, len(evaluated)),
        "invalid_recommendation_count": sum(e.traj.termination == "invalid_recommendation" for e in evaluated),
        "terminations": terminations(episodes),
        "budget": budget_section(episodes),
        "clarification": clarification_section(episodes),
        "by_main_category": group_by(episodes, lambda e: e.task.target_product.main_category or "(none)"),
        "by_voucher_kind": group_by(episodes, lambda e: voucher_kind(e.task), voucher_group_stats),
        "by_implicit_count": group_by(episodes, lambda e: implicit_bucket(e.task)),
        "by_rubric_count": group_by(episodes, lambda e: f"{len(e.task.rubrics):02d}"),
        "interaction": interaction_section(episodes),
        "review_evidence_failures": review_evidence_failures(episodes),
        "failure_by_source": failure_by_source(episodes),
        "accuracy_given": accuracy_given(episodes),
        "judge_audit": judge_audit(episodes),
        "variance": variance_section(episodes),
        "tokens_and_cost": tokens_and_cost(episodes),
        "latency": latency_section(episodes),
        "tool_errors": tool_errors_section(episodes),
        "trials": trials(episodes),
    }


def judge_scores(episodes: Sequence[Episode]) -> dict[str, dict[str, Any]]:
    """Scores a judge gave beside its verdicts (`Judgement.extras["scores"]`: {name: number}, docs/extending.md),
    each summarised over the judged episodes that have it: {name: {"mean", "n"}}."""
    values: dict[str, list[float]] = {}
    for e in episodes:
        given = e.judgement.extras.get("scores") if e.judgement is not None else None
        for name, value in (given.items() if isinstance(given, dict) else ()):
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                values.setdefault(str(name), []).append(float(value))
    return {name: {"mean": round(sum(v) / len(v), 4), "n": len(v)} for name, v in sorted(values.items())}


def summarize(tasks: dict[str, Task], trajectories: Iterable[Trajectory], judgements: Iterable[Judgement], *,
              model: str, judge_model: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The summary.json object: the original's keys first, then ecab's, then `extra` (run metadata)."""
    episodes = join_episodes(tasks, trajectories, judgements)
    summary = original_keys(episodes, model=model, judge_model=judge_model)
    summary.update(ecab_keys(episodes))
    scores = judge_scores(episodes)
    if scores:                  # only a judge that gives scores of its own adds the key
        summary["judge_scores"] = scores
    for key, value in (extra or {}).items():
        if key in summary:
            raise ValueError(f"extra key {key!r} would overwrite the metric of the same name")
        summary[key] = value
    return summary

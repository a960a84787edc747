"""The reduce stage on a small hand-computed run (seven episodes over four tasks).

E1 T1 exact target, every rubric satisfied                     -> correct (exact)
E2 T2 other product, every rubric satisfied                    -> correct (non-exact), recommended at call 80
E3 T3 exact target, budget_match failed, one rubric unscored   -> correct (exact), judge_misjudged
E4 T4 infra_error                                              -> runtime error, excluded
E5 T2 budget_exhausted, no prediction                          -> wrong
E6 T4 invalid_recommendation                                   -> wrong
E7 T3 trial 1, agent_error                                     -> evaluated and wrong
"""
from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from ecab.reduce import reduce_run, summarize, truncated_accuracy, write_summary
from ecab.reduce.__main__ import main as cli_main
from ecab.reduce.budget import correct_within, cut_points_for
from ecab.reduce.episodes import join_episodes
from ecab.reduce.interaction import review_failure_kind, search_depth
from ecab.reduce.outcome import Outcome
from ecab.reduce.rates import percentile, spread
from ecab.reduce.report import render_markdown
from ecab.runs import RunFolder
from ecab.schema import (ClarificationScript, ClarificationSlot, FormatError, Judgement, Product, Rubric, Step,
                         Task, Trajectory, Verdict, Voucher, write_jsonl)

REPO = Path(__file__).resolve().parents[2]
NO_PRODUCT = "No valid product recommended"
BUDGET_REASON = "final price 55.00 exceeds budget 50.00"


# ---------------------------------------------------------------------------------------------------------
# Builders
# ---------------------------------------------------------------------------------------------------------

def rubric(rid: str, rtype: str, source: str = "query") -> Rubric:
    field, value = {
        "entity_match": ("title", "laptop"),
        "attribute_match": ("details.Color", "Black"),
        "numeric_range": ("average_rating", {"min": 4.0}),
        "negative_attribute": ("details.Material", ["Plastic"]),
        "budget_match": ("price", 50.0),
        "review_opinion": ("reviews", "battery lasts all day"),
    }[rtype]
    return Rubric(id=rid, type=rtype, field=field, expected_value=value, description=rid, info_source=source)


def make_task(tid: str, intent: str, category: str, rubrics: list[Rubric], slots=(), voucher=None,
              implicit=()) -> Task:
    script = ClarificationScript(clarification_slots=[
        ClarificationSlot(slot_id=s, linked_rubric_ids=[r], trigger_keywords=["k"], user_response="a")
        for s, r in slots])
    return Task(id=tid, intent_category=intent, user_query=f"query {tid}",
                target_product=Product(product_id=f"P-{tid}", title="t", main_category=category),
                rubrics=rubrics, clarification_script=script, voucher=voucher, implicit_rubric_ids=list(implicit),
                difficulty_metrics={"implicit_count": len(implicit)})


def make_tasks() -> dict[str, Task]:
    voucher = Voucher(voucher_type="shop", threshold=30.0, discount_type="fixed", face_value=10.0, budget=50.0,
                      total_original_price=60.0, price_after_voucher=50.0)
    tasks = [
        make_task("T1", "product_search", "Computers",
                  [rubric("r1", "entity_match"), rubric("r2", "numeric_range", "persona"),
                   rubric("r3", "attribute_match", "clarification"),
                   rubric("r4", "negative_attribute", "clarification")],
                  slots=[("s1", "r3"), ("s2", "r4")]),
        make_task("T2", "feature_combination", "Computers",
                  [rubric("r1", "entity_match"), rubric("r2", "attribute_match"),
                   rubric("r3", "attribute_match", "clarification")],
                  slots=[("s1", "r3")], implicit=["r2", "r3"]),
        make_task("T3", "coupon_budget", "Amazon Home",
                  [rubric("r1", "entity_match"), rubric("r2", "budget_match"),
                   rubric("r3", "attribute_match", "persona")], voucher=voucher),
        make_task("T4", "review_driven", "All Beauty", [rubric("r1", "entity_match"), rubric("r2", "review_opinion")]),
    ]
    return {t.id: t for t in tasks}


def step(call: int, tool: str, *, revealed=None, error=False, **kw) -> Step:
    return Step(index=call, call_index=call, tool=tool, revealed_slot=revealed, is_error=error,
                error="tool failed" if error else None, **kw)


def make_traj(tid: str, termination: str, *, calls: int, predicted=None, recommended=None, rci=None, trial=0,
              steps=(), ask=0, profile=0, revealed=(), usage=None, error=None, wall=1.0, budget=100) -> Trajectory:
    return Trajectory(id=tid, intent_category="x", user_query="q", model="m",
                      unit={"task_id": tid, "model": "m", "budget": budget, "seed": 0, "trial": trial},
                      termination=termination, predicted_product_id=predicted,
                      recommended_id=recommended or predicted, recommend_call_index=rci,
                      finished=termination in ("recommended", "invalid_recommendation", "no_tool_call"),
                      total_tool_calls=calls, ask_user_calls=ask, get_profile_calls=profile, steps=list(steps),
                      revealed_slots=list(revealed), usage=usage or {}, error=error, wall_s=wall)


def make_judgement(traj: Trajectory, task: Task, verdicts: list[tuple], *, runtime_error=False) -> Judgement:
    """verdicts: (rubric_id, satisfied, method, reason); all_satisfied/correct follow ecab.judge's rule."""
    exact = traj.predicted_product_id == task.target_product.product_id
    sats = [v[1] for v in verdicts]
    all_sat = False if not sats or any(s is False for s in sats) else (None if None in sats else True)
    return Judgement(
        id=task.id, unit=dict(traj.unit), judge="rules", predicted_product_id=traj.predicted_product_id,
        target_product_id=task.target_product.product_id, exact_product_match=exact, all_satisfied=all_sat,
        correct=True if exact else all_sat, runtime_error=runtime_error,
        verdicts=[Verdict(rubric_id=rid, type=task.rubric(rid).type, info_source=task.rubric(rid).info_source,
                          satisfied=sat, method=method, reasoning=reason) for rid, sat, method, reason in verdicts])


def no_product(task: Task) -> list[tuple]:
    return [(r.id, False, "no_product", NO_PRODUCT) for r in task.rubrics]


def make_run(budget: int = 100):
    tasks = make_tasks()
    t1, t2, t3, t4 = (tasks[k] for k in ("T1", "T2", "T3", "T4"))
    e1 = make_traj("T1", "recommended", calls=30, predicted="P-T1", rci=30, ask=3, profile=1, revealed=["s1", "s2"],
                   wall=10.0, budget=budget,
                   usage={"input_tokens": 1000, "output_tokens": 200, "reasoning_tokens": 50, "cost_usd": 0.01},
                   steps=[step(1, "get_user_profile"), step(2, "ask_user", revealed="s1"), step(3, "ask_user"),
                          step(4, "ask_user", revealed="s2"), step(30, "recommend_product")])
    e2 = make_traj("T2", "recommended", calls=80, predicted="P-other", rci=80, ask=1, profile=1, revealed=["s1"],
                   wall=20.0, budget=budget,
                   steps=[step(1, "get_user_profile", input_tokens=300, output_tokens=30),
                          step(2, "ask_user", revealed="s1", input_tokens=300, output_tokens=30),
                          step(3, "search_products", input_tokens=300, output_tokens=30)])
    e3 = make_traj("T3", "recommended", calls=10, predicted="P-T3", rci=10, wall=30.0, budget=budget,
                   steps=[step(1, "search_products")])
    e4 = make_traj("T4", "infra_error", calls=12, error="Connection reset by peer", wall=999.0, budget=budget,
                   usage={"input_tokens": 500, "output_tokens": 50, "reasoning_tokens": 0, "cost_usd": 0.005},
                   steps=[step(1, "ask_user"), step(2, "search_products", error=True)])
    e5 = make_traj("T2", "budget_exhausted", calls=100, ask=2, profile=1, wall=40.0, budget=budget, trial=0,
                   steps=[step(1, "ask_user"), step(2, "ask_user", error=True), step(3, "get_user_profile")])
    e6 = make_traj("T4", "invalid_recommendation", calls=5, recommended="BAD-ID", rci=5, wall=50.0, budget=budget,
                   steps=[step(1, "get_product_details", error=True)])
    # E5 and E6 share their task with E2 and E4: another seed makes them other units.
    e5.unit["seed"] = e6.unit["seed"] = 1
    e7 = make_traj("T3", "agent_error", calls=7, trial=1, error="malformed tool call", wall=60.0, budget=budget)
    trajectories = [e1, e2, e3, e4, e5, e6, e7]
    judgements = [
        make_judgement(e1, t1, [(r.id, True, "rule", "ok") for r in t1.rubrics]),
        make_judgement(e2, t2, [("r1", True, "rule", "ok"), ("r2", True, "llm", "ok"), ("r3", True, "rule", "ok")]),
        make_judgement(e3, t3, [("r1", True, "rule", "ok"), ("r2", False, "rule", BUDGET_REASON),
                                ("r3", None, "llm", "unparseable judge output")]),
        # The judge stage writes a runtime_error judgement for an infra error; its verdicts must be ignored.
        make_judgement(e4, t4, [("r1", True, "rule", "ok"), ("r2", False, "rule", "ignored")], runtime_error=True),
        make_judgement(e5, t2, no_product(t2)),
        make_judgement(e6, t4, no_product(t4)),
        make_judgement(e7, t3, no_product(t3)),
    ]
    return tasks, trajectories, judgements


@pytest.fixture(scope="module")
def run():
    return make_run()


@pytest.fixture(scope="module")
def summary(run):
    tasks, trajectories, judgements = run
    return summarize(tasks, trajectories, judgements, model="m", judge_model="rules")


# ---------------------------------------------------------------------------------------------------------
# The original's keys, by hand
# ---------------------------------------------------------------------------------------------------------

def test_original_headline_keys(summary):
    expected = {
        "overall_accuracy": 0.5,                    # E1 E2 E3 of the 6 evaluated
        "overall_rubric_satisfaction": 0.4706,      # 8 of 17 scored verdicts
        "total_samples": 7,
        "evaluated_samples": 6,
        "runtime_error_count": 1,
        "runtime_error_rate": 0.1429,
        "total_correct": 3,
        "exact_match_correct": 2,
        "exact_match_rate": 0.3333,
        "non_exact_but_correct": 1,
        "non_exact_but_correct_rate": 0.1667,
        "judge_only_correct": 2,                    # E1, E2 (all_satisfied)
        "judge_misjudged_count": 1,                 # E3
        "total_rubrics": 17,
        "satisfied_rubrics": 8,
        "prediction_finished_count": 4,             # E1 E2 E3 E6 (E4 excluded)
        "prediction_unfinished_count": 2,
        "prediction_finished_rate": 0.6667,
        "avg_tool_calls": 38.6667,                  # (30+80+10+100+5+7)/6
        "median_tool_calls": 20.0,                  # median of 5 7 10 30 80 100
        "model": "m",
        "judge_model": "rules",
    }
    assert {k: summary[k] for k in expected} == expected


def test_original_nested_keys(summary):
    assert summary["persona_utilization"] == {"profile_called_count": 3, "profile_called_rate": 0.5}
    assert summary["clarification_efficiency"] == {
        "total_ask_user_calls": 6, "avg_ask_user_calls": 1.0, "median_ask_user_calls": 0.5,
        "total_clarification_slots": 4}
    assert summary["top_failure_reasons"] == {NO_PRODUCT: 8, BUDGET_REASON: 1}
    assert summary["runtime_error_examples"] == [
        {"id": "T4", "intent_category": "review_driven", "error_message": "Connection reset by peer"}]


def test_by_source_and_type(summary):
    counts = {k: (v["count"], v["satisfied"], v["satisfaction"]) for k, v in summary["by_source"].items()}
    assert counts == {"query": (11, 4, 0.3636), "persona": (2, 1, 0.5), "clarification": (4, 3, 0.75)}
    assert summary["by_source"]["query"]["methods"] == {"rule": 4, "embedding": 0, "llm": 1, "no_product": 6}
    assert summary["by_source"]["persona"]["methods"] == {"rule": 1, "embedding": 0, "llm": 1, "no_product": 1}
    assert summary["by_source"]["persona"]["unscored"] == 1
    by_type = {k: (v["count"], v["satisfied"]) for k, v in summary["by_rubric_type"].items()}
    assert by_type == {"attribute_match": (6, 3), "budget_match": (2, 0), "entity_match": (6, 3),
                       "negative_attribute": (1, 1), "numeric_range": (1, 1), "review_opinion": (1, 0)}
    assert list(summary["by_rubric_type"]) == sorted(by_type)
    assert summary["unscored_rubrics"] == 1


def test_by_intent(summary):
    keys = ("accuracy", "rubric_satisfaction", "count", "correct", "exact_match_correct", "non_exact_but_correct",
            "judge_only_correct", "evaluated_samples", "runtime_error_count")
    rows = {intent: tuple(g[k] for k in keys) for intent, g in summary["by_intent"].items()}
    assert rows == {
        "coupon_budget": (0.5, 0.2, 2, 1, 1, 0, 0, 2, 0),
        "feature_combination": (0.5, 0.5, 2, 1, 0, 1, 1, 2, 0),
        "product_search": (1.0, 1.0, 1, 1, 1, 0, 1, 1, 0),
        "review_driven": (0.0, 0.0, 2, 0, 0, 0, 0, 1, 1),
    }


# ---------------------------------------------------------------------------------------------------------
# ecab's analyses
# ---------------------------------------------------------------------------------------------------------

def test_terminations_and_finish(summary):
    assert summary["terminations"] == {"recommended": 3, "invalid_recommendation": 1, "budget_exhausted": 1,
                                       "no_tool_call": 0, "agent_error": 1, "infra_error": 1}
    assert summary["valid_finish_count"] == 3
    assert summary["valid_finish_rate"] == 0.5
    assert summary["invalid_recommendation_count"] == 1
    assert summary["all_satisfied_count"] == summary["judge_only_correct"] == 2
    assert (summary["scored_samples"], summary["unscored_samples"]) == (6, 0)
    assert set(summary["denominators"]) >= {"accuracy", "evaluated_samples", "rubrics", "runtime_errors"}


def test_budget_truncation(summary, run):
    assert summary["budget"] == {
        "budget": 100, "budgets": [100], "cap_reached_count": 1, "cap_reached_rate": 0.1667,
        "used_every_call_count": 1, "used_every_call_rate": 0.1667,        # E5, cut off at 100 calls
        # correct episodes recommend at calls 10 (E3), 30 (E1), 80 (E2); 6 scored episodes
        "cut_points": [25, 50, 75, 100],
        "accuracy_if_cut_at": {"25": 0.1667, "50": 0.3333, "75": 0.3333, "100": 0.5},
        "accuracy_added_by_last_calls": {"low": 75, "high": 100, "value": 0.1667},
    }
    assert summary["budget"]["accuracy_if_cut_at"]["100"] == summary["overall_accuracy"]
    tasks, trajectories, judgements = run
    exact = truncated_accuracy(trajectories, judgements, (10, 29, 30, 80))
    assert exact == pytest.approx({10: 1 / 6, 29: 1 / 6, 30: 2 / 6, 80: 3 / 6})


def test_cut_points_are_the_quarters_of_the_runs_budget():
    tasks, trajectories, judgements = make_run(budget=50)
    s = summarize(tasks, trajectories, judgements, model="m", judge_model="rules")
    budget = s["budget"]
    assert budget["budget"] == 50 and budget["cut_points"] == [13, 25, 38, 50]
    # E2 recommended with its 50th call or later: it used every call without being cut off (E5 was)
    assert (budget["used_every_call_count"], budget["cap_reached_count"]) == (2, 1)
    # correct episodes recommend at calls 10, 30 and 80 (the last beyond this budget); 6 scored episodes
    assert budget["accuracy_if_cut_at"] == {"13": 0.1667, "25": 0.1667, "38": 0.3333, "50": 0.3333}
    assert budget["accuracy_added_by_last_calls"] == {"low": 38, "high": 50, "value": 0.0}
    assert "- Accuracy added by calls 39-50: 0.0%" in render_markdown(s)


@pytest.mark.parametrize("budget, cuts", [(10, [3, 5, 8, 10]), (2, [1, 2]), (1, [1]), (7, [2, 4, 5, 7]),
                                          (None, [])])
def test_cut_points_for_any_budget(budget, cuts):
    assert cut_points_for(budget) == cuts


def test_a_budget_of_10_gets_a_curve_and_its_last_quarter():
    tasks, trajectories, judgements = make_run(budget=10)
    budget = summarize(tasks, trajectories, judgements, model="m", judge_model="rules")["budget"]
    assert budget["accuracy_if_cut_at"] == {"3": 0.0, "5": 0.0, "8": 0.0, "10": 0.1667}   # E3 recommends at 10
    assert budget["accuracy_added_by_last_calls"] == {"low": 8, "high": 10, "value": 0.1667}


def test_correct_within_needs_the_recommendation_inside_the_cut():
    assert correct_within(Outcome("recommended", False, True, 25), 25)
    assert not correct_within(Outcome("recommended", False, True, 26), 25)
    assert not correct_within(Outcome("recommended", False, False, 3), 25)
    assert not correct_within(Outcome("budget_exhausted", False, False, None), 100)


def test_clarification(summary):
    assert summary["clarification"] == {
        "total_clarification_slots": 4,          # T1 2 + T2 1 (E2) + T2 1 (E5)
        "slots_per_task": 0.75,                  # (2 + 1 + 0 + 0) / 4 tasks
        "slots_revealed": 3,
        "slots_revealed_per_episode": 0.5,       # 3 over 6 evaluated
        "reveal_rate": 0.75,                     # 3 of 4 available
        "questions_asked": 5,                    # E1 3, E2 1, E5 1 (the erroring question is not counted)
        "questions_revealed_nothing": 2,         # E1 q2, E5 q1; E4's is excluded
    }


def test_groupings(summary):
    main = {k: (g["count"], g["evaluated_samples"], g["accuracy"], g["rubric_satisfaction"])
            for k, g in summary["by_main_category"].items()}
    assert main == {"All Beauty": (2, 1, 0.0, 0.0), "Amazon Home": (2, 2, 0.5, 0.2),
                    "Computers": (3, 3, 0.6667, 0.7)}
    fixed = summary["by_voucher_kind"]["fixed"]
    assert list(summary["by_voucher_kind"]) == ["fixed"]
    assert (fixed["count"], fixed["accuracy"], fixed["rubric_satisfaction"]) == (2, 0.5, 0.2)
    assert fixed["budget_match"] == {"count": 2, "satisfied": 0, "satisfaction": 0.0}
    implicit = {k: (g["count"], g["accuracy"]) for k, g in summary["by_implicit_count"].items()}
    assert implicit == {"0-1": (5, 0.5), "2": (2, 0.5)}
    assert summary["review_evidence_failures"] == {"total": 1, "no_valid_recommendation": 1,
                                                   "retrieved_recommended_reviews": 0,
                                                   "searched_no_matching_text": 0, "never_searched": 0}


def test_interaction_tokens_latency_errors_trials(summary):
    inter = summary["interaction"]
    assert inter["calls_per_tool_mean"] == {"ask_user": 1.0, "get_product_details": 0.1667,
                                            "get_user_profile": 0.5, "recommend_product": 0.1667,
                                            "search_products": 0.3333}
    assert inter["ask_user_episode_rate"] == 0.5
    assert inter["first_ask_user_position_mean"] == round((1 / 29 + 1 / 79 + 0) / 3, 4)
    tokens = summary["tokens_and_cost"]
    assert tokens["episodes"] == 7
    # E1 usage + E2 per-step tokens (no usage recorded) + E4 usage: runtime errors were paid too.
    assert tokens["total"] == {"input_tokens": 2400, "output_tokens": 340, "reasoning_tokens": 50,
                               "cost_usd": 0.015}
    assert tokens["mean_per_episode"]["input_tokens"] == round(2400 / 7, 4)
    assert summary["latency"]["episode_wall_s"] == {"mean": 35.0, "p50": 35.0, "p95": 57.5}
    assert summary["tool_errors"] == {"total": 2, "rate": round(2 / 13, 4),
                                      "by_tool": {"ask_user": 1, "get_product_details": 1}}
    assert summary["trials"] == 2


def test_percentiles_and_spread():
    assert percentile([], 0.5) == 0.0
    assert percentile([3.0, 1.0, 2.0], 0.5) == 2.0
    assert percentile([0.0, 10.0], 0.95) == pytest.approx(9.5)
    assert spread([1.0, 2.0, 3.0, 4.0]) == {"mean": 2.5, "p50": 2.5, "p95": 3.85}


def test_review_failure_kind_reads_the_recommended_products_review_searches():
    tasks, trajectories, judgements = make_run()     # a fresh copy: this test edits a trajectory
    e1 = join_episodes(tasks, trajectories[:1], judgements[:1])[0]
    assert review_failure_kind(e1) == "never_searched"
    e1.traj.steps.append(step(5, "get_review_content", arguments={"product_id": "P-T1", "query": "battery"}))
    assert review_failure_kind(e1) == "searched_no_matching_text"
    e1.traj.steps[-1].result_ids = ["P-T1"]
    assert review_failure_kind(e1) == "retrieved_recommended_reviews"


# ---------------------------------------------------------------------------------------------------------
# Denominator edge cases and bad input
# ---------------------------------------------------------------------------------------------------------

def test_unscored_episode_is_left_out_of_accuracy():
    tasks = make_tasks()
    t2 = tasks["T2"]
    good = make_traj("T2", "recommended", calls=5, predicted="P-T2", rci=5)
    vague = make_traj("T2", "recommended", calls=5, predicted="P-x", rci=5, trial=1)
    judgements = [make_judgement(good, t2, [(r.id, True, "rule", "ok") for r in t2.rubrics]),
                  make_judgement(vague, t2, [("r1", True, "rule", ""), ("r2", None, "llm", ""),
                                             ("r3", True, "rule", "")])]
    s = summarize(tasks, [good, vague], judgements, model="m", judge_model="j")
    assert (s["evaluated_samples"], s["scored_samples"], s["unscored_samples"]) == (2, 1, 1)
    assert s["overall_accuracy"] == 1.0
    assert (s["total_rubrics"], s["satisfied_rubrics"], s["unscored_rubrics"]) == (5, 5, 1)


def test_judge_runtime_error_counts_as_runtime_error():
    tasks = make_tasks()
    traj = make_traj("T4", "recommended", calls=3, predicted="P-T4", rci=3)
    judgement = make_judgement(traj, tasks["T4"], [], runtime_error=True)
    judgement.error_message = "judge timed out"
    s = summarize(tasks, [traj], [judgement], model="m", judge_model="j")
    assert (s["runtime_error_count"], s["evaluated_samples"], s["overall_accuracy"]) == (1, 0, 0.0)
    assert s["runtime_error_examples"][0]["error_message"] == "judge timed out"


def test_agent_error_is_wrong_whatever_the_judgement_says():
    tasks = make_tasks()
    traj = make_traj("T1", "agent_error", calls=3, predicted="P-T1", rci=3)
    judgement = make_judgement(traj, tasks["T1"], [(r.id, True, "rule", "ok") for r in tasks["T1"].rubrics])
    s = summarize(tasks, [traj], [judgement], model="m", judge_model="j")
    assert (s["evaluated_samples"], s["total_correct"], s["overall_accuracy"]) == (1, 0, 0.0)


def test_missing_judgement_and_unknown_task_are_named(run):
    tasks, trajectories, judgements = run
    with pytest.raises(ValueError, match="no judgement for task_id=T1"):
        summarize(tasks, trajectories, judgements[1:], model="m", judge_model="j")
    with pytest.raises(ValueError, match="task 'T1' is not in the task set"):
        summarize({k: v for k, v in tasks.items() if k != "T1"}, trajectories, judgements, model="m",
                  judge_model="j")
    with pytest.raises(ValueError, match="overwrite"):
        summarize(tasks, trajectories, judgements, model="m", judge_model="j", extra={"trials": 3})


# ---------------------------------------------------------------------------------------------------------
# summary.md and the run folder
# ---------------------------------------------------------------------------------------------------------

SPEC_HEADINGS = ["# Evaluation Summary", "## Overall", "## By Info Source", "## Persona & Clarification",
                 "## By Intent", "## By Rubric Type", "## Top Failure Reasons", "## Runtime Error Examples"]
ECAB_HEADINGS = ["## Terminations", "## Call budget", "## Clarification", "## By main category",
                 "## By voucher kind", "## Tokens & cost"]


def test_summary_md_layout(summary, tmp_path):
    write_summary(tmp_path, summary)
    md = (tmp_path / "summary.md").read_text(encoding="utf-8")
    lines = md.splitlines()
    positions = [lines.index(h) for h in SPEC_HEADINGS + ECAB_HEADINGS]
    assert positions[:len(SPEC_HEADINGS)] == sorted(positions[:len(SPEC_HEADINGS)])
    assert "- **Overall accuracy: 50.0%** (exact_match OR judge_correct)" in lines
    assert "- Judge misjudged (exact match but judge failed): 1" in lines
    assert "| source | count | satisfied | satisfaction |" in lines
    assert "| query | 11 | 4 | 36.4% |" in lines
    assert ("| intent | count | evaluated | accuracy | exact_match | non_exact_correct | rubric_satisfaction |"
            in lines)
    assert "| review_driven | 2 | 1 | 0.0% | 0 | 0 | 0.0% |" in lines
    assert f"- 8: {NO_PRODUCT}" in lines
    assert "- `T4` (review_driven): Connection reset by peer" in lines
    assert "| 75 | 33.3% |" in lines
    assert json.loads((tmp_path / "summary.json").read_text(encoding="utf-8")) == summary


def write_run_folder(root: Path, run, *, tasks_path: str | None = None, legacy: bool = False) -> Path:
    """The run folder of `run` as ecab writes it (through RunFolder), or with legacy=True as the version before
    compact run folders wrote it: uncompressed part files, verdicts.jsonl, no active_judge in the manifest."""
    tasks, trajectories, judgements = run
    run_dir = root / "runs" / "small"
    write_jsonl(root / "tasks.jsonl", tasks.values())
    manifest = {"tasks_path": tasks_path or str(root / "tasks.jsonl"), "config_hash": "abc"}
    # Two workers' part files, in an order unlike the units': the result must not depend on it.
    if legacy:
        write_jsonl(run_dir / "trajectories" / "part-00000.jsonl", trajectories[4:])
        write_jsonl(run_dir / "trajectories" / "part-00001.jsonl", trajectories[:4])
        write_jsonl(run_dir / "verdicts.jsonl", reversed(judgements))
        (run_dir / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    else:
        folder = RunFolder(run_dir).create()
        folder.write_part("00000", trajectories[4:])
        folder.write_part("00001", trajectories[:4])
        folder.write_manifest(manifest)
        folder.write_verdicts("rules", reversed(judgements))
    (run_dir / "config.yaml").write_text("model: m\n", encoding="utf-8")
    return run_dir


@pytest.mark.parametrize("legacy", [False, True], ids=["compact", "previous-layout"])
def test_reduce_run_reproduces_the_summary(run, summary, tmp_path, legacy):
    run_dir = write_run_folder(tmp_path, run, tasks_path="../../tasks.jsonl", legacy=legacy)   # relative to the run
    assert reduce_run(run_dir) == summary
    assert json.loads((run_dir / "summary.json").read_text(encoding="utf-8")) == summary
    assert (run_dir / "summary.md").read_text(encoding="utf-8").startswith("# Evaluation Summary")


def test_reduce_run_bad_folders_give_one_clear_error(run, tmp_path):
    with pytest.raises(FormatError, match="run folder not found"):
        reduce_run(tmp_path / "nope")
    run_dir = write_run_folder(tmp_path, run, legacy=True)
    (run_dir / "verdicts.jsonl").write_text('{"id": "T1"}\n{not json\n', encoding="utf-8")
    with pytest.raises(FormatError, match=r"verdicts.jsonl:2: malformed JSON"):
        reduce_run(run_dir)
    compact = write_run_folder(tmp_path / "compact", run)
    (compact / "verdicts.rules.jsonl.gz").write_bytes(gzip.compress(b'{"id": "T1"}\n{not json\n'))
    with pytest.raises(FormatError, match=r"verdicts.rules.jsonl.gz:2: malformed JSON"):
        reduce_run(compact)
    (compact / "verdicts.rules.jsonl.gz").write_bytes(gzip.compress(b'{"id": "T1"}\n' * 100)[:-30])
    with pytest.raises(FormatError, match=r"verdicts.rules.jsonl.gz:\d+: unreadable gzip data"):
        reduce_run(compact)
    (compact / "verdicts.rules.jsonl.gz").unlink()
    with pytest.raises(FormatError, match=r"active_judge 'rules' has no verdict file verdicts.rules.jsonl.gz"):
        reduce_run(compact)
    (run_dir / "manifest.json").write_text("{}", encoding="utf-8")
    with pytest.raises(FormatError, match="field 'tasks_path'"):
        reduce_run(run_dir)


@pytest.mark.parametrize("legacy", [False, True], ids=["compact", "previous-layout"])
def test_unknown_termination_names_file_and_line(run, tmp_path, legacy):
    run_dir = write_run_folder(tmp_path, run, legacy=legacy)
    [part] = (run_dir / "trajectories").glob("part-00000.jsonl*")
    data = part.read_bytes()
    lines = (gzip.decompress(data) if not legacy else data).decode("utf-8").splitlines()
    lines[1] = lines[1].replace('"termination": "invalid_recommendation"', '"termination": "gave_up"')
    data = "".join(line + "\n" for line in lines).encode("utf-8")
    part.write_bytes(data if legacy else b"".join(gzip.compress(line + b"\n") for line in data.splitlines()))
    with pytest.raises(FormatError, match=rf"{part.name}:2: field 'termination': unknown termination 'gave_up'"):
        reduce_run(run_dir)


def test_cli(run, tmp_path, capsys):
    run_dir = write_run_folder(tmp_path, run)
    assert cli_main([str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert "summary.json" in out and "accuracy 50.0%" in out and "runtime errors 1" in out
    assert cli_main([str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and "run folder not found" in err[0]


@pytest.mark.slow
def test_python_dash_m_entry_point(run, tmp_path):
    run_dir = write_run_folder(tmp_path, run)
    done = subprocess.run([sys.executable, "-m", "ecab.reduce", str(run_dir)], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert (run_dir / "summary.md").is_file() and "accuracy 50.0%" in done.stdout


def test_real_released_tasks_group_by_their_own_fields(released_samples):
    """The released samples' shapes (vouchers of every kind, implicit counts, categories) reduce cleanly."""
    from ecab.schema import read_tasks
    real = read_tasks(released_samples)
    tasks = {t.id: t for t in real}
    trajectories, judgements = [], []
    for t in real:
        traj = make_traj(t.id, "recommended", calls=4, predicted=t.target_product.product_id, rci=4)
        trajectories.append(traj)
        judgements.append(make_judgement(traj, t, [(r.id, True, "rule", "ok") for r in t.rubrics]))
    s = summarize(tasks, trajectories, judgements, model="oracle", judge_model="rules")
    assert (s["overall_accuracy"], s["overall_rubric_satisfaction"], s["total_samples"]) == (1.0, 1.0, len(real))
    assert s["total_rubrics"] == sum(len(t.rubrics) for t in real)
    assert set(s["by_main_category"]) == {t.target_product.main_category for t in real}
    assert sum(g["count"] for g in s["by_voucher_kind"].values()) == sum(t.voucher is not None for t in real)
    assert set(s["by_voucher_kind"]) <= {"fixed", "percentage", "tiered", "stacked"}
    assert sum(g["count"] for g in s["by_implicit_count"].values()) == len(real)
    assert s["clarification"]["total_clarification_slots"] == sum(
        len(t.clarification_script.clarification_slots) for t in real)


def test_a_resumed_units_infra_retry_never_replaces_its_finished_record():
    tasks = make_tasks()
    t1 = tasks["T1"]
    good = make_traj("T1", "recommended", calls=5, predicted="P-T1", rci=5)
    retry = make_traj("T1", "infra_error", calls=1, error="reset")
    good_j = make_judgement(good, t1, [(r.id, True, "rule", "ok") for r in t1.rubrics])
    retry_j = make_judgement(retry, t1, [], runtime_error=True)
    for trajs, judgements in (([good, retry], [good_j, retry_j]), ([retry, good], [retry_j, good_j])):
        s = summarize(tasks, trajs, judgements, model="m", judge_model="j")
        assert (s["total_samples"], s["runtime_error_count"], s["overall_accuracy"]) == (1, 0, 1.0)
    orphan = make_traj("T2", "recommended", calls=5, predicted="P-T2", rci=5)
    with pytest.raises(ValueError, match="have no trajectory, e.g. task_id=T2"):
        summarize(tasks, [good], [good_j, make_judgement(orphan, tasks["T2"], [])], model="m", judge_model="j")


def test_a_torn_last_line_from_a_killed_writer_is_skipped(run, summary, tmp_path):
    """A part file of the previous layout (uncompressed), as a writer of that version left it; the compressed
    format's torn records: tests/test_units_and_folder.py."""
    run_dir = write_run_folder(tmp_path, run, legacy=True)
    part = run_dir / "trajectories" / "part-00000.jsonl"
    with part.open("a", encoding="utf-8") as handle:
        handle.write('{"id": "T1", "unit": {"task_id"')      # half a line, no newline
    assert reduce_run(run_dir) == summary
    # The runner appends after a torn line on a fresh line, so a torn line can also sit mid-file.
    part.write_text(part.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    assert reduce_run(run_dir) == summary
    # A line that is JSON but not a trajectory is corruption, not a torn write: one clear error.
    part.write_text(part.read_text(encoding="utf-8") + '{"id": "T1", "steps": 7}\n', encoding="utf-8")
    with pytest.raises(FormatError, match=r"part-00000.jsonl:5: field 'steps'"):
        reduce_run(run_dir)


# ---------------------------------------------------------------------------------------------------------
# The paper's diagnostics (issue 7)
# ---------------------------------------------------------------------------------------------------------

def test_failure_rate_per_requirement_source(summary):
    fails = summary["failure_by_source"]
    # query rubrics scored: E1 1 ok, E2 2 ok, E3 1 ok 1 failed, E5 2 failed, E6 2 failed, E7 2 failed
    assert {k: fails["query"][k] for k in ("count", "failed", "failure_rate")} == \
        {"count": 11, "failed": 7, "failure_rate": round(7 / 11, 4)}
    # persona: E1 r2 ok, E3 r3 unscored (left out), E7 r3 failed
    assert fails["persona"]["failure_rate"] == 0.5 and fails["persona"]["count"] == 2
    assert fails["clarification"]["by_type"]["negative_attribute"] == {"count": 1, "failed": 0, "failure_rate": 0.0}


def test_accuracy_given_profile_and_asking(summary):
    given = summary["accuracy_given"]
    # read the profile and asked: E1 (correct), E2 (correct), E5 (wrong); neither: E3 (correct), E6, E7
    assert given["profile_read"] == {"episodes": 3, "scored": 3, "accuracy": 0.6667}
    assert given["profile_not_read"] == {"episodes": 3, "scored": 3, "accuracy": 0.3333}
    assert given["asked_user"]["accuracy"] == 0.6667 and given["did_not_ask"]["accuracy"] == 0.3333


def test_interaction_table8_fields_and_first_ask_bins(summary):
    inter = summary["interaction"]
    assert inter["profile_read_rate"] == 0.5 and inter["finish_rate"] == round(4 / 6, 4)   # E1 E2 E3 E6
    assert inter["first_ask_user_position_median"] == round(1 / 79, 4)   # of 1/29, 1/79 and 0
    bins = {r["bin"]: r for r in inter["first_ask_vs_accuracy"]}
    assert bins["0.0-0.2"] == {"bin": "0.0-0.2", "episodes": 3, "scored": 3, "accuracy": 0.6667}
    assert bins["never asked"]["accuracy"] == 0.3333 and bins["0.4-0.6"]["accuracy"] is None


def test_search_depth_counts_queries_and_pages():
    tasks, trajectories, judgements = make_run()
    e1 = join_episodes(tasks, trajectories[:1], judgements[:1])[0]
    e1.traj.steps[1:1] = [step(5, "search_products", arguments={"query": "Laptop", "page": 0}),
                          step(6, "search_products", arguments={"query": "laptop ", "page": 2}),
                          step(7, "search_products", arguments={"query": "usb hub"})]
    assert search_depth([e1]) == {"searches_mean": 3.0, "distinct_queries_mean": 2.0, "next_page_calls_mean": 1.0,
                                  "result_pages_deepest_mean": 3.0}


def test_summary_md_has_the_new_sections(summary):
    md = render_markdown(summary)
    for heading in ("## Confidence intervals (95%, 4 tasks; bootstrap: 1000 resamples", "## Trials", "## Difficulty buckets",
                    "By raw rubric count:", "## Interaction behaviour", "## Accuracy given behaviour",
                    "## Failure rate per requirement by source", "## Judge audit", "## Review evidence failures",
                    "![accuracy vs budget](plots/accuracy_vs_budget.png)"):
        assert heading in md, heading
    assert "| overall accuracy | 50.0% [" in md
    assert "  - `T2` trial 0: predicted `P-other`, target `P-T2`" in md


def test_an_own_endpoint_without_prices_reports_its_cost_as_unknown_not_free(run, tmp_path):
    """manifest agent_prices "unknown" (ecab/run.py: an overridden base_url or model id, no prices given): the
    agents' cost is None with the reason, in summary.json and summary.md, never $0."""
    run_dir = write_run_folder(tmp_path, run)
    folder = RunFolder(run_dir)
    folder.write_manifest({**folder.read_manifest(), "agent_prices": "unknown"})
    tok = reduce_run(run_dir)["tokens_and_cost"]
    assert tok["total"]["cost_usd"] is None and tok["mean_per_episode"]["cost_usd"] is None
    assert all(m["total"]["cost_usd"] is None for m in tok["by_model"].values())
    assert tok["cost"].startswith("unknown")
    assert "- Cost: unknown" in (run_dir / "summary.md").read_text(encoding="utf-8")


def test_invented_tool_names_count_in_one_row_not_one_row_each():
    """A small local model calls tools that do not exist (issue 31): each invented name became a row of the
    per-tool tables; they are one row, "(unknown tools)", beside the real tools."""
    from ecab.reduce.interaction import UNKNOWN_TOOL, interaction_section
    from ecab.reduce.usage import tool_errors_section

    tasks = make_tasks()
    tid = next(iter(tasks))
    invented = [Step(index=i, call_index=i, tool=name, is_error=True, error=f"Unknown tool: {name}")
                for i, name in enumerate(("search_catalog", "get_product_info", "find_item"), start=1)]
    real = [Step(index=4, call_index=4, tool="search_products"),
            Step(index=5, call_index=5, tool="get_product_details", is_error=True, error="Product not found")]
    traj = make_traj(tid, "budget_exhausted", calls=5, steps=invented + real)
    [episode] = join_episodes(tasks, [traj], [make_judgement(traj, tasks[tid], no_product(tasks[tid]))])
    assert interaction_section([episode])["calls_per_tool_mean"] == {
        UNKNOWN_TOOL: 3.0, "get_product_details": 1.0, "search_products": 1.0}
    assert tool_errors_section([episode])["by_tool"] == {UNKNOWN_TOOL: 3, "get_product_details": 1}


def test_a_run_in_which_no_episode_called_a_tool_says_why_that_usually_is():
    """Against a served model whose calls come back as text every episode ends no_tool_call with 0 calls, and
    the summary read "finish rate 100%, 0 tool calls" with no hint (issue 31): it now opens with a warning."""
    from ecab.reduce.interaction import NO_TOOL_CALLS_WARNING

    tasks = make_tasks()
    silent = [make_traj(tid, "no_tool_call", calls=0, steps=[step(0, None), step(0, None)]) for tid in tasks]
    judged = [make_judgement(t, tasks[t.id], no_product(tasks[t.id])) for t in silent]
    summary = summarize(tasks, silent, judged, model="m", judge_model="rules")
    assert summary["warnings"] == [NO_TOOL_CALLS_WARNING]
    assert render_markdown(summary).startswith(f"**Warning:** {NO_TOOL_CALLS_WARNING}")
    one_call = [make_traj(silent[0].id, "recommended", calls=1, predicted="X", steps=[step(1, "recommend_product")]),
                *silent[1:]]
    judged = [make_judgement(t, tasks[t.id], no_product(tasks[t.id])) for t in one_call]
    assert summarize(tasks, one_call, judged, model="m", judge_model="rules")["warnings"] == []


def test_the_report_opens_with_the_run_s_warnings():
    from ecab.reduce.interaction import NO_TOOL_CALLS_WARNING
    from ecab.view.run_page import headline

    cards = headline({"warnings": [NO_TOOL_CALLS_WARNING], "overall_accuracy": 0.0})
    assert cards[0] == {"label": "warning", "value": "read this first", "note": NO_TOOL_CALLS_WARNING}
    assert all(card["label"] != "warning" for card in headline({"warnings": [], "overall_accuracy": 0.0}))


OWN_ENDPOINT = ("model:\n  name: gpt-5\n  model_id: ecab-sim-heuristic\n  base_url: http://127.0.0.1:18765/v1\n")
OWN_LABEL = "gpt-5=ecab-sim-heuristic@127.0.0.1-18765"


def own_endpoint_run():
    tasks, trajectories, judgements = make_run()
    for record in [*trajectories, *judgements]:
        record.unit["model"] = "gpt-5"          # the units carry the config name (ecab/run.py make_units)
    for traj in trajectories:
        traj.model = "gpt-5"
    return tasks, trajectories, judgements


def test_an_own_endpoint_is_shown_as_its_run_name_shows_it_never_as_the_providers_model(tmp_path):
    """model=gpt-5 pointed at an own endpoint: the run folder is gpt-5=<model_id>@<host-port>-..., so the summary
    (model, by_model, summary.md) says the same label, and keeps the config name apart under model_config."""
    run_dir = write_run_folder(tmp_path, own_endpoint_run())
    (run_dir / "config.yaml").write_text(OWN_ENDPOINT, encoding="utf-8")
    summary = reduce_run(run_dir)
    assert summary["model"] == OWN_LABEL and summary["model_config"] == "gpt-5"
    assert list(summary["tokens_and_cost"]["by_model"]) == [OWN_LABEL]
    assert f"- Model: `{OWN_LABEL}`" in (run_dir / "summary.md").read_text(encoding="utf-8")
    saved = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    assert saved["model"] == OWN_LABEL and saved["model_config"] == "gpt-5"


def test_the_providers_own_model_keeps_its_plain_name_and_a_manifest_label_wins(tmp_path):
    run_dir = write_run_folder(tmp_path, own_endpoint_run())
    (run_dir / "config.yaml").write_text("model:\n  name: gpt-5\n  model_id: gpt-5\n  base_url: null\n",
                                         encoding="utf-8")
    summary = reduce_run(run_dir)
    assert summary["model"] == "gpt-5" and "model_config" not in summary
    assert list(summary["tokens_and_cost"]["by_model"]) == ["gpt-5"]
    folder = RunFolder(run_dir)     # a manifest that names the label (ecab/run.py) is read as it is
    folder.write_manifest({**folder.read_manifest(), "model": "gpt-5@x-1", "model_config": "gpt-5"})
    summary = reduce_run(run_dir)
    assert summary["model"] == "gpt-5@x-1" and list(summary["tokens_and_cost"]["by_model"]) == ["gpt-5@x-1"]


def test_an_unpriced_episode_makes_the_summed_cost_unknown_never_zero(tmp_path):
    """A trajectory whose cost is unknown (usage.cost_usd null: a model without a price table) makes every total
    and mean it is part of unknown, even beside priced episodes and without the manifest's agent_prices."""
    tasks, trajectories, judgements = make_run()
    trajectories[0].usage = {**trajectories[0].usage, "cost_usd": None}
    summary = reduce_run(write_run_folder(tmp_path, (tasks, trajectories, judgements)))
    tok = summary["tokens_and_cost"]
    assert tok["total"]["cost_usd"] is None and tok["mean_per_episode"]["cost_usd"] is None
    assert tok["by_model"]["m"]["total"]["cost_usd"] is None and tok["cost"].startswith("unknown")
    assert tok["total"]["input_tokens"] == 1000 + 900 + 500      # the tokens still add up
    md = (tmp_path / "runs" / "small" / "summary.md").read_text(encoding="utf-8")
    assert "| total | 2400 | 340 | 50 | unknown |" in md

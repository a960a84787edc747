"""Variance and judge-audit formulas against hand-computed cases (ecab.reduce.variance, ecab.reduce.audit)."""
from __future__ import annotations

import json

import pytest
from test_reduce import make_judgement, make_run, make_task, make_traj, rubric, write_run_folder

from ecab.reduce import reduce_run, summarize
from ecab.reduce.audit import cohen_kappa, judge_agreement
from ecab.runs import RunFolder
from ecab.reduce.variance import bootstrap_ratio_ci, flip_rate, pass_hat_k
from ecab.schema import write_jsonl


# ---------------------------------------------------------------------------------------------------------
# pass^k and flips
# ---------------------------------------------------------------------------------------------------------

def test_pass_hat_k_by_hand():
    # tasks with (c correct of n trials): (2,3), (3,3), (0,3)
    result = pass_hat_k([(2, 3), (3, 3), (0, 3)])
    assert result[1] == {"value": round((2 / 3 + 1 + 0) / 3, 4), "tasks": 3}
    assert result[2] == {"value": round((1 / 3 + 1 + 0) / 3, 4), "tasks": 3}    # C(2,2)/C(3,2) = 1/3
    assert result[3] == {"value": round(1 / 3, 4), "tasks": 3}                  # only the all-correct task
    assert set(result) == {1, 2, 3}


def test_pass_hat_k_leaves_out_tasks_with_fewer_trials_than_k():
    result = pass_hat_k([(1, 1), (1, 2), (0, 0)])        # a task with no scored trial does not count
    assert result == {1: {"value": 0.75, "tasks": 2}, 2: {"value": 0.0, "tasks": 1}}
    with pytest.raises(ValueError, match="outside 0..2"):
        pass_hat_k([(3, 2)])


def test_flip_rate():
    assert flip_rate([[True, False, True], [True, True], [False]]) == {"tasks": 2, "flipped": 1, "rate": 0.5}
    assert flip_rate([[True]]) == {"tasks": 0, "flipped": 0, "rate": None}


# ---------------------------------------------------------------------------------------------------------
# Bootstrap
# ---------------------------------------------------------------------------------------------------------

def test_bootstrap_is_deterministic_for_a_seed_and_contains_the_estimate():
    num = [1, 0, 1, 1, 0, 1, 1, 0, 1, 1] * 3
    den = [1] * 30
    first = bootstrap_ratio_ci(num, den, seed=7)
    assert first == bootstrap_ratio_ci(num, den, seed=7)
    assert first != bootstrap_ratio_ci(num, den, seed=8)
    assert first["estimate"] == 0.7 and first["clusters"] == 30
    assert first["low"] < 0.7 < first["high"]
    assert 0.45 < first["low"] and first["high"] < 0.9           # about +-1.96 * sqrt(.21/30) = +-0.16


def test_bootstrap_resamples_clusters_not_episodes():
    # two tasks of three trials each: all correct, all wrong. Only 0, 1/2 and 1 are possible resamples.
    ci = bootstrap_ratio_ci([3, 0], [3, 3], seed=0)
    assert ci == {"estimate": 0.5, "low": 0.0, "high": 1.0, "clusters": 2}


def test_bootstrap_degenerate_inputs():
    assert bootstrap_ratio_ci([], []) == {"estimate": None, "low": None, "high": None, "clusters": 0}
    assert bootstrap_ratio_ci([0, 0], [0, 0])["estimate"] is None
    assert bootstrap_ratio_ci([2], [4]) == {"estimate": 0.5, "low": 0.5, "high": 0.5, "clusters": 1}
    with pytest.raises(ValueError, match="2 numerators but 1 denominators"):
        bootstrap_ratio_ci([1, 2], [1])


def test_variance_section_of_a_run():
    tasks, trajectories, judgements = make_run()
    s = summarize(tasks, trajectories, judgements, model="m", judge_model="rules")
    v = s["variance"]
    assert v["accuracy"]["estimate"] == s["overall_accuracy"] and v["tasks"] == 4
    assert v["rubric_satisfaction"]["estimate"] == s["overall_rubric_satisfaction"]
    assert list(v["by_source"]) == ["query", "persona", "clarification"]
    for source, ci in v["by_source"].items():
        assert ci["estimate"] == s["by_source"][source]["satisfaction"]
        assert ci["low"] <= ci["estimate"] <= ci["high"]
    assert v["by_intent"]["product_search"]["accuracy"]["estimate"] == 1.0
    # scored (correct, n) per task: T1 (1,1), T2 (1,2), T3 (1,2), T4 (0,1); E4 is a runtime error
    assert v["pass_k"] == {"1": {"value": 0.5, "tasks": 4}, "2": {"value": 0.0, "tasks": 2}}
    assert v["flips"] == {"tasks": 2, "flipped": 2, "rate": 1.0}
    assert summarize(tasks, trajectories, judgements, model="m", judge_model="rules")["variance"] == v


# ---------------------------------------------------------------------------------------------------------
# Judge audit
# ---------------------------------------------------------------------------------------------------------

def test_cohen_kappa_by_hand():
    # 50 verdicts: po = 35/50 = .7; pA(sat) = .5, pB(sat) = .6; pe = .5*.6 + .5*.4 = .5; kappa = .2/.5
    assert cohen_kappa(20, 5, 10, 15) == 0.4
    assert cohen_kappa(0, 5, 5, 0) == -1.0
    assert cohen_kappa(10, 0, 0, 10) == 1.0
    assert cohen_kappa(0, 0, 0, 0) is None                  # nothing to compare
    assert cohen_kappa(7, 0, 0, 0) is None                  # one label only: chance agreement is 1
    assert cohen_kappa(6, 1, 0, 0) == 0.0                   # B constant, A not: no agreement beyond chance


def test_judge_audit_lists_cases(run):
    audit = summarize(*run, model="m", judge_model="rules")["judge_audit"]
    assert audit["judge_misjudged_count"] == 1
    assert audit["judge_misjudged"][0]["task_id"] == "T3" and audit["judge_misjudged"][0]["failed_rubrics"] == ["r2"]
    assert audit["non_exact_but_correct"] == [{"task_id": "T2", "trial": 0, "intent_category": "feature_combination",
                                               "predicted_product_id": "P-other", "target_product_id": "P-T2"}]


@pytest.fixture()
def run():
    return make_run()


def _second_judge(tasks, trajectories, judgements):
    """An 'llm' judge that flips T1 r2 (numeric_range) and T2 r2 (attribute_match) and cannot score T1 r1."""
    flipped = []
    for j in judgements:
        copy = type(j).from_dict(json.loads(json.dumps(j.to_dict())))
        for v in copy.verdicts:
            v.method = "llm" if v.method != "no_product" else v.method
            if (copy.id, v.rubric_id) in {("T1", "r2"), ("T2", "r2")} and copy.unit["seed"] == 0:
                v.satisfied = not v.satisfied
                v.reasoning = "llm disagrees"
            if (copy.id, v.rubric_id) == ("T1", "r1"):
                v.satisfied = None
        flipped.append(copy)
    return flipped


def test_two_judges_agreement_by_type(run, tmp_path):
    tasks, trajectories, judgements = run
    llm = _second_judge(tasks, trajectories, judgements)
    [pair] = judge_agreement({"rules": judgements, "llm": llm}, tasks)
    assert pair["judges"] == ["llm", "rules"]
    # scored, non-no_product verdicts of non-runtime-error judgements: E1 r2 r3 r4 (r1 unscored by llm),
    # E2 r1 r2 r3, E3 r1 r2 (r3 unscored by both) -> 3 + 3 + 2 = 8 pairs, 2 disagreements
    assert pair["overall"]["n"] == 8 and pair["overall"]["agreement"] == 0.75
    numeric = pair["by_type"]["numeric_range"]
    # one verdict, llm False / rules True: chance agreement 0*1 + 1*0 = 0, observed 0 -> kappa 0
    assert numeric == {"n": 1, "agreement": 0.0, "kappa": 0.0, "both_satisfied": 0, "only_first": 0,
                       "only_second": 1, "both_unsatisfied": 0}
    # attribute_match: E1 r3 (T,T), E2 r2 (llm F, rules T), E2 r3 (T,T) -> kappa: pe = 2/3*1 + 1/3*0 -> 0
    assert pair["by_type"]["attribute_match"]["kappa"] == 0.0
    assert pair["by_type"]["budget_match"]["kappa"] is None        # both judges: one unsatisfied verdict
    assert [(d["task_id"], d["rubric_id"], d["llm"], d["rules"]) for d in pair["disagreements"]] == \
        [("T1", "r2", False, True), ("T2", "r2", False, True)]
    assert pair["disagreements"][0]["llm_reason"] == "llm disagrees"

    run_dir = write_run_folder(tmp_path, run)
    write_jsonl(run_dir / "verdicts.rules.jsonl", judgements)
    write_jsonl(run_dir / "verdicts.llm.jsonl", llm)
    (run_dir / "verdicts.notes.txt").write_text("not a judge file", encoding="utf-8")
    assert sorted(RunFolder(run_dir).judge_files()) == ["llm", "rules"]
    summary = reduce_run(run_dir, plots=False)
    assert summary["judge_agreement"] == [pair]
    md = (run_dir / "summary.md").read_text(encoding="utf-8")
    assert "## Judge agreement: llm vs rules" in md and "| budget_match | 1 | 100.0% | n/a (one label) |" in md


def test_one_judge_file_gives_no_agreement(run, tmp_path):
    run_dir = write_run_folder(tmp_path, run)
    write_jsonl(run_dir / "verdicts.rules.jsonl", run[2])
    assert "judge_agreement" not in reduce_run(run_dir, plots=False)


def test_trials_section_in_markdown(tmp_path):
    task = make_task("T9", "product_search", "Computers", [rubric("r1", "entity_match")])
    trajectories, judgements = [], []
    for trial, correct in enumerate([True, False, True]):
        traj = make_traj("T9", "recommended", calls=3, predicted="P-T9" if correct else "P-x", rci=3, trial=trial)
        trajectories.append(traj)
        judgements.append(make_judgement(traj, task, [("r1", correct, "rule", "ok" if correct else "no")]))
    s = summarize({"T9": task}, trajectories, judgements, model="m", judge_model="rules")
    assert s["variance"]["pass_k"] == {"1": {"value": 0.6667, "tasks": 1}, "2": {"value": 0.3333, "tasks": 1},
                                       "3": {"value": 0.0, "tasks": 1}}
    from ecab.reduce.report import render_markdown
    md = render_markdown(s)
    assert "## Trials" in md and "| 2 | 33.3% | 1 |" in md and "flips between trials: 1 of 1 (100.0%)" in md

"""Interval formulas (ecab.reduce.intervals) against known values, and the interval rule of variance.py at the
edges where a bootstrap collapses (0%, 100%)."""
from __future__ import annotations

import pytest
from test_reduce import make_judgement, make_task, make_traj, rubric

from ecab.reduce import summarize
from ecab.reduce.intervals import newcombe_paired_difference, wilson_interval
from ecab.reduce.report import render_markdown
from ecab.reduce.variance import interval


def test_wilson_known_values():
    assert wilson_interval(5, 10) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    assert wilson_interval(81, 263) == pytest.approx((0.2553, 0.3662), abs=1e-4)   # Newcombe 1998, table I
    # z = 1.6449: centre (0.1 + z²/20) / (1 + z²/10) = 0.1852, half 1.2946 * sqrt(0.009 + z²/400) = 0.1626
    assert wilson_interval(1, 10, level=0.9) == pytest.approx((0.0226, 0.3477), abs=1e-4)


def test_wilson_never_collapses_at_the_ends():
    low, high = wilson_interval(0, 20)
    assert low == 0.0 and high > 0.1
    low, high = wilson_interval(20, 20)
    assert high == 1.0 and low < 0.9


def test_wilson_refuses_impossible_counts():
    with pytest.raises(ValueError, match="n > 0"):
        wilson_interval(0, 0)
    with pytest.raises(ValueError, match="outside 0..3"):
        wilson_interval(4, 3)
    with pytest.raises(ValueError, match="outside"):
        wilson_interval(1, 3, level=1.0)


def test_newcombe_paired_difference_known_value():
    # Fagerland, Lydersen & Laake, "Statistical Analysis of Contingency Tables" ch. 8 (R package
    # contingencytables, Newcombe_square_and_add_CI_paired_2x2): 59 both, 6 only first, 16 only second,
    # 80 neither -> -0.0621 (95% CI -0.1186 to -0.0046)
    first = [1] * 59 + [1] * 6 + [0] * 16 + [0] * 80
    second = [1] * 59 + [0] * 6 + [1] * 16 + [0] * 80
    assert newcombe_paired_difference(first, second) == {"value": -0.0621, "low": -0.1186, "high": -0.0046,
                                                         "pairs": 161}


def test_newcombe_at_identical_all_correct_runs_is_not_zero_width():
    d = newcombe_paired_difference([1.0] * 10, [1.0] * 10)
    assert d["value"] == 0.0 and d["low"] < 0 < d["high"]
    with pytest.raises(ValueError, match="at least one shared task"):
        newcombe_paired_difference([], [])


def test_interval_rule():
    one_trial = interval([1, 0, 1, 1], [1, 1, 1, 1])
    assert one_trial["method"] == "wilson"
    assert (one_trial["low"], one_trial["high"]) == pytest.approx(wilson_interval(3, 4), abs=1e-4)
    # several units per task: the bootstrap over tasks
    assert interval([2, 1, 0, 3], [3, 3, 3, 3])["method"] == "cluster_bootstrap"
    # several units per task, every one correct: the bootstrap would say [1, 1]
    everything = interval([3, 3, 3, 3], [3, 3, 3, 3])
    assert everything["method"] == "wilson_over_tasks" and everything["high"] == 1.0
    assert everything["low"] == pytest.approx(wilson_interval(4, 4)[0], abs=1e-4)
    nothing = interval([0, 0, 0], [2, 2, 2])
    assert nothing["low"] == 0.0 and nothing["high"] > 0.3
    assert interval([], [])["estimate"] is None


def _all_same_run(n_tasks: int, correct: bool, trials: int = 1):
    tasks, trajectories, judgements = {}, [], []
    for i in range(n_tasks):
        tid = f"T{i}"
        task = make_task(tid, "product_search", "Computers", [rubric("r1", "entity_match")])
        tasks[tid] = task
        for trial in range(trials):
            traj = make_traj(tid, "recommended", calls=3, predicted=f"P-{tid}" if correct else "P-x", rci=3,
                             trial=trial)
            trajectories.append(traj)
            judgements.append(make_judgement(traj, task, [("r1", correct, "rule", "ok" if correct else "no")]))
    return tasks, trajectories, judgements


@pytest.mark.parametrize("trials", [1, 3])
def test_a_run_at_0_or_100_percent_gets_a_real_interval(trials):
    wrong = summarize(*_all_same_run(20, False, trials), model="m", judge_model="rules")["variance"]
    assert wrong["accuracy"]["estimate"] == 0.0 and wrong["accuracy"]["low"] == 0.0
    assert wrong["accuracy"]["high"] > 0.1
    right = summarize(*_all_same_run(20, True, trials), model="m", judge_model="rules")
    v = right["variance"]
    assert v["accuracy"]["high"] == 1.0 and v["accuracy"]["low"] < 0.9
    assert v["rubric_satisfaction"]["low"] < 0.9
    assert v["by_source"]["query"]["low"] < 0.9
    assert v["accuracy"]["method"] == ("wilson" if trials == 1 else "wilson_over_tasks")
    assert "Wilson" in v["method"]
    md = render_markdown(right)
    assert "| overall accuracy | 100.0% [83.9%, 100.0%] |" in md

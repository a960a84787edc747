"""`python -m ecab.study`: the budget study as one local command (runner=local, no Ray), on the small generated
benchmark the `ecab.run` tests share (tests/conftest.py: SMALL_RUN, small_run_cache)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import SMALL_RUN
from ecab.config import load_config, naming, parse
from ecab.study import main, parse_args


@pytest.fixture(scope="module")
def study(small_run_cache, tmp_path_factory) -> tuple[Path, dict]:
    runs = tmp_path_factory.mktemp("study-runs")
    code = main(["--budgets", "50,2", "--study", "oracle-study", "model=oracle", "benchmark.limit=2", *SMALL_RUN,
                 f"cache_dir={small_run_cache}", f"run.dir={runs}"])
    assert code == 0
    out = runs / "oracle-study"
    return out, json.loads((out / "budget_study.json").read_text(encoding="utf-8"))


@pytest.mark.slow
def test_the_study_runs_every_budget_as_a_run_folder_with_its_report(study):
    out, saved = study
    assert saved["budgets"] == [2, 50] and saved["largest_budget"] == 50 and saved["model"] == "oracle"
    assert [r["budget"] for r in saved["rows"]] == [2, 50]
    assert len(set(saved["runs"])) == 2
    for run in saved["runs"]:
        assert (Path(run) / "summary.json").is_file() and (Path(run) / "report.html").is_file()
    assert [json.loads((Path(r) / "summary.json").read_text(encoding="utf-8"))["budget"]["budget"]
            for r in saved["runs"]] == [2, 50]
    for name in ("budget_study.json", "budget_study.md", "budget_study.png"):
        assert (out / name).is_file()
    assert (out / "budget_study.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow
def test_each_budget_has_a_wilson_interval_terminations_and_cut_points(study):
    _, saved = study
    small, large = saved["rows"]
    assert small["episodes"] == large["episodes"] == 2
    # two calls are too few for the oracle to recommend: every episode hits the cap, none is right
    assert small["accuracy"] == 0.0 and small["cap_reached_rate"] == 1.0
    assert small["accuracy_ci"]["method"] == "wilson"
    assert small["accuracy_ci"]["low"] == 0.0 and small["accuracy_ci"]["high"] > 0.3       # 0 of 2: [0, .658]
    assert small["termination_shares"]["budget_exhausted"] == 1.0
    assert large["accuracy"] == 1.0 and large["accuracy_ci"]["high"] == 1.0 and large["accuracy_ci"]["low"] < 0.7
    assert large["termination_shares"]["recommended"] == 1.0 and large["cap_reached_rate"] == 0.0
    assert set(large["termination_shares"]) >= {"recommended", "budget_exhausted", "no_tool_call", "agent_error"}
    assert small["cut_points"] == [1, 2] and large["cut_points"] == [13, 25, 38, 50]
    # the truncation view: the budget-50 run cut after 2 calls has no recommendation yet
    assert small["accuracy_if_largest_cut_here"] == 0.0 and large["accuracy_if_largest_cut_here"] == 1.0


@pytest.mark.slow
def test_the_study_table(study):
    out, _ = study
    md = (out / "budget_study.md").read_text(encoding="utf-8")
    assert "| budget | accuracy [95% CI] | b50 run cut here |" in md
    assert "| 50 | 100.0% [34.2%, 100.0%] | 100.0% |" in md
    assert "| 2 | 0.0% [0.0%, 65.8%] | 0.0% |" in md and "ended budget exhausted" in md


@pytest.mark.slow
def test_a_second_study_resumes_every_run(study, small_run_cache, capsys):
    out, saved = study
    runs = out.parent
    assert main(["--budgets", "2,50", "--study", "oracle-study", "model=oracle", "benchmark.limit=2", *SMALL_RUN,
                 f"cache_dir={small_run_cache}", f"run.dir={runs}"]) == 0
    assert capsys.readouterr().out.count("resuming: 2 of 2 episodes already done") == 2
    again = json.loads((out / "budget_study.json").read_text(encoding="utf-8"))
    assert again["runs"] == saved["runs"]


def test_arguments():
    budgets, study, overrides = parse_args(["--budgets", "50,10,10", "model=oracle"])
    assert budgets == [10, 50] and study is None and overrides == ["runner=local", "model=oracle"]
    assert parse_args(["runner=ray"], default_runner="local")[2] == ["runner=ray"]
    assert parse_args([], default_runner="ray")[2] == ["runner=ray"]
    for bad in (["--budgets", "x"], ["--budgets", "0"], ["budget=5"], ["--nope"], ["--study", "../../etc"],
                ["--study", ".."], ["--study", "a/b"]):
        with pytest.raises(SystemExit):
            parse_args(bad)


def test_a_budget_of_zero_is_named(capsys):
    with pytest.raises(SystemExit):
        parse_args(["--budgets", "0,5"])
    assert "every budget must be a positive number of calls, got 0" in capsys.readouterr().err


def test_studies_of_other_budgets_models_or_task_sets_get_other_folders():
    def name(budgets, *overrides):
        return naming.study_name(parse(load_config(list(overrides))), budgets)
    first = name([3, 7, 15], "model=heuristic", "benchmark.limit=8")
    assert first == "heuristic-b3,7,15-generated-limit8-budget-study"
    others = {name([5], "model=heuristic", "benchmark.limit=2"), name([3, 7, 15], "model=oracle", "benchmark.limit=8"),
              name([3, 7, 15], "model=heuristic"), name([3, 7, 16], "model=heuristic", "benchmark.limit=8")}
    assert first not in others and len(others) == 4
    assert name([1, 2], "run.name=mine") == "mine-budget-study"
    many = list(range(1, 40))
    assert name(many).startswith("heuristic-b1,..,39,") and name(many) != name(many[:-1] + [41])


def test_a_bad_override_is_one_error_line(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--budgets", "5", "model=nosuch"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown model 'nosuch'" in err[0]

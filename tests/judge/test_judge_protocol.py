"""The judge protocol (ecab/judge/protocol.py): the rules judge and the LLM judge are two implementations of
`Judge`, chosen in one place (ecab/judge/dispatch.py), deciding correctness by the one rule
(ecab.judge.episode.outcome) and writing one verdict file format. The LLM judge answers over real HTTP with
the simulator's judge policy (the endpoint of tests/test_llm_judge.py, or the simulator judge.model=sim starts).
"""
from __future__ import annotations

import asyncio
import inspect
import json

from test_llm_judge import FakeCatalog, endpoint, make_task, settings_for, traj_for  # noqa: F401 (a fixture)

from ecab.catalog.review_match import ReviewChecker
from ecab.config import load_config
from ecab.judge.dispatch import configured_judge, judge_run
from ecab.judge.episode import outcome
from ecab.judge.llm import LLMJudge
from ecab.judge.protocol import Judge, judge_episodes
from ecab.judge.rules import RulesJudge
from ecab.runs import RunFolder
from ecab.schema import Judgement

TASK = make_task("P1")
OTHER_TARGET = make_task("OTHER")
EPISODES = [traj_for(TASK, "P1"), traj_for(TASK, None), traj_for(TASK, "MISSING")]


def unknown_task_episode():
    traj = traj_for(TASK, "P1")
    traj.id = "not-in-the-task-set"
    return traj


def _judge_all(judge: Judge, tasks, trajectories) -> list[Judgement]:
    return asyncio.run(judge_episodes(judge, tasks, trajectories, FakeCatalog()))


def test_both_judges_implement_the_protocol(endpoint, embedder):  # noqa: F811 (the endpoint fixture)
    rules = RulesJudge(review_checker=ReviewChecker(embedder))
    llm = LLMJudge(settings_for(endpoint), review_checker=ReviewChecker(embedder))
    wanted = inspect.signature(Judge.judge_episode).parameters
    for judge, name, model in ((rules, "rules", "rules"), (llm, "llm", "llm:sim-judge")):
        assert isinstance(judge, Judge)
        assert judge.name == name and judge.model_name == model
        assert inspect.iscoroutinefunction(judge.judge_episode) and inspect.iscoroutinefunction(judge.aclose)
        assert list(inspect.signature(type(judge).judge_episode).parameters) == list(wanted)
    asyncio.run(llm.aclose())


def test_both_judges_write_one_verdict_format_and_decide_by_the_one_rule(endpoint, embedder, tmp_path):  # noqa: F811
    tasks = {TASK.id: TASK}
    folder = RunFolder(tmp_path).create()
    by_judge = {}
    for judge in (RulesJudge(review_checker=ReviewChecker(embedder)),
                  LLMJudge(settings_for(endpoint), review_checker=ReviewChecker(embedder))):
        judgements = _judge_all(judge, tasks, EPISODES + [unknown_task_episode()])   # skipped
        assert len(judgements) == len(EPISODES)
        folder.write_verdicts(judge.name, judgements)
        by_judge[judge.name] = [j.to_dict() for j in folder.read_verdicts()]        # the judge just written
        describe = judge.describe()
        assert describe["name"] == judge.name and json.dumps(describe)     # the manifest can record it
    rules, llm = by_judge["rules"], by_judge["llm"]
    assert set(folder.judge_files()) == {"rules", "llm"}
    for r, m in zip(rules, llm):
        assert [k for k in m if k != "judge_usage"] == list(r)            # the same keys, in the same order
        assert (r["judge"], m["judge"]) == ("rules", "llm") and r["unit"] == m["unit"]
        assert [v["rubric_id"] for v in r["verdicts"]] == [v["rubric_id"] for v in m["verdicts"]]
        assert all(list(v) == list(r["verdicts"][0]) for v in r["verdicts"] + m["verdicts"])
    for lines in (rules, llm):
        for line, traj in zip(lines, EPISODES):
            judgement = Judgement.from_dict(line)
            assert (judgement.exact_product_match, judgement.all_satisfied, judgement.correct) == \
                outcome(TASK, traj.predicted_product_id, judgement.verdicts)
    # the recommended target is right by exact match under both; no product fails every rubric under both
    assert rules[0]["correct"] is True and llm[0]["correct"] is True
    for lines in (rules, llm):
        assert {v["method"] for v in lines[1]["verdicts"]} == {"no_product"} and lines[1]["correct"] is False


def test_the_configured_judge_is_chosen_in_one_place(tmp_path):
    with configured_judge(load_config([]).judge) as judge:
        assert isinstance(judge, RulesJudge)
    cfg = load_config(["judge=llm", "judge.model=sim", f"judge.cache_dir={tmp_path / 'cache'}"])
    with configured_judge(cfg.judge) as judge:
        assert isinstance(judge, LLMJudge) and judge.settings.model.base_url.startswith("http://127.0.0.1:")
        asyncio.run(judge.aclose())
    judged = judge_run(cfg.judge, {OTHER_TARGET.id: OTHER_TARGET}, [traj_for(OTHER_TARGET, "P1")], FakeCatalog())
    assert (judged.judge, judged.judge_model) == ("llm", f"llm:{judged.describe['model_id']}")
    assert [j.judge for j in judged.judgements] == ["llm"]

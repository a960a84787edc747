"""A custom judge: strict exact-match scoring plus a score that is not rubric-shaped.

Run it on a finished run:  python -m ecab.judge runs/<name> judge=example-judge
or with a run:             python -m ecab.run model=oracle judge=example-judge
(conf/judge/example-judge.yaml: {name: exact, kind: python, target: examples.custom_judge:make_judge}).

A judge needs one method, `async judge_episode(task, trajectory, catalog)`, returning either a list of
`ecab.Verdict` (one per rubric; ecab applies the paper's correctness rule) or a whole `ecab.Judgement`. Scores
of your own go in `Judgement.extras["scores"]`: the summary reports their means (`scores` in summary.json).
"""
from __future__ import annotations

import ecab


class ExactJudge:
    """Correct only when the exact target product was recommended; also scores how much budget was left."""

    def __init__(self, name: str, budget: int):
        self.name, self.budget = name, budget

    async def judge_episode(self, task: ecab.Task, trajectory: ecab.Trajectory, catalog) -> ecab.Judgement:
        exact = trajectory.predicted_product_id == task.target_product.product_id
        verdicts = [ecab.Verdict(rubric_id=r.id, type=r.type, info_source=r.info_source, field=r.field,
                                 satisfied=exact, method="rule", evidence="exact target" if exact else "")
                    for r in task.rubrics]
        judgement = ecab.make_judgement(task, trajectory, verdicts, judge_name=self.name)
        judgement.extras["scores"] = {"budget_left": 1 - trajectory.total_tool_calls / self.budget}
        return judgement


def make_judge(context: ecab.JudgeContext) -> ExactJudge:
    return ExactJudge(context.name, int(context.options.get("budget", 100)))

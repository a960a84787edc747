"""The oracle: knows the target, checks it through the tools, then recommends it.

It is the harness's self-check: on valid tasks it must score 100%. If it does not, a tool, the catalog,
the judge or the task itself is broken, and the run says so.
"""
from __future__ import annotations

from ecab.agents.base import ScriptedAgent
from ecab.schema import Task


class OracleAgent(ScriptedAgent):
    name = "oracle"

    def __init__(self, task: Task):
        super().__init__()
        self.task = task

    def plan(self):
        target = self.task.target_product.product_id
        yield "get_user_profile", {}
        details = yield "get_product_details", {"product_id": target}
        if isinstance(details, dict) and "error" in details:
            # The target is not in this catalog: recommend it anyway so the run records the breakage.
            yield "recommend_product", {"product_id": target, "reasoning": "oracle: target missing from catalog"}
            return
        yield "get_product_review_stats", {"product_ids": [target]}
        for rubric in self.task.rubrics:
            if rubric.type == "review_opinion":
                yield "get_review_content", {"product_id": target, "query": rubric.opinion}
        yield "recommend_product", {"product_id": target, "reasoning": "oracle: the task's target product"}

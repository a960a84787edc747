"""Adversaries in the validity audit: can a query-only attacker tell the target apart without hidden
information? (issue 27; docs/decisions.md#validity-audit)

The threat model: the attacker reads the task's user_query perfectly and uses every catalog tool, never
get_user_profile nor ask_user. It therefore ends among the CANDIDATES (the products of the target's main
category satisfying every query rubric, the audit's own pass) and must pick one by FORM: how a listing looks
next to the others. A pick is correct by the benchmark's dual-path rule (the target, or any product
satisfying every rubric).

- view.py: the attacker's view of a task (candidates, their dual-path labels, family, search rank, reviews);
- features.py: form features of each candidate relative to its candidate set and family;
- cues.py: named form cues (a feature in one direction), their expected top-1 hit; `cue_row`, the per-task
  record the audit rows carry (TaskAudit.adversary), with the blind dual-path floor;
- learned.py: a classifier over every feature, trained on half the tasks, scored top-1 on the other half;
- report.py: the set's figures, the attack table, the verdict against issue 27's criteria, the JSON.
"""
from ecab.construct.adversary.cues import CUES, cue_row
from ecab.construct.adversary.learned import learned_attack
from ecab.construct.adversary.report import attack_record, attack_table, headline_part, summarize, verdict
from ecab.construct.adversary.view import TaskView, TitleTokens, task_view

__all__ = ["CUES", "TaskView", "TitleTokens", "attack_record", "attack_table", "cue_row", "headline_part",
           "learned_attack", "summarize", "task_view", "verdict"]

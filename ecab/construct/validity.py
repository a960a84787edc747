"""The validity audit: do a task set's hidden requirements matter? (issue 15)

EComAgentBench claims to measure whether an agent uncovers requirements scattered over the query, the profile
and clarification. That holds only when the catalog makes those requirements count. Over the products of
the target's `main_category` (read through the catalog interface, category_products.py), with the rules judge
(`ecab.judge.rules.check_rubric`, the same rules that score episodes and validate construction), the audit
counts for every task (load_bearing.py has the list): the products matching the query's, the query's and the
persona's, and all rubrics; each rubric's WITNESSES (a rubric with one is LOAD-BEARING); whether the query alone
singles out the target; and the STRUCTURAL PICKS a script that never asks about hidden intent would score
(structural_picks.py; docs/decisions.md#validity-audit),

and reports, by intent and overall, the load-bearing share per source and per rubric type and the share of
tasks the query alone singles out (validity_report.py). With `adversary=True` (the default) every row also
carries the ADVERSARIES' per-task figures (adversary/, issue 27): the blind dual-path floor among the query's
matches and every form cue's expected hit (TaskAudit.adversary); `keep_views=True` keeps the attacker's views
for the learned attacker (adversary/learned.py), which needs the whole set and so is not in the rows.

This module runs the audit on tasks: `audit_task`, `audit_tasks` -> `AuditReport` (`.summary()`,
`.headline()`, `.markdown()`, `.rows()`); the audit construction writes into the benchmark folder
(`audit_construction`, the AUDIT_FILE rows) and the headline a run's summary carries (`task_set_audit`).
On plain rubrics and products (a draft during construction), the core is load_bearing.audit_products.
"""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any, Sequence

from ecab.construct.adversary import TitleTokens, cue_row, headline_part, task_view
from ecab.construct.benchmark_folder import AUDIT_FILE
from ecab.construct.category_products import category_products
from ecab.construct.load_bearing import REVIEW, QueryMatches, TaskAudit, VerdictMemo, audit_products
from ecab.construct.validity_report import AuditReport, aggregate, headline_of
from ecab.schema import Task

NOT_AUDITED = "not audited"
REVIEWS_LEFT_OUT_AT_CONSTRUCTION = ("left out at construction for cost (construct.audit_reviews=false; "
                                    "python -m ecab.construct audit includes them)")


# ---------------------------------------------------------------------------------------------------------
# Tasks on a catalog
# ---------------------------------------------------------------------------------------------------------

def _entity_hint(task: Task) -> str | None:
    for r in task.rubrics:
        if r.type == "entity_match":
            return str(r.extras.get("canonical_entity") or r.expected_value)
    return None


def task_digest(task: Task) -> str:
    """What an audit row depends on in a task: its target id, rubrics and voucher (not its wording)."""
    payload = [task.target_product.product_id, [r.to_dict() for r in task.rubrics],
               task.voucher.to_dict() if task.voucher is not None else None]
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:16]


def audit_task(task: Task, catalog, *, include_reviews: bool = True, review_checker=None,
               memo: VerdictMemo | None = None, adversary: bool = True, tool_features: bool = False,
               tokens: TitleTokens | None = None, views: list | None = None) -> TaskAudit:
    """One task's audit row; with `adversary`, its adversaries' figures too (and its attacker's view appended
    to `views` when given). `tool_features`: the view also has each candidate's search rank for the user query
    and its reviews (one hybrid search per task, loading the query embedder once per process, and one review
    read per candidate: `python -m ecab.construct audit` pays it; construction and a run's headline do not, so
    their rows lack the search-rank and review cues)."""
    products = category_products(catalog, task.target_product, _entity_hint(task))
    matches = QueryMatches() if adversary else None
    audit = audit_products(task.rubrics, task.target_product, products, voucher=task.voucher,
                           reviews_of=lambda pid: catalog.get_reviews(pid), review_checker=review_checker,
                           include_reviews=include_reviews, memo=memo, task_id=task.id,
                           intent=task.intent_category, matches=matches)
    audit.digest = task_digest(task)
    if matches is not None:
        view = task_view(task_id=task.id, intent=task.intent_category, target_id=task.target_product.product_id,
                         query=task.user_query, matches=matches.products, all_rubrics=matches.all_rubrics,
                         category=products, catalog=catalog if tool_features else None, tokens=tokens)
        audit.adversary = cue_row(view)
        if views is not None:
            views.append(view)
    return audit


def audit_tasks(tasks: Sequence[Task], catalog, *, include_reviews: bool = True, review_checker=None,
                progress: bool = False, adversary: bool = True, tool_features: bool = False,
                keep_views: bool = False) -> "AuditReport":
    """Audit every task on `catalog`; one verdict memo for the whole set. `tool_features` as in audit_task;
    `keep_views`: the report keeps every task's attacker's view (report.views) for the learned attacker."""
    started = time.perf_counter()
    memo = VerdictMemo()
    if include_reviews and review_checker is None and any(r.type == REVIEW for t in tasks for r in t.rubrics):
        from ecab.catalog.review_match import default_review_checker
        review_checker = default_review_checker()
    rows = []
    tokens = TitleTokens()
    views: list | None = [] if (adversary and keep_views) else None
    for n, task in enumerate(tasks, 1):
        rows.append(audit_task(task, catalog, include_reviews=include_reviews, review_checker=review_checker,
                               memo=memo, adversary=adversary, tool_features=tool_features, tokens=tokens,
                               views=views))
        if progress and n % 50 == 0:
            print(f"audit: {n}/{len(tasks)} tasks", flush=True)
    return AuditReport(rows, include_reviews=include_reviews, seconds=time.perf_counter() - started,
                       checks=memo.checks, review_checks=memo.review_checks, views=views)


# ---------------------------------------------------------------------------------------------------------
# The audit a benchmark folder carries, and the headline a run's summary carries
# ---------------------------------------------------------------------------------------------------------

# A run without its benchmark's audit computes one when the catalog has at most this many products.
RUN_AUDIT_MAX_PRODUCTS = 20_000


def audit_construction(tasks: Sequence[Task], catalog, cfg: Any = None) -> AuditReport:
    """The audit run at the end of construction (pipeline.construct). review_opinion rubrics only with
    `construct.audit_reviews=true`: embedding the reviews of every product a review rubric must be checked
    on costs more than building the default benchmark itself (docs/decisions.md#validity-audit), so by default
    they are left out here and the report says so; `python -m ecab.construct audit` includes them."""
    group = cfg.get("construct", cfg) if hasattr(cfg, "get") else None
    reviews = bool(group.get("audit_reviews", False)) if group is not None and hasattr(group, "get") else False
    report = audit_tasks(tasks, catalog, include_reviews=reviews)
    report.reviews_note = None if reviews else REVIEWS_LEFT_OUT_AT_CONSTRUCTION
    return report


def read_rows(path: str | Path) -> list[TaskAudit]:
    with open(path, encoding="utf-8") as fh:
        return [TaskAudit.from_dict(json.loads(line)) for line in fh if line.strip()]


def headline_record(summary: dict[str, Any], source: str) -> dict[str, Any]:
    """What a run's summary carries: the headline line, the overall figures and the per-intent ones."""
    o = summary["overall"]
    return {"status": "audited", "source": source, "headline": headline_of(summary),
            "review_opinion": summary.get("review_opinion"),
            "query_singles_out": o["query_singles_out"],
            "load_bearing": {k: v["share"] for k, v in o["load_bearing"].items()},
            "load_bearing_hidden": o["load_bearing_hidden"],
            "match_query_median": o["match_query_median"], "tasks": o["tasks"],
            "structural_picks": o.get("structural_picks"),
            "adversary": headline_part(o.get("adversary")),
            "by_intent": {k: {"query_singles_out": g["query_singles_out"],
                              "load_bearing": {s: v["share"] for s, v in g["load_bearing"].items()}}
                          for k, g in summary["by_intent"].items()}}


def not_audited(reason: str) -> dict[str, Any]:
    return {"status": NOT_AUDITED, "reason": reason, "headline": f"{NOT_AUDITED}: {reason}"}


def task_set_audit(tasks: Sequence[Task], catalog, *, benchmark_dir: str | Path | None = None,
                   max_products: int = RUN_AUDIT_MAX_PRODUCTS) -> dict[str, Any]:
    """The audit headline of a run's task set: from the benchmark folder's AUDIT_FILE when it holds a row
    for every task (matched by task_digest), else computed when the catalog has at most `max_products`
    products, else "not audited" with the reason."""
    if benchmark_dir is not None and (Path(benchmark_dir) / AUDIT_FILE).is_file():
        by_digest = {(r.task_id, r.digest): r for r in read_rows(Path(benchmark_dir) / AUDIT_FILE)}
        rows = [by_digest.get((t.id, task_digest(t))) for t in tasks]
        if rows and all(r is not None for r in rows):
            reviews = all(r.type != REVIEW or r.load_bearing is not None for row in rows for r in row.rubrics)
            return headline_record(aggregate(rows, include_reviews=reviews,
                                             reviews_note=REVIEWS_LEFT_OUT_AT_CONSTRUCTION), "benchmark manifest")
    n = catalog.count()
    if n > max_products:
        return not_audited(f"the catalog has {n} products (a run audits at most {max_products}: "
                           "run python -m ecab.construct audit)")
    report = audit_tasks(tasks, catalog)
    record = headline_record(report.summary(), "computed for this run")
    record["seconds"] = round(report.seconds, 2)
    return record

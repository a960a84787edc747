"""The validity audit: do a task set's hidden requirements matter? (issue 15)

EComAgentBench claims to measure whether an agent uncovers requirements scattered over the query, the profile
and clarification. That holds only when the catalog makes those requirements count. Over the products of
the target's `main_category` (read through the catalog interface), with the rules judge
(`ecab.judge.rules.check_rubric`, the same rules that score episodes and validate construction), the audit
counts for every task

- the products satisfying the query's rubrics, the query's and the persona's, and every rubric;
- per rubric, the WITNESSES: products other than the target that satisfy every rubric of the task except
  that one (and fail that one). A rubric with a witness is LOAD-BEARING: an agent that skips it can end
  on the witness and be wrong;
- whether the query's rubrics alone single out the target (the target is the only product satisfying them:
  persona and clarification then cannot matter);
- STRUCTURAL PICKS: what a script that reads the query, lists the products matching it and never asks about
  hidden intent would score by picking among them (a) at random, (b) the most TYPICAL listing (the one whose
  detail values are the most common among the matches) or (c) the most CENTRAL one (the one with the most
  listings at most one detail value away), ties going to the best rated, then the most rated. A catalog whose hard negatives are all one-value variants of the
  target makes the target both the most typical and the most central match: hidden intent then matters to
  the rubrics but not to a script (docs/decisions.md#validity-audit).

and reports, by intent and overall, the load-bearing share per source and per rubric type and the share of
tasks the query alone singles out.

review_opinion rubrics are judged like the others (sentence embeddings of the product's reviews, the
process-wide review checker) unless `include_reviews=False`; they are checked last within their source and
only for products not already ruled out, so the embedder sees few products. When they are left out, they
count as satisfied by every product, their own load-bearing flag is None ("not audited"), and the report
says so.

Cost: a product is dropped as soon as it fails two rubrics (it can then witness nothing); rubrics are
checked source by source (query, persona, clarification), cheap types first, so the query and query+persona
counts stay exact. Verdicts are memoised per (rubric content, voucher, product) across the tasks of one
`audit_tasks` call; category product lists come from category_products.py (cached per catalog fingerprint).

API: `audit_products` (the core, on plain rubrics and products: what construction can call on a draft),
`audit_task`, `audit_tasks` -> `AuditReport` (`.summary()`, `.headline()`, `.markdown()`, `.rows()`),
`aggregate` (a summary from per-task rows, e.g. the subset of a benchmark that one run used).
"""
from __future__ import annotations

import hashlib
import json
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from ecab.construct.category_products import category_products
from ecab.core.text import compact, normalize, value_text
from ecab.core.rubric_checks import TOP_LEVEL_FIELDS, EntityMatcher
from ecab.judge.rules import check_rubric
from ecab.schema import Product, Review, Rubric, Task, Voucher

SOURCES = ("query", "persona", "clarification")
HIDDEN_SOURCES = ("persona", "clarification")
# Within a source: cheap, selective checks first; review embeddings last.
_COST = {"entity_match": 0, "store_match": 1, "numeric_range": 2, "budget_match": 3, "attribute_match": 4,
         "negative_attribute": 5, "review_opinion": 9}
REVIEW = "review_opinion"
NOT_AUDITED = "not audited"
REVIEWS_LEFT_OUT = "left out (include_reviews=False)"
REVIEWS_LEFT_OUT_AT_CONSTRUCTION = ("left out at construction for cost (construct.audit_reviews=false; "
                                    "python -m ecab.construct audit includes them)")


# ---------------------------------------------------------------------------------------------------------
# Per-task result
# ---------------------------------------------------------------------------------------------------------

@dataclass
class RubricAudit:
    id: str
    type: str
    info_source: str
    field: str
    load_bearing: bool | None          # None: not audited (review_opinion with include_reviews=False)
    witnesses: int = 0                 # products != target satisfying every other rubric and failing this one


@dataclass
class TaskAudit:
    task_id: str
    intent: str
    category: str
    target_id: str
    candidates: int                    # catalog products of the target's main_category examined
    match_query: int                   # ... satisfying every query rubric
    match_query_persona: int           # ... every query and persona rubric
    match_all: int                     # ... every rubric
    target_in_catalog: bool
    target_satisfies_all: bool         # the target itself (the task's copy) satisfies every audited rubric
    query_singles_out: bool            # the target is the only product satisfying every query rubric
    rubrics: list[RubricAudit] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    digest: str = ""                   # task_digest: which task (target, rubrics, voucher) this row audited
    # Expected accuracy of the structural picks among the query's matches (None: rows from before they existed).
    pick_query_match: float | None = None
    pick_typical: float | None = None
    pick_central: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TaskAudit":
        data = dict(data)
        data["rubrics"] = [RubricAudit(**r) for r in data.get("rubrics", [])]
        return cls(**data)

    def load_bearing_share(self, source: str | None = None) -> float | None:
        decided = [r for r in self.rubrics
                   if r.load_bearing is not None and (source is None or r.info_source == source)]
        return sum(r.load_bearing for r in decided) / len(decided) if decided else None


# ---------------------------------------------------------------------------------------------------------
# Structural picks
# ---------------------------------------------------------------------------------------------------------

def _detail_values(product: Product) -> dict[str, str]:
    """The listing's detail values, keys and values normalized."""
    return {normalize(str(k)): normalize(value_text(v)) for k, v in (product.details or {}).items()}


def _expected_hit(scores: Sequence, target_index: int | None) -> float:
    """The chance that a pick of the best score (ties broken at random) is the target."""
    if target_index is None or not scores:
        return 0.0
    best = max(scores)
    return 1.0 / sum(1 for s in scores if s == best) if scores[target_index] == best else 0.0


def structural_picks(matches: Sequence[Product], target_id: str) -> tuple[float, float, float]:
    """(random, typical, central) expected accuracy of a pick among the query's `matches` (see the module
    docstring). Missing fields count as an empty value, so every listing is scored on the same fields."""
    if not matches:
        return 0.0, 0.0, 0.0
    target_index = next((i for i, p in enumerate(matches) if p.product_id == target_id), None)
    rows = [_detail_values(p) for p in matches]
    # A field whose value differs in every listing (a model number, a sales rank, a date) carries no
    # structure and would put every listing more than one value from every other: left out.
    fields = [f for f in sorted({f for row in rows for f in row})
              if len(matches) == 1 or len({row.get(f, "") for row in rows}) < len(rows)]
    table = [tuple(row.get(f, "") for f in fields) for row in rows]
    counts = [{} for _ in fields]
    for values in table:
        for j, v in enumerate(values):
            counts[j][v] = counts[j].get(v, 0) + 1
    # Among listings of equal score a script takes the best rated, then the most rated (re-listings of one
    # configuration differ only in such numbers).
    standing = [(p.average_rating or 0.0, p.rating_number or 0) for p in matches]
    typical = [(sum(counts[j][v] for j, v in enumerate(values)), standing[i]) for i, values in enumerate(table)]
    # Listings at most one value away, counted with one bucket per masked field (linear, not quadratic).
    exact: dict[tuple, int] = {}
    for values in table:
        exact[values] = exact.get(values, 0) + 1
    masked = [dict() for _ in fields]
    for values in table:
        for j in range(len(fields)):
            key = values[:j] + values[j + 1:]
            masked[j][key] = masked[j].get(key, 0) + 1
    central = [(exact[values] - 1 + sum(masked[j][values[:j] + values[j + 1:]] - exact[values]
                                        for j in range(len(fields))), standing[i])
               for i, values in enumerate(table)]
    rand = 1.0 / len(matches) if target_index is not None else 0.0
    return rand, _expected_hit(typical, target_index), _expected_hit(central, target_index)


# ---------------------------------------------------------------------------------------------------------
# The core
# ---------------------------------------------------------------------------------------------------------

def _voucher_key(voucher: Voucher | None) -> str:
    return json.dumps(voucher.to_dict(), sort_keys=True, default=str) if voucher is not None else ""


def rubric_key(rubric: Rubric, voucher: Voucher | None = None) -> tuple:
    """What decides a rubric's verdict on a product (its id and wording do not): for the verdict memo."""
    extras = ""
    if rubric.type == "entity_match":
        extras = json.dumps([rubric.extras.get("title_span"), rubric.extras.get("canonical_entity")], default=str)
    return (rubric.type, rubric.field, json.dumps(rubric.expected_value, sort_keys=True, default=str), extras,
            _voucher_key(voucher) if rubric.type == "budget_match" else "")


class VerdictMemo:
    """satisfied (True/False) per (rubric key, product id), shared by the tasks of one audit.

    Every verdict is the rules judge's (`check_rubric`; entity rubrics through the judge's prepared
    `EntityMatcher`, the test `check_entity_match` runs). One sound shortcut: an attribute_match rubric
    can only hold when its compacted expected phrase occurs somewhere in the product's compacted detail
    values or feature bullets (the judge matches the phrase inside one of them), so a product without it
    is failed without running the judge. The per-product text for that is built once."""

    def __init__(self):
        self._memo: dict[tuple[int, str], bool] = {}
        self._keys: dict[tuple, int] = {}
        self._matchers: dict[int, EntityMatcher] = {}
        self._needles: dict[int, str | None] = {}
        self._texts: dict[str, str] = {}
        self.checks = 0
        self.review_checks = 0

    def key_id(self, rubric: Rubric, voucher: Voucher | None) -> int:
        key = rubric_key(rubric, voucher)
        kid = self._keys.get(key)
        if kid is None:
            kid = self._keys[key] = len(self._keys)
            if rubric.type == "entity_match":
                self._matchers[kid] = EntityMatcher(rubric)
            elif rubric.type == "attribute_match" and not (not rubric.field.startswith("details.")
                                                           and rubric.field in TOP_LEVEL_FIELDS):
                self._needles[kid] = compact(normalize(rubric.expected_value))
        return kid

    def _text(self, product: Product) -> str:
        text = self._texts.get(product.product_id)
        if text is None:
            parts = [compact(normalize(value_text(v))) for v in (product.details or {}).values()]
            parts += [compact(normalize(b)) for b in (product.features or []) if isinstance(b, str)]
            text = self._texts[product.product_id] = "\x01".join(parts)
        return text

    def satisfied(self, rubric: Rubric, kid: int, product: Product, voucher: Voucher | None,
                  reviews: Callable[[], list[Review]], review_checker) -> bool:
        k = (kid, product.product_id)
        hit = self._memo.get(k)
        if hit is not None:
            return hit
        self.checks += 1
        needle = self._needles.get(kid)
        if rubric.type == "entity_match":
            ok = self._matchers[kid].match(product.title or "") is not None
        elif needle is not None and needle not in self._text(product):
            ok = False
        elif rubric.type == REVIEW:
            self.review_checks += 1
            ok = check_rubric(rubric, product, voucher=voucher, reviews=reviews(),
                              review_checker=review_checker).satisfied is True
        else:
            ok = check_rubric(rubric, product, voucher=voucher).satisfied is True
        self._memo[k] = ok
        return ok


_TEXTS: dict[str, dict] = {}      # catalog fingerprint -> the memo's per-product text cache


def construction_memo(catalog) -> VerdictMemo:
    """A fresh verdict memo for one candidate whose per-product text cache (a pure function of each
    catalog row) is shared by every candidate on the same catalog in this process: rebuilding it for each
    candidate cost more than the audits themselves."""
    memo = VerdictMemo()
    key = str(getattr(catalog, "fingerprint", id(catalog)))
    if len(_TEXTS) > 4 and key not in _TEXTS:
        _TEXTS.clear()
    memo._texts = _TEXTS.setdefault(key, {})
    return memo


def audit_products(rubrics: Sequence[Rubric], target: Product, products: Iterable[Product], *,
                   voucher: Voucher | None = None, reviews_of: Callable[[str], list[Review]] | None = None,
                   review_checker=None, include_reviews: bool = True, memo: VerdictMemo | None = None,
                   task_id: str = "", intent: str = "") -> TaskAudit:
    """Audit one task's rubrics over `products` (normally the target's main category).

    `target` is the task's target (its own copy: the target satisfies every rubric by construction, and
    the audit says when it does not); a catalog product with the target's id is counted in the match counts
    but never as a witness. `reviews_of(product_id)` supplies reviews for review_opinion rubrics.
    """
    memo = memo or VerdictMemo()
    def rank(i: int) -> tuple:
        r = rubrics[i]
        return (SOURCES.index(r.info_source) if r.info_source in SOURCES else 3, _COST.get(r.type, 8), i)

    order = sorted(range(len(rubrics)), key=rank)
    skipped: list[str] = []
    if not include_reviews:
        left = [rubrics[i] for i in order if rubrics[i].type == REVIEW]
        order = [i for i in order if rubrics[i].type != REVIEW]
        skipped += [f"{r.id} (review_opinion): not audited (include_reviews=False)" for r in left]
    # Mechanical rubrics first (source by source), review embeddings only for products still in the running.
    cheap = [i for i in order if rubrics[i].type != REVIEW]
    costly = [i for i in order if rubrics[i].type == REVIEW]
    query_set = {i for i in order if rubrics[i].info_source == "query"}
    qp_set = {i for i in order if rubrics[i].info_source in ("query", "persona")}
    costly_q = [i for i in costly if i in query_set]
    costly_qp = [i for i in costly if i in qp_set]
    keys = [memo.key_id(r, voucher) for r in rubrics]
    witnesses = [0] * len(rubrics)
    match_q = match_qp = match_all = others_q = 0
    query_matches: list[Product] = []
    seen = 0
    target_in_catalog = False
    target_id = target.product_id

    def review_getter(pid: str) -> Callable[[], list[Review]]:
        cache: list = []

        def get() -> list[Review]:
            if not cache:
                cache.append(reviews_of(pid) if reviews_of is not None else [])
            return cache[0]
        return get

    for product in products:
        seen += 1
        is_target = product.product_id == target_id
        target_in_catalog = target_in_catalog or is_target
        reviews = review_getter(product.product_id)

        def ok(i: int) -> bool:
            return memo.satisfied(rubrics[i], keys[i], product, voucher, reviews, review_checker)

        failed: list[int] = []
        for i in cheap:
            if not ok(i):
                failed.append(i)
                if len(failed) == 2:
                    break
        if len(failed) < 2:
            for i in costly:
                if not ok(i):
                    failed.append(i)
                    if len(failed) == 2:
                        break
        # Cheap rubrics run query, persona, clarification in turn, so a source with no recorded failure
        # passed every cheap rubric; only its review rubrics may still be unchecked (checked here, memoised).
        if not any(i in query_set for i in failed) and all(ok(i) for i in costly_q):
            match_q += 1
            others_q += not is_target
            query_matches.append(product)
        if not any(i in qp_set for i in failed) and all(ok(i) for i in costly_qp):
            match_qp += 1
        if not failed:
            match_all += 1
        elif len(failed) == 1 and not is_target:
            witnesses[failed[0]] += 1

    # The target itself, from the task (whether or not the catalog holds it).
    target_reviews = review_getter(target_id)
    target_ok = all(check_rubric(rubrics[i], target, voucher=voucher, reviews=target_reviews() if
                                 rubrics[i].type == REVIEW else None,
                                 review_checker=review_checker).satisfied is True for i in order)
    audited = set(order)
    pick_random, pick_typical, pick_central = structural_picks(query_matches, target_id)
    rows = [RubricAudit(r.id, r.type, r.info_source, r.field,
                        (witnesses[i] > 0) if i in audited else None, witnesses[i])
            for i, r in enumerate(rubrics)]
    return TaskAudit(task_id=task_id, intent=intent, category=target.main_category or "", target_id=target_id,
                     candidates=seen, match_query=match_q, match_query_persona=match_qp, match_all=match_all,
                     target_in_catalog=target_in_catalog, target_satisfies_all=target_ok,
                     query_singles_out=others_q == 0, rubrics=rows, skipped=skipped,
                     pick_query_match=pick_random, pick_typical=pick_typical, pick_central=pick_central)


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
               memo: VerdictMemo | None = None) -> TaskAudit:
    products = category_products(catalog, task.target_product, _entity_hint(task))
    audit = audit_products(task.rubrics, task.target_product, products, voucher=task.voucher,
                           reviews_of=lambda pid: catalog.get_reviews(pid), review_checker=review_checker,
                           include_reviews=include_reviews, memo=memo, task_id=task.id,
                           intent=task.intent_category)
    audit.digest = task_digest(task)
    return audit


def audit_tasks(tasks: Sequence[Task], catalog, *, include_reviews: bool = True, review_checker=None,
                progress: bool = False) -> "AuditReport":
    """Audit every task on `catalog`; one verdict memo for the whole set."""
    started = time.perf_counter()
    memo = VerdictMemo()
    if include_reviews and review_checker is None and any(r.type == REVIEW for t in tasks for r in t.rubrics):
        from ecab.catalog.review_match import default_review_checker
        review_checker = default_review_checker()
    rows = []
    for n, task in enumerate(tasks, 1):
        rows.append(audit_task(task, catalog, include_reviews=include_reviews, review_checker=review_checker,
                               memo=memo))
        if progress and n % 50 == 0:
            print(f"audit: {n}/{len(tasks)} tasks", flush=True)
    return AuditReport(rows, include_reviews=include_reviews, seconds=time.perf_counter() - started,
                       checks=memo.checks, review_checks=memo.review_checks)


# ---------------------------------------------------------------------------------------------------------
# The report
# ---------------------------------------------------------------------------------------------------------

def _share(values: Sequence[bool]) -> float | None:
    return sum(values) / len(values) if values else None


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def _group(rows: Sequence[TaskAudit]) -> dict[str, Any]:
    rubrics = [r for t in rows for r in t.rubrics]
    by_source = {}
    for source in SOURCES:
        decided = [r.load_bearing for r in rubrics if r.info_source == source and r.load_bearing is not None]
        by_source[source] = {"rubrics": len(decided), "load_bearing": sum(decided), "share": _share(decided)}
    by_type = {}
    for kind in sorted({r.type for r in rubrics}):
        decided = [r.load_bearing for r in rubrics if r.type == kind and r.load_bearing is not None]
        by_type[kind] = {"rubrics": len(decided), "load_bearing": sum(decided), "share": _share(decided)}
    hidden = [r.load_bearing for r in rubrics if r.info_source in HIDDEN_SOURCES and r.load_bearing is not None]
    med = (lambda xs: statistics.median(xs) if xs else None)  # noqa: E731
    return {
        "tasks": len(rows),
        "candidates_median": med([t.candidates for t in rows]),
        "match_query_median": med([t.match_query for t in rows]),
        "match_query_persona_median": med([t.match_query_persona for t in rows]),
        "match_all_median": med([t.match_all for t in rows]),
        "match_query_mean": (sum(t.match_query for t in rows) / len(rows)) if rows else None,
        "query_singles_out": _share([t.query_singles_out for t in rows]),
        "unique": _share([t.match_all <= (1 if t.target_in_catalog else 0) for t in rows]),
        "target_satisfies_all": _share([t.target_satisfies_all for t in rows]),
        "load_bearing": by_source,
        "load_bearing_hidden": _share(hidden),
        "load_bearing_by_type": by_type,
        "rubrics_not_audited": sum(1 for r in rubrics if r.load_bearing is None),
        "structural_picks": {"query_match": _mean([t.pick_query_match for t in rows]),
                             "typical": _mean([t.pick_typical for t in rows]),
                             "central": _mean([t.pick_central for t in rows])},
    }


def aggregate(rows: Sequence[TaskAudit], *, include_reviews: bool = True, reviews_note: str | None = None
              ) -> dict[str, Any]:
    """Overall and per-intent figures from per-task rows."""
    intents: dict[str, list[TaskAudit]] = {}
    for t in rows:
        intents.setdefault(t.intent, []).append(t)
    return {"overall": _group(rows), "by_intent": {k: _group(v) for k, v in intents.items()},
            "review_opinion": "included" if include_reviews else (reviews_note or REVIEWS_LEFT_OUT)}


def pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def num(x: float | None) -> str:
    if x is None:
        return "n/a"
    return str(int(x)) if float(x).is_integer() else f"{x:.1f}"


def headline_of(summary: dict[str, Any]) -> str:
    """One line: how hard the world is, from a summary's overall group."""
    o = summary["overall"]
    lb = o["load_bearing"]
    return (f"{o['tasks']} tasks: the query alone singles out the target in {pct(o['query_singles_out'])}; "
            f"load-bearing rubrics: query {pct(lb['query']['share'])}, persona {pct(lb['persona']['share'])}, "
            f"clarification {pct(lb['clarification']['share'])}; median products matching the query "
            f"{num(o['match_query_median'])} (review_opinion {summary.get('review_opinion', 'included')})"
            + _picks_phrase(o))


def _picks_phrase(group: dict[str, Any]) -> str:
    picks = group.get("structural_picks") or {}
    if picks.get("typical") is None:
        return ""
    return (f"; a script picking among the query's matches scores {pct(picks['query_match'])} at random, "
            f"{pct(picks['typical'])} on the most typical, {pct(picks['central'])} on the most central")


def markdown_of(summary: dict[str, Any], baselines: dict[str, dict[str, Any]] | None = None) -> str:
    """The audit table: by intent and overall; with baselines, their accuracy per intent."""
    baselines = baselines or {}
    names = list(baselines)
    head = ["intent", "tasks", "products", "match query", "match q+persona", "match all", "query singles out",
            "LB query", "LB persona", "LB clarification", "pick random", "pick typical", "pick central",
            *[f"{n} acc." for n in names]]
    lines = ["| " + " | ".join(head) + " |",
             "|" + "|".join("---" if i == 0 else "---:" for i in range(len(head))) + "|"]
    groups = [*summary["by_intent"].items(), ("**overall**", summary["overall"])]
    for name, g in groups:
        key = "overall" if name == "**overall**" else name
        acc = [pct(((baselines[n].get("by_intent") or {}).get(key) if key != "overall"
                    else baselines[n].get("overall"))) for n in names]
        lb = g["load_bearing"]
        lines.append("| " + " | ".join(str(c) for c in [
            name, g["tasks"], num(g["candidates_median"]), num(g["match_query_median"]),
            num(g["match_query_persona_median"]), num(g["match_all_median"]), pct(g["query_singles_out"]),
            pct(lb["query"]["share"]),
            pct(lb["persona"]["share"]), pct(lb["clarification"]["share"]),
            *[pct((g.get("structural_picks") or {}).get(k)) for k in ("query_match", "typical", "central")],
            *acc]) + " |")
    o = summary["overall"]
    lines += ["", "Load-bearing by rubric type (overall):", "",
              "| rubric type | rubrics | load-bearing | share |", "|---|---:|---:|---:|"]
    lines += [f"| {k} | {v['rubrics']} | {v['load_bearing']} | {pct(v['share'])} |"
              for k, v in o["load_bearing_by_type"].items()]
    lines += ["", f"products / match columns: medians over the tasks (products of the target's main category). "
                  f"Target satisfies every audited rubric in {pct(o['target_satisfies_all'])} of tasks; "
                  f"only the target satisfies every rubric in {pct(o['unique'])}. "
                  f"review_opinion: {summary.get('review_opinion', 'included')}"
              + (f"; {o['rubrics_not_audited']} rubrics not audited" if o["rubrics_not_audited"] else "") + ". "
              "pick columns: expected accuracy of a script that picks among the products matching the query's "
              "rubrics at random, the most typical one or the most central one (module docstring)."]
    return "\n".join(lines) + "\n"


@dataclass
class AuditReport:
    tasks: list[TaskAudit]
    include_reviews: bool = True
    seconds: float = 0.0
    checks: int = 0
    review_checks: int = 0
    reviews_note: str | None = None      # why review_opinion rubrics were left out, when they were

    def summary(self) -> dict[str, Any]:
        return aggregate(self.tasks, include_reviews=self.include_reviews, reviews_note=self.reviews_note)

    def headline(self) -> str:
        return headline_of(self.summary())

    def markdown(self, baselines: dict[str, dict[str, Any]] | None = None) -> str:
        return markdown_of(self.summary(), baselines)

    def rows(self) -> list[dict[str, Any]]:
        return [t.to_dict() for t in self.tasks]

    def timing(self) -> dict[str, Any]:
        return {"seconds": round(self.seconds, 3), "checks": self.checks, "review_checks": self.review_checks}

    def section(self) -> str:
        """The construction report's section (rejections.md): deterministic, no timings."""
        return "## Validity audit\n\n" + self.headline() + "\n\n" + self.markdown()

    def write_rows(self, path: str | Path) -> None:
        """One TaskAudit per line (the benchmark folder's AUDIT_FILE)."""
        with open(path, "w", encoding="utf-8") as fh:
            for row in self.rows():
                fh.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")


# ---------------------------------------------------------------------------------------------------------
# The audit a benchmark folder carries, and the headline a run's summary carries
# ---------------------------------------------------------------------------------------------------------

AUDIT_FILE = "audit.jsonl"            # per-task rows, beside benchmark.jsonl (written at construction)
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

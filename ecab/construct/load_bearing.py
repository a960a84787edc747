"""The load-bearing counts of one task: which requirements matter on a catalog (issue 15).

Over `products` (normally the target's main category, category_products.py), with the rules judge
(`ecab.judge.rules.check_rubric`, the same rules that score episodes and validate construction),
`audit_products` counts

- the products satisfying the query's rubrics, the query's and the persona's, and every rubric;
- per rubric, the WITNESSES: products other than the target that satisfy every rubric of the task except
  that one (and fail that one). A rubric with a witness is LOAD-BEARING: an agent that skips it can end
  on the witness and be wrong;
- whether the query's rubrics alone single out the target (the target is the only product satisfying them:
  persona and clarification then cannot matter);
- the structural picks among the query's matches (structural_picks.py);
- on request (`matches=QueryMatches()`), the query's matches themselves and which of them satisfy every
  audited rubric: the attacker's view of the task (adversary/view.py).

review_opinion rubrics are judged like the others (sentence embeddings of the product's reviews, the
process-wide review checker) unless `include_reviews=False`; they are checked last within their source and
only for products not already ruled out, so the embedder sees few products. When they are left out, they
count as satisfied by every product, their own load-bearing flag is None ("not audited"), and the report
says so.

Cost: a product is dropped as soon as it fails two rubrics (it can then witness nothing); rubrics are
checked source by source (query, persona, clarification), cheap types first, so the query and query+persona
counts stay exact. Verdicts are memoised per (rubric content, voucher, product) in a `VerdictMemo`, shared
by the tasks of one audit (validity.audit_tasks) or, for its per-product text, by every candidate of one
construction on a catalog (`construction_memo`).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable, Sequence

from ecab.construct.draft import SOURCES
from ecab.construct.structural_picks import structural_picks
from ecab.core.rubric_checks import TOP_LEVEL_FIELDS, EntityMatcher
from ecab.core.rubric_types import ALL_RUBRIC_TYPES, reads_reviews, type_of
from ecab.core.text import compact, normalize, value_text
from ecab.judge.rules import check_rubric
from ecab.schema import Product, Review, Rubric, Voucher

HIDDEN_SOURCES = ("persona", "clarification")
# Within a source: cheap, selective checks first; review embeddings last (each type's audit_cost).
_COST = {t.name: t.audit_cost for t in ALL_RUBRIC_TYPES}
REVIEW = "review_opinion"   # the type validity.py names; here: the record's reads_reviews


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
    # The adversaries' per-task figures (adversary/cues.py::cue_row: candidates, correct candidates, the blind dual-path
    # floor, each form cue's expected top-1 hit); None: not computed (rows from before, or a plain draft audit).
    adversary: dict[str, Any] | None = None

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


@dataclass
class QueryMatches:
    """Filled by `audit_products(..., matches=QueryMatches())`: the products satisfying every query rubric, in
    the order scanned, and for each whether it satisfies every AUDITED rubric (review_opinion rubrics left out
    with include_reviews=False count as satisfied). Not part of a TaskAudit row (it holds products)."""

    products: list[Product] = field(default_factory=list)
    all_rubrics: list[bool] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------------------
# The core
# ---------------------------------------------------------------------------------------------------------

def _voucher_key(voucher: Voucher | None) -> str:
    return json.dumps(voucher.to_dict(), sort_keys=True, default=str) if voucher is not None else ""


def rubric_key(rubric: Rubric, voucher: Voucher | None = None) -> tuple:
    """What decides a rubric's verdict on a product (its id and wording do not): for the verdict memo."""
    record = type_of(rubric)
    extras = json.dumps([rubric.extras.get(k) for k in record.extra_keys], default=str) if record.extra_keys else ""
    return (rubric.type, rubric.field, json.dumps(rubric.expected_value, sort_keys=True, default=str), extras,
            _voucher_key(voucher) if record.uses_voucher else "")


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
        elif reads_reviews(rubric):
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
                   task_id: str = "", intent: str = "", matches: QueryMatches | None = None) -> TaskAudit:
    """Audit one task's rubrics over `products` (normally the target's main category).

    `target` is the task's target (its own copy: the target satisfies every rubric by construction, and
    the audit says when it does not); a catalog product with the target's id is counted in the match counts
    but never as a witness. `reviews_of(product_id)` supplies reviews for review_opinion rubrics. `matches`,
    when given, receives the query's matches and their all-rubric verdicts (QueryMatches).
    """
    memo = memo or VerdictMemo()
    def rank(i: int) -> tuple:
        r = rubrics[i]
        return (SOURCES.index(r.info_source) if r.info_source in SOURCES else 3, _COST.get(r.type, 8), i)

    order = sorted(range(len(rubrics)), key=rank)
    skipped: list[str] = []
    if not include_reviews:
        left = [rubrics[i] for i in order if reads_reviews(rubrics[i])]
        order = [i for i in order if not reads_reviews(rubrics[i])]
        skipped += [f"{r.id} (review_opinion): not audited (include_reviews=False)" for r in left]
    # Mechanical rubrics first (source by source), review embeddings only for products still in the running.
    cheap = [i for i in order if not reads_reviews(rubrics[i])]
    costly = [i for i in order if reads_reviews(rubrics[i])]
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
            if matches is not None:
                matches.products.append(product)
                matches.all_rubrics.append(not failed)
        if not any(i in qp_set for i in failed) and all(ok(i) for i in costly_qp):
            match_qp += 1
        if not failed:
            match_all += 1
        elif len(failed) == 1 and not is_target:
            witnesses[failed[0]] += 1

    # The target itself, from the task (whether or not the catalog holds it).
    target_reviews = review_getter(target_id)
    target_ok = all(check_rubric(rubrics[i], target, voucher=voucher, reviews=target_reviews() if
                                 reads_reviews(rubrics[i]) else None,
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


"""Construction: candidates -> stages -> verbalize -> validate -> benchmark.jsonl (docs/original-harness.md §5).

`construct(cfg, catalog)` builds `n_per_intent` tasks for each configured intent:

1. One pass over the catalog collects, per intent, the candidate ids that pass the intent's sampling
   filters (in the category-uniform order of sample.py); the catalog's knowledge (value pools for
   negative constraints, title phrases for the entity; ecab/catalog/knowledge.py) comes from its rows,
   the same way for every source, and is sent to each worker once.
2. Each candidate runs the stages up to `max_attempts` times: extract -> voucher / opinions ->
   partition -> rubrics -> verbalize -> validate. Attempt `a` of candidate `i` of intent `x` draws from
   `random.Random(sha256(task|seed|x|i|a))` (ecab/core/seeds.py::task_rng), so a task never depends on which process built it or when.
3. `workers=N` is the parent plus N-1 spawned workers. The parent builds candidates itself from the
   start; the workers start up (imports only) during the scan, then load the scan's products from a
   pickle the parent wrote once (no LanceDB import, no second scan) and join in, so they only add
   throughput. review_driven candidates go to the parent first (they read reviews from LanceDB).
   The accepted tasks of an intent are the first `n` valid candidates in pool order, and only
   candidates before the n-th accepted one are recorded (as rejected or skipped), so the output is the
   same whatever the scheduling and whatever the worker count.

Output folder: `benchmark.jsonl` (status ok, the released 18-key format), `rejected.jsonl` (status
final_validation_failed, with the validator's issues), `rejections.md` (the reason table, like the
paper's Table 12) and `construct.json` (counts per intent). Task ids are `ecab_<intent>_<NNNN>` where
NNNN is the 1-based position of the candidate in its intent's pool: ids are stable, and rejected
candidates keep theirs.
"""
from __future__ import annotations

import contextlib
import copy
import fcntl
import functools
import hashlib
import json
import multiprocessing
import os
import random
import pickle
import shutil
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from ecab.catalog.base import CatalogReader, SearchPage, catalog_knowledge
from ecab.catalog.knowledge import CatalogKnowledge
from ecab.construct.draft import SOURCES, Draft
from ecab.construct.extract import ExtractionError, as_knowledge, assign_exclusions, extract_features
from ecab.construct.intents import get_intent
from ecab.construct.opinions import OpinionError, opinion_features, pick_opinions
from ecab.construct.partition import PartitionError, partition_features
from ecab.construct.rubrics import build_rubrics
from ecab.construct.sample import (
    DEFAULT_MIN_CATEGORY_SIZE,
    interleave_by_category,
    neighbourhood_scores,
    passes_static_filters,
    present_detail_fields,
)
from ecab.construct.select import NotLoadBearing, select_load_bearing
from ecab.construct.validate import Gate
from ecab.construct.vouchers import VoucherError, make_voucher
from ecab.core.seeds import candidate_order_rng, task_rng
from ecab.fields import INTENTS
from ecab.schema import ClarificationScript, Persona, Product, Review, Task, write_jsonl

BENCHMARK_FILE = "benchmark.jsonl"
REJECTED_FILE = "rejected.jsonl"
REJECTIONS_TABLE = "rejections.md"
REPORT_FILE = "construct.json"
REVIEWS_PER_PRODUCT = 20

# Reasons a candidate is dropped before any text exists (not counted as generated candidates, like the
# original's silent drops); validation rejections use validate.REJECTION_REASONS codes.
SKIP_REASONS = {
    "too_few_features": "fewer usable features than min_features",
    "no_negative": "negative_constraint: no attribute with a safe excluded alternative",
    "partition_failed": "features cannot fill query/persona/clarification minimums",
    "no_voucher": "no valid voucher for the price",
    "too_few_reviews": "review_driven: fewer than 10 reviews or 2 usable opinions",
    "too_few_load_bearing": "fewer load-bearing features than min_features, or one the intent needs is not "
                            "load-bearing (construct.load_bearing_only)",
    "stage_error": "the candidate product could not be read from the catalog",
}
# The catalog, not the attempt's draw, decides these: another attempt would only repeat the work.
FINAL_SKIPS = frozenset({"too_few_load_bearing"})
RUNTIME_REASONS = {
    "generation_runtime_error": "the verbalizer raised an error (recorded in error_message)",
    "validation_runtime_error": "validation raised an error (recorded in error_message)",
}


# ---------------------------------------------------------------------------------------------------------
# Settings and seeds
# ---------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Settings:
    seed: int = 0
    n_per_intent: int = 25
    intents: tuple[str, ...] = tuple(INTENTS)
    max_matches: int = 3
    workers: int = 2
    max_attempts: int = 3
    verbalizer: str = "template"
    # verbalizer=llm: the resolved construct.llm block (llm_verbalizer.LLMVerbalizerSettings, simulator URL
    # included), so spawned workers receive it with the Settings
    llm: Any = None
    min_category_size: int = DEFAULT_MIN_CATEGORY_SIZE
    max_candidates: int | None = None     # cap on candidates tried per intent (None: the whole pool)
    # Hidden intent must matter (issue 15; validate.Gate): keep only load-bearing features, then accept a task
    # only when these shares of its rubrics are load-bearing and its query alone matches this many products.
    load_bearing_only: bool = True
    min_hidden_load_bearing: float = 1.0
    min_query_load_bearing: float = 0.8
    min_query_matches: int = 5

    @classmethod
    def from_cfg(cls, cfg: Any) -> "Settings":
        """From the full config (its `construct` group) or the group itself; unknown intents fail here."""
        group = cfg.get("construct", cfg) if hasattr(cfg, "get") else cfg
        get = group.get if hasattr(group, "get") else (lambda k, d=None: getattr(group, k, d))
        intents = tuple(get("intents", None) or INTENTS)
        for intent in intents:
            get_intent(intent)
        n = int(get("n_per_intent", 25))
        if n < 0:
            raise ValueError(f"construct.n_per_intent must be >= 0, got {n}")
        verbalizer, llm = str(get("verbalizer", "template")), None
        if verbalizer == "llm":
            # Before any work: the model config and its API key are checked, model=sim starts the simulator.
            from ecab.construct.llm_verbalizer import resolve
            llm = resolve(get("llm", None))
        shares = {}
        for key, default in (("min_hidden_load_bearing", 1.0), ("min_query_load_bearing", 0.8)):
            shares[key] = float(get(key, default))
            if not 0.0 <= shares[key] <= 1.0:
                raise ValueError(f"construct.{key} must be within [0, 1], got {shares[key]}")
        min_query_matches = int(get("min_query_matches", 5))
        if min_query_matches < 0:
            raise ValueError(f"construct.min_query_matches must be >= 0, got {min_query_matches}")
        return cls(seed=int(get("seed", 0)), n_per_intent=n, intents=intents,
                   max_matches=int(get("max_matches", 3)), workers=max(1, int(get("workers", 2))),
                   max_attempts=max(1, int(get("max_attempts", 3))), verbalizer=verbalizer, llm=llm,
                   min_category_size=int(get("min_category_size", DEFAULT_MIN_CATEGORY_SIZE)),
                   max_candidates=None if get("max_candidates", None) is None else int(get("max_candidates")),
                   load_bearing_only=bool(get("load_bearing_only", True)), min_query_matches=min_query_matches,
                   **shares)

    @property
    def gate(self) -> Gate | None:
        """The validator's validity gate (None when every gate is off)."""
        if self.min_hidden_load_bearing <= 0 and self.min_query_load_bearing <= 0 and self.min_query_matches <= 0:
            return None
        return Gate(hidden_load_bearing=self.min_hidden_load_bearing, query_load_bearing=self.min_query_load_bearing,
                    query_matches=self.min_query_matches)

    def fingerprint_fields(self) -> dict[str, Any]:
        """What changes the output (workers does not)."""
        fields = {"seed": self.seed, "n_per_intent": self.n_per_intent, "intents": list(self.intents),
                  "max_matches": self.max_matches, "max_attempts": self.max_attempts,
                  "verbalizer": self.verbalizer, "min_category_size": self.min_category_size,
                  "max_candidates": self.max_candidates, "load_bearing_only": self.load_bearing_only,
                  "min_hidden_load_bearing": self.min_hidden_load_bearing,
                  "min_query_load_bearing": self.min_query_load_bearing, "min_query_matches": self.min_query_matches}
        if self.llm is not None:     # only then: template builds keep their fingerprints
            fields["llm"] = self.llm.fingerprint_fields()
        return fields


def task_id(intent: str, index: int) -> str:
    return f"ecab_{intent}_{index + 1:04d}"


# ---------------------------------------------------------------------------------------------------------
# One pass over the catalog
# ---------------------------------------------------------------------------------------------------------

@dataclass
class CatalogScan:
    candidates: dict[str, list[str]]               # intent -> ordered candidate ids
    knowledge: CatalogKnowledge                    # what construction may know: value pools, title phrases
    category_of: dict[str, str]                    # candidate id -> main_category
    products: list[Product] | None = None          # every product, when the catalog is small enough


# Up to this many products the validator keeps whole categories in memory anyway (its FULL_SCAN_LIMIT), so
# the scan keeps the products it reads: one pass over LanceDB instead of one per process.
SNAPSHOT_LIMIT = 200_000


def scan_catalog(catalog: CatalogReader, settings: Settings) -> CatalogScan:
    """Candidates per intent in one streaming pass (keeping the products of a small catalog for the
    in-memory snapshot), and the catalog's knowledge (ecab.catalog.base.catalog_knowledge: from the kept
    products when there are, else the catalog's own)."""
    groups: dict[str, dict[str, list[str]]] = {i: {} for i in settings.intents}
    category_of: dict[str, str] = {}
    intents = [get_intent(i) for i in settings.intents]
    kept: list[Product] | None = [] if catalog.count() <= SNAPSHOT_LIMIT else None
    for batch in catalog.iter_products():
        if kept is not None:
            kept.extend(batch)
        for product in batch:
            category = product.main_category or ""
            present = present_detail_fields(product)
            for intent in intents:
                if passes_static_filters(product, intent.sampling, present):
                    groups[intent.id].setdefault(category, []).append(product.product_id)
                    category_of[product.product_id] = category
    # With load_bearing_only, products with a rich catalog neighbourhood (near-identical listings that
    # differ in one detail) come first in their category: only they can make tasks whose requirements matter.
    scores = neighbourhood_scores(kept) if kept is not None and settings.load_bearing_only else None
    candidates = {i: interleave_by_category(groups[i], candidate_order_rng(settings.seed, i),
                                            settings.min_category_size, priority=scores)[:settings.max_candidates]
                  for i in settings.intents}
    knowledge = (CatalogKnowledge.from_products(kept) if kept is not None else catalog_knowledge(catalog))
    return CatalogScan(candidates, knowledge, category_of, kept)


class SnapshotCatalog:
    """A small catalog's products held in memory, as a CatalogReader with the same fingerprint.

    Construction reads products many times (the target, then whole categories for uniqueness); serving
    them from memory spares LanceDB and, in a spawned worker, spares even importing it. Reviews and search
    go to the real catalog, opened on first use: only review-driven candidates need it.
    Products are handed out as copies, so a stage that edits its draft's product cannot change the
    catalog seen by later candidates.
    """

    def __init__(self, products: list[Product], fingerprint: str, *, base: CatalogReader | None = None,
                 opener: Callable[[], CatalogReader] | None = None):
        self.fingerprint = fingerprint
        self._products = products
        self._by_id = {p.product_id: p for p in products}
        self._base, self._opener = base, opener
        self._knowledge: CatalogKnowledge | None = None

    @property
    def base(self) -> CatalogReader:
        if self._base is None:
            if self._opener is None:
                raise RuntimeError("the in-memory catalog snapshot needs the real catalog (reviews or search) "
                                   "but has no way to open it: pass opener=... to construct()")
            self._base = self._opener()
        return self._base

    def count(self) -> int:
        return len(self._products)

    def get_product(self, product_id: str) -> Product | None:
        product = self._by_id.get(product_id)
        return copy.deepcopy(product) if product is not None else None

    def get_products(self, product_ids: list[str]) -> list[Product]:
        return [copy.deepcopy(self._by_id[pid]) for pid in product_ids if pid in self._by_id]

    def iter_products(self, batch_size: int = 1024) -> Iterator[list[Product]]:
        for start in range(0, len(self._products), batch_size):
            yield self._products[start:start + batch_size]

    def knowledge(self) -> CatalogKnowledge:
        """What construction may know about the catalog (ecab.catalog.base.catalog_knowledge), from the
        snapshot's rows."""
        if self._knowledge is None:
            self._knowledge = CatalogKnowledge.from_products(self._products)
        return self._knowledge

    def get_reviews(self, product_id: str, limit: int = 20) -> list[Review]:
        return self.base.get_reviews(product_id, limit=limit)

    def search_reviews(self, product_id: str, query: str, limit: int = 5) -> list[Review]:
        return self.base.search_reviews(product_id, query, limit=limit)

    def search(self, query: str, **kwargs) -> SearchPage:
        return self.base.search(query, **kwargs)

    def store_products(self, store: str, **kwargs) -> SearchPage:
        return self.base.store_products(store, **kwargs)

    def dump(self, path: Path) -> Path:
        """Pickle the products once, for workers to load instead of re-reading LanceDB."""
        with open(path, "wb") as fh:
            pickle.dump({"fingerprint": self.fingerprint, "products": self._products}, fh,
                        protocol=pickle.HIGHEST_PROTOCOL)
        return path

    @classmethod
    def load(cls, path: str | Path, *, opener: Callable[[], CatalogReader] | None = None) -> "SnapshotCatalog":
        with open(path, "rb") as fh:
            data = pickle.load(fh)
        return cls(data["products"], data["fingerprint"], opener=opener)


# ---------------------------------------------------------------------------------------------------------
# Building one candidate (runs in a worker process or in-process)
# ---------------------------------------------------------------------------------------------------------

class Skip(Exception):
    def __init__(self, reason: str, detail: str = ""):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason, self.detail = reason, detail


def run_stages(draft: Draft, rng: random.Random, knowledge, *, catalog: CatalogReader | None = None,
               load_bearing_only: bool = False, min_query_load_bearing: float = 0.0) -> None:
    """Stages 2-5 on a draft whose product (and reviews) are set; raises Skip when the candidate cannot
    make a task this attempt. With `catalog` and `load_bearing_only`, only the load-bearing features are
    kept (select.py) before the partition, and a draft whose query could not reach
    `min_query_load_bearing` load-bearing rubrics (counting the entity as one) is not written."""
    intent = get_intent(draft.intent)
    product = draft.product
    try:
        features = extract_features(product, intent, rng)
    except ExtractionError as exc:
        raise Skip("too_few_features", str(exc)) from None
    if intent.id == "negative_constraint":
        assign_exclusions(features, product, knowledge, rng)
        if not any(f.negative for f in features):
            raise Skip("no_negative", "no negative feature has a safe excluded alternative")
    if intent.requires_voucher:
        try:
            draft.voucher = make_voucher(product.price, rng)
        except VoucherError as exc:
            raise Skip("no_voucher", str(exc)) from None
    if intent.requires_review_opinions:
        try:
            opinions = pick_opinions(product, draft.reviews, rng)
        except OpinionError as exc:
            raise Skip("too_few_reviews", str(exc)) from None
        draft.meta["opinions"] = opinions
        features = features + opinion_features(opinions)
        rng.shuffle(features)
    selection = None
    if load_bearing_only and catalog is not None:
        try:
            selection = select_load_bearing(draft, features, catalog, as_knowledge(knowledge))
        except NotLoadBearing as exc:
            raise Skip("too_few_load_bearing", str(exc)) from None
        features = selection.features
    draft.features = features
    try:
        draft.partition = partition_features(features, intent, rng, title=product.title)
    except PartitionError as exc:
        raise Skip("partition_failed", str(exc)) from None
    if selection is not None and selection.idle_query:
        query = len(draft.partition["query"]) + (draft.voucher is not None) + 1     # + budget, + entity
        if (query - selection.idle_query) / query < min_query_load_bearing:
            raise Skip("too_few_load_bearing", f"query: at most {query - selection.idle_query} of {query} "
                                               "rubrics can be load-bearing")
    build_rubrics(draft, rng, as_knowledge(knowledge))


def to_task(draft: Draft, status: str = "ok") -> Task:
    """The released 18-key sample record of a finished draft."""
    ok = status == "ok"
    artifacts: dict[str, Any] = {"sample_retry_count": draft.retry_count, "judge_issues": []}
    if draft.match_count is not None:
        artifacts["match_count"] = draft.match_count
    if "verbalizer" in draft.meta:   # construct.verbalizer=llm: was the rewrite kept, and why not
        artifacts["verbalizer"] = {key: draft.meta[key] for key in
                                   ("verbalizer", "verbalizer_attempts", "verbalizer_issues", "template_query")
                                   if key in draft.meta}
    return Task(
        id=draft.sample_id, intent_category=draft.intent, user_query=draft.user_query or "",
        user_persona=draft.persona or Persona(),
        clarification_script=draft.clarification_script or ClarificationScript(),
        target_product=Product.from_dict(draft.product.target_view()),
        rubrics=list(draft.rubrics), implicit_rubric_ids=list(draft.implicit_rubric_ids),
        difficulty_metrics={"implicit_count": len(draft.implicit_rubric_ids)},
        generation_artifacts=artifacts,
        extracted_features=[{"field": f.field, "value": f.value, "type": f.type} for f in draft.features],
        feature_partition={f"{s}_count": len(draft.partition.get(s, [])) for s in SOURCES},
        voucher=draft.voucher, validation_passed=ok, validation_issues=list(draft.validation_issues),
        judge_passed=ok, judge_issues=[], sample_status=status)


def _verbalizer(settings: Settings) -> Callable[[Draft, random.Random], None]:
    from ecab.construct import verbalize
    name = settings.verbalizer
    if name == "template":
        return verbalize.verbalize
    if name == "llm":   # one client and reply cache per process
        from ecab.construct.llm_verbalizer import verbalizer_for
        if settings.llm is None:
            raise ValueError("construct.verbalizer=llm needs Settings.from_cfg (it resolves construct.llm)")
        return verbalizer_for(settings.llm)
    other = getattr(verbalize, f"verbalize_{name}", None)
    if other is None:
        raise ValueError(f"construct.verbalizer={name!r} is not available; use 'template' or 'llm'")
    return other


@dataclass
class WorkerContext:
    catalog: CatalogReader | None
    knowledge: CatalogKnowledge | None
    settings: Settings


_CONTEXT: WorkerContext | None = None


def _init_worker(settings: Settings) -> None:
    """Process-pool initializer, run while the parent scans the catalog: imports only. The catalog comes
    later (`_attach_catalog`), from the snapshot the parent writes after its scan."""
    global _CONTEXT
    _limit_threads()
    _CONTEXT = WorkerContext(None, None, settings)
    from ecab.construct import validate, verbalize  # noqa: F401 - import cost paid once, up front


def _attach_catalog(snapshot_path: str | None, opener: Callable[[], CatalogReader] | None,
                    knowledge: CatalogKnowledge | None = None) -> int:
    """Give the worker its catalog: the parent's in-memory snapshot (LanceDB opened only if reviews are
    needed), or for large catalogs the store itself, read-only (handles never cross a process boundary).
    The review checker's sentence model is not preloaded: it loads lazily where a paraphrase is scored."""
    assert _CONTEXT is not None, "worker not initialised"
    _CONTEXT.knowledge = knowledge
    if snapshot_path is not None:
        _CONTEXT.catalog = SnapshotCatalog.load(snapshot_path, opener=opener)
    else:
        if opener is None:
            raise RuntimeError("construct worker has neither a catalog snapshot nor an opener")
        _CONTEXT.catalog = opener()
    return os.getpid()


def _limit_threads() -> None:
    """One compute thread per worker: the processes already use the cores, and nested BLAS/torch thread
    pools would only fight over them. Environment only: importing torch here would cost a second."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "TOKENIZERS_PARALLELISM"):
        os.environ.setdefault(var, "false" if var == "TOKENIZERS_PARALLELISM" else "1")
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)


class _TorchThreads:
    """Keeps torch (once something has imported it for the review model) at one thread in the parent
    while workers run on the other core, and restores the setting afterwards: two processes' torch
    thread pools spin-waiting on 2 cores slow both down."""

    def __init__(self) -> None:
        self.saved: int | None = None

    def limit(self) -> None:
        torch = sys.modules.get("torch")
        if torch is not None and self.saved is None:
            self.saved = torch.get_num_threads()
            torch.set_num_threads(1)

    def restore(self) -> None:
        torch = sys.modules.get("torch")
        if torch is not None and self.saved is not None:
            torch.set_num_threads(self.saved)
            self.saved = None


def _run_in_worker(intent: str, index: int, product_id: str) -> dict:
    assert _CONTEXT is not None and _CONTEXT.catalog is not None, "worker not initialised"
    return build_candidate(_CONTEXT, intent, index, product_id)


def _worker_pid() -> int:
    return os.getpid()


def _runtime_error(outcome: dict, draft: Draft, status: str, exc: Exception) -> dict:
    task = to_task(draft, status)
    task.error_message = f"{type(exc).__name__}: {exc}"
    outcome.update(status="rejected", reason=status, detail=task.error_message, record=task.to_dict())
    return outcome


def build_candidate(ctx: WorkerContext, intent_id: str, index: int, product_id: str) -> dict:
    """Up to max_attempts drafts for one candidate; the outcome as plain JSON-able data:
    {intent, index, product_id, status: ok | rejected | skipped, reason, record (task dict) | None}."""
    from ecab.construct.validate import rubric_lock, validate_draft

    settings = ctx.settings
    intent = get_intent(intent_id)
    verbalize = _verbalizer(settings)
    product = ctx.catalog.get_product(product_id)
    outcome = {"intent": intent_id, "index": index, "product_id": product_id, "status": "skipped",
               "reason": "stage_error", "detail": "product not found", "record": None, "attempts": 0}
    if product is None:
        return outcome
    reviews = ctx.catalog.get_reviews(product_id, limit=REVIEWS_PER_PRODUCT) if intent.requires_review_opinions else []
    rejected_draft: Draft | None = None
    for attempt in range(settings.max_attempts):
        rng = task_rng(settings.seed, intent_id, index, attempt)
        draft = Draft(sample_id=task_id(intent_id, index), intent=intent_id, product=product, reviews=reviews)
        draft.retry_count = attempt
        outcome["attempts"] = attempt + 1
        try:
            run_stages(draft, rng, ctx.knowledge, catalog=ctx.catalog, load_bearing_only=settings.load_bearing_only,
                       min_query_load_bearing=settings.min_query_load_bearing)
        except Skip as skip:
            outcome.update(reason=skip.reason, detail=skip.detail)
            if skip.reason in FINAL_SKIPS:
                break
            continue
        # Lock what decides correctness before any text is written; validation checks it is unchanged.
        draft.meta["rubric_lock"] = rubric_lock(draft.rubrics)
        # A crash in one candidate is recorded with the original's runtime-error statuses, not fatal to
        # the whole build; the rejection table shows it.
        try:
            verbalize(draft, rng)
        except Exception as exc:   # noqa: BLE001 - recorded, with its message
            return _runtime_error(outcome, draft, "generation_runtime_error", exc)
        try:
            # The validator prefilters uniqueness candidates itself (same main_category, cached per process).
            validate_draft(draft, ctx.catalog, max_matches=settings.max_matches, gate=settings.gate)
        except Exception as exc:   # noqa: BLE001
            return _runtime_error(outcome, draft, "validation_runtime_error", exc)
        if draft.rejection is None:
            outcome.update(status="ok", reason=None, detail="", record=to_task(draft).to_dict())
            return outcome
        rejected_draft = draft
    if rejected_draft is not None:
        outcome.update(status="rejected", reason=rejected_draft.rejection,
                       detail="; ".join(rejected_draft.validation_issues[:3]),
                       record=to_task(rejected_draft, "final_validation_failed").to_dict())
    return outcome


# ---------------------------------------------------------------------------------------------------------
# Scheduling: the first n valid candidates per intent, independent of completion order
# ---------------------------------------------------------------------------------------------------------

@dataclass
class IntentProgress:
    intent: str
    candidates: list[str]
    n: int
    results: dict[int, dict] = field(default_factory=dict)
    next_index: int = 0
    in_flight: int = 0

    def decided(self) -> list[dict]:
        """Outcomes of the contiguous prefix of finished candidates, cut right after the n-th accepted."""
        out, accepted, i = [], 0, 0
        while accepted < self.n and i in self.results:
            out.append(self.results[i])
            accepted += self.results[i]["status"] == "ok"
            i += 1
        return out

    @property
    def accepted(self) -> int:
        return sum(r["status"] == "ok" for r in self.decided())

    @property
    def done(self) -> bool:
        exhausted = self.next_index >= len(self.candidates) and self.in_flight == 0
        return self.accepted >= self.n or exhausted

    def wants_more(self, window: int) -> bool:
        """Submit another candidate while fewer are in flight than are still needed (plus a little slack)."""
        if self.accepted >= self.n or self.next_index >= len(self.candidates):
            return False
        return self.in_flight < min(window, max(1, self.n - self.accepted) + 1)


@dataclass
class ConstructResult:
    tasks: list[Task]
    rejected: list[dict]          # sample records with status final_validation_failed / *_runtime_error
    skipped: list[dict]
    per_intent: dict[str, dict[str, int]]
    rejection_counts: Counter
    skip_counts: Counter
    elapsed_s: float
    out_dir: Path | None = None
    workers: int = 1
    built_by: dict[str, int] = field(default_factory=dict)   # candidates built by the parent / the workers
    audit: Any = None             # validity.AuditReport of the accepted tasks (issue 15)

    @property
    def tasks_per_second(self) -> float:
        return len(self.tasks) / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def timing(self) -> dict[str, Any]:
        return {"tasks": len(self.tasks), "elapsed_s": round(self.elapsed_s, 3),
                "tasks_per_second": round(self.tasks_per_second, 3), "workers": self.workers,
                "built_by": dict(sorted(self.built_by.items()))}


def throughput_line(timing: dict[str, Any]) -> str:
    """'200 tasks in 7.9s (25.3 tasks/s, workers=2: parent built 130 candidates, workers 81)'."""
    built = timing.get("built_by") or {}
    split = f": parent built {built.get('parent', 0)} candidates, workers {built.get('workers', 0)}" \
        if timing.get("workers", 1) > 1 else ""
    return (f"{timing['tasks']} tasks in {timing['elapsed_s']:.1f}s ({timing['tasks_per_second']:.2f} tasks/s, "
            f"workers={timing.get('workers', 1)}{split})")


def _progress_bar(total: int, enabled: bool):
    try:
        from tqdm import tqdm
    except ImportError:   # tqdm is a dependency; this only guards odd environments
        return None
    return tqdm(total=total, desc="construct", unit="task", disable=not enabled, file=sys.stderr)


# Parent-first intents and worker queue depth; see docs/decisions.md#construction-workers.
PARENT_FIRST = frozenset({"review_driven"})   # a worker takes these only when nothing else is left
WORKER_DEPTH = 8   # candidates queued per worker (speculative extras never change the output)


def _take(progress: dict[str, IntentProgress], window: int, allowed: Callable[[str], bool]
          ) -> tuple[IntentProgress, int] | None:
    """The next candidate of the first intent (in order) that may go there and still wants one."""
    for p in progress.values():
        if allowed(p.intent) and p.wants_more(window):
            index = p.next_index
            p.next_index += 1
            p.in_flight += 1
            return p, index
    return None


def _record(p: IntentProgress, result: dict) -> None:
    p.in_flight -= 1
    p.results[result["index"]] = result


def _schedule(progress: dict[str, IntentProgress], run_local: Callable[[str, int, str], dict],
              pool: "_WorkerPool | None", *, window: int, bar, parent_builds: bool = True) -> Counter:
    """Build candidates until every intent has its n accepted ones (or runs out).

    The parent builds candidates itself from the start; spawned workers join as soon as they are ready,
    so they only ever add throughput (their start-up overlaps the parent's work instead of delaying it).
    `parent_builds=False` leaves everything to the workers (tests use it to exercise the worker path).
    Results are keyed by candidate index, so who builds what, and when, never changes the output.
    Returns how many candidates the parent and the workers built.
    """
    built: Counter = Counter()
    pending: dict[Future, tuple[IntentProgress, int]] = {}
    pinned = PARENT_FIRST if (parent_builds and pool is not None) else frozenset()
    shown = 0
    while True:
        for fut in [f for f in pending if f.done()]:
            p, k = pending.pop(fut)
            pool.busy[k] -= 1
            _record(p, fut.result())
            built["workers"] += 1
        while pool is not None and (k := pool.free_worker()) is not None:
            picked = (_take(progress, window, lambda intent: intent not in pinned)
                      or _take(progress, window, lambda intent: True))
            if picked is None:
                break
            p, index = picked
            pending[pool.submit(k, p.intent, index, p.candidates[index])] = (p, k)
        picked = None
        if parent_builds or pool is None:
            picked = (_take(progress, window, lambda intent: intent in pinned)
                      or _take(progress, window, lambda intent: True))
        if picked is not None:
            p, index = picked
            _record(p, run_local(p.intent, index, p.candidates[index]))
            built["parent"] += 1
        elif pending or (pool is not None and pool.starting() and _wants_work(progress, window)):
            wait(list(pending) + pool.starting(), return_when=FIRST_COMPLETED)
        else:
            break
        if bar is not None:
            now = sum(p.accepted for p in progress.values())
            bar.update(now - shown)
            shown = now
    return built


def _wants_work(progress: dict[str, IntentProgress], window: int) -> bool:
    return any(p.wants_more(window) for p in progress.values())


class _WorkerPool:
    """`n` spawned single-process executors; a worker takes candidates once its catalog is attached.

    spawn, not fork: a forked child would inherit the parent's LanceDB and torch thread state.
    """

    def __init__(self, n: int, settings: Settings):
        ctx = multiprocessing.get_context("spawn")
        self.executors = [ProcessPoolExecutor(max_workers=1, mp_context=ctx, initializer=_init_worker,
                                              initargs=(settings,)) for _ in range(n)]
        # Submitting starts the process now, so its interpreter start-up and imports overlap the scan.
        self.ready: list[Future] = [ex.submit(_worker_pid) for ex in self.executors]
        self.busy = [0] * n

    def attach(self, snapshot_path: str | None, opener: Callable[[], CatalogReader] | None,
               knowledge: CatalogKnowledge) -> None:
        """Queue the catalog hand-over; a worker counts as ready once it has run."""
        self.ready = [ex.submit(_attach_catalog, snapshot_path, opener, knowledge) for ex in self.executors]

    def starting(self) -> list[Future]:
        return [f for f in self.ready if not f.done()]

    def free_worker(self) -> int | None:
        """The least busy ready worker with room in its queue (a failed start-up raises here)."""
        free = []
        for k, ready in enumerate(self.ready):
            if ready.done():
                ready.result()
                if self.busy[k] < WORKER_DEPTH:
                    free.append(k)
        return min(free, key=lambda k: (self.busy[k], k)) if free else None

    def submit(self, k: int, intent: str, index: int, product_id: str) -> Future:
        self.busy[k] += 1
        return self.executors[k].submit(_run_in_worker, intent, index, product_id)

    def __enter__(self) -> "_WorkerPool":
        return self

    def __exit__(self, *exc) -> None:
        for ex in self.executors:
            ex.shutdown(wait=True, cancel_futures=True)


def construct(cfg: Any, catalog: CatalogReader, *, opener: Callable[[], CatalogReader] | None = None,
              out_dir: str | Path | None = None, progress: bool = True, parent_builds: bool = True
              ) -> ConstructResult:
    """Build the benchmark; writes the output folder when `out_dir` (or construct.out) is set.

    `construct.workers=N` means the parent plus N-1 spawned workers. `opener` is a picklable zero-argument
    callable that opens the same catalog read-only; workers use it for reviews and, for catalogs too large
    to snapshot in memory, for everything (default: the catalog's `reopener()` or `type.open(path)`).
    """
    settings = Settings.from_cfg(cfg)
    started = time.perf_counter()
    with contextlib.ExitStack() as stack:
        pool = stack.enter_context(_WorkerPool(settings.workers - 1, settings)) if settings.workers > 1 else None
        scan = scan_catalog(catalog, settings)      # spawned workers start up meanwhile
        local_catalog: CatalogReader = catalog
        if scan.products is not None:
            local_catalog = SnapshotCatalog(scan.products, catalog.fingerprint, base=catalog)
        if pool is not None:
            opener = opener or _reopener(catalog, required=scan.products is None)
            snapshot_path = None
            if isinstance(local_catalog, SnapshotCatalog):
                tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ecab-construct-")))
                snapshot_path = str(local_catalog.dump(tmp / "products.pkl"))
            pool.attach(snapshot_path, opener, scan.knowledge)
        progress_by_intent = {i: IntentProgress(i, scan.candidates[i], settings.n_per_intent)
                              for i in settings.intents}
        bar = _progress_bar(settings.n_per_intent * len(settings.intents), progress)
        ctx = WorkerContext(local_catalog, scan.knowledge, settings)

        threads = _TorchThreads()
        stack.callback(threads.restore)

        def run_local(intent: str, index: int, pid: str) -> dict:
            if pool is not None:
                threads.limit()
            return build_candidate(ctx, intent, index, pid)

        # Per intent in flight: one in the parent plus a full queue in each worker.
        window = 1 + WORKER_DEPTH * (settings.workers - 1)
        built = _schedule(progress_by_intent, run_local, pool, window=window, bar=bar,
                          parent_builds=parent_builds)
        if bar is not None:
            bar.close()
    result = _collect(progress_by_intent, time.perf_counter() - started)
    result.workers = settings.workers
    result.built_by = dict(built)
    from ecab.construct.validity import audit_construction   # the validity audit of what was accepted
    result.audit = audit_construction(result.tasks, local_catalog, cfg)
    target = out_dir if out_dir is not None else _cfg_out(cfg)
    if target is not None:
        write_outputs(result, Path(target))
    return result


def _cfg_out(cfg: Any) -> str | None:
    group = cfg.get("construct", cfg) if hasattr(cfg, "get") else cfg
    return group.get("out", None) if hasattr(group, "get") else None


def _reopener(catalog: CatalogReader, *, required: bool = True) -> Callable[[], CatalogReader] | None:
    """A picklable opener for the same catalog: its own `reopener()`, or `type.open(path, mode=...)`
    for a Catalog-like class (each worker then opens the store itself, read-only). None when there
    is none and it is not `required` (workers reading the in-memory snapshot need it only for reviews)."""
    reopen = getattr(catalog, "reopener", None)
    if reopen is not None:
        return reopen()
    opener = getattr(type(catalog), "open", None)
    path = getattr(catalog, "path", None)
    if opener is not None and path is not None:
        kwargs = {"mode": catalog.mode} if hasattr(catalog, "mode") else {}
        return functools.partial(opener, str(path), **kwargs)
    if not required:
        return None
    raise ValueError(f"construct.workers > 1 needs a way to reopen the catalog in each worker: pass "
                     f"opener=... or give {type(catalog).__name__} a reopener() method")


def _collect(progress: dict[str, IntentProgress], elapsed: float) -> ConstructResult:
    tasks, rejected, skipped = [], [], []
    per_intent: dict[str, dict[str, int]] = {}
    rejection_counts, skip_counts = Counter(), Counter()
    for intent, p in progress.items():
        decided = p.decided()
        counts = Counter(r["status"] for r in decided)
        per_intent[intent] = {"pool": len(p.candidates), "candidates": len(decided), "accepted": counts["ok"],
                              "rejected": counts["rejected"], "skipped": counts["skipped"]}
        for r in decided:
            if r["status"] == "ok":
                tasks.append(Task.from_dict(r["record"]))
            elif r["status"] == "rejected":
                rejected.append(r["record"])   # plain records: a runtime-error draft may be incomplete
                rejection_counts[r["reason"]] += 1
            else:
                skipped.append({k: r[k] for k in ("intent", "index", "product_id", "reason", "detail")})
                skip_counts[r["reason"]] += 1
    return ConstructResult(tasks, rejected, skipped, per_intent, rejection_counts, skip_counts, elapsed)


# ---------------------------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------------------------

def _reason_descriptions() -> dict[str, str]:
    try:
        from ecab.construct.validate import REJECTION_REASONS
    except Exception:
        return {}
    if isinstance(REJECTION_REASONS, dict):
        return {**RUNTIME_REASONS, **{k: (v if isinstance(v, str) else str(v)) for k, v in REJECTION_REASONS.items()}}
    return {**RUNTIME_REASONS, **{k: "" for k in REJECTION_REASONS}}


def acceptance_rate(counts: dict[str, int]) -> float:
    """Accepted over generated candidates (those that reached validation), as the paper's 662/921."""
    generated = counts["accepted"] + counts["rejected"]
    return counts["accepted"] / generated if generated else 0.0


def rejection_table(result: ConstructResult) -> str:
    """Markdown: rejection reasons with counts (paper Table 12), pre-validation skips, per-intent rates."""
    total_rej = sum(result.rejection_counts.values())
    generated = len(result.tasks) + total_rej
    descriptions = _reason_descriptions()
    lines = ["# Construction rejections", "",
             f"{total_rej} of {generated} generated candidates rejected by validation "
             f"({len(result.tasks)} accepted).", "",
             "| reason | description | count | share |", "|---|---|---:|---:|"]
    for reason, count in sorted(result.rejection_counts.items(), key=lambda kv: (-kv[1], kv[0])):
        share = count / total_rej if total_rej else 0.0
        lines.append(f"| {reason} | {descriptions.get(reason, '')} | {count} | {share:.1%} |")
    if not result.rejection_counts:
        lines.append("| (none) | | 0 | |")
    lines += ["", "## Skipped before validation (no draft could be built)", "",
              "| reason | description | count |", "|---|---|---:|"]
    for reason, count in sorted(result.skip_counts.items(), key=lambda kv: (-kv[1], kv[0])):
        lines.append(f"| {reason} | {SKIP_REASONS.get(reason, '')} | {count} |")
    if not result.skip_counts:
        lines.append("| (none) | | 0 |")
    lines += ["", "## By intent", "",
              "| intent | pool | candidates | accepted | rejected | skipped | acceptance |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    for intent, c in result.per_intent.items():
        lines.append(f"| {intent} | {c['pool']} | {c['candidates']} | {c['accepted']} | {c['rejected']} | "
                     f"{c['skipped']} | {acceptance_rate(c):.1%} |")
    if result.audit is not None:
        lines += ["", result.audit.section()]
    return "\n".join(lines) + "\n"


def write_outputs(result: ConstructResult, out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    write_jsonl(out_dir / BENCHMARK_FILE, result.tasks)
    write_jsonl(out_dir / REJECTED_FILE, result.rejected)
    (out_dir / REJECTIONS_TABLE).write_text(rejection_table(result), encoding="utf-8")
    # timing is the only part of the folder that differs between identical builds
    report = {"timing": result.timing(), "per_intent": result.per_intent, "rejections": dict(sorted(result.rejection_counts.items())),
              "skips": dict(sorted(result.skip_counts.items())), "skipped": result.skipped}
    if result.audit is not None:
        from ecab.construct.validity import AUDIT_FILE
        report["timing"]["audit"] = result.audit.timing()
        report["audit"] = result.audit.summary()
        result.audit.write_rows(out_dir / AUDIT_FILE)
    (out_dir / REPORT_FILE).write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    result.out_dir = out_dir


# ---------------------------------------------------------------------------------------------------------
# The cached default benchmark
# ---------------------------------------------------------------------------------------------------------

CODE_FILES = ("construct", "judge/rules.py", "core/rubric_checks.py", "core/text.py", "fields.py", "schema",
              "core/seeds.py")


def code_version() -> str:
    """A digest of the source that decides a generated task (construction, judge rules, formats)."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for rel in CODE_FILES:
        path = root / rel
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for f in files:
            if f.exists():
                h.update(str(f.relative_to(root)).encode())
                h.update(f.read_bytes())
    return h.hexdigest()


def benchmark_fingerprint(cfg: Any, catalog: CatalogReader) -> str:
    settings = Settings.from_cfg(cfg)
    payload = {"catalog": catalog.fingerprint, "construct": settings.fingerprint_fields(), "code": code_version()}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def ensure_benchmark(cfg: Any, catalog: CatalogReader, cache_dir: str | Path, *,
                     opener: Callable[[], CatalogReader] | None = None, progress: bool = True) -> Path:
    """The generated benchmark for (catalog, construct config, code), built once and cached.

    Returns `<cache_dir>/benchmarks/<fingerprint[:16]>/benchmark.jsonl`. Concurrent callers wait on a file
    lock; the folder appears atomically (built in a temp folder, then renamed).
    """
    root = Path(cache_dir) / "benchmarks"
    root.mkdir(parents=True, exist_ok=True)
    fp = benchmark_fingerprint(cfg, catalog)[:16]
    final = root / fp
    if (final / BENCHMARK_FILE).exists():
        return final / BENCHMARK_FILE
    with open(root / f"{fp}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (final / BENCHMARK_FILE).exists():
            tmp = root / f"{fp}.tmp-{os.getpid()}"
            shutil.rmtree(tmp, ignore_errors=True)
            result = construct(cfg, catalog, opener=opener, out_dir=tmp, progress=progress)
            (tmp / "fingerprint.json").write_text(json.dumps(
                {"fingerprint": benchmark_fingerprint(cfg, catalog), "catalog": catalog.fingerprint,
                 "construct": Settings.from_cfg(cfg).fingerprint_fields(),
                 "audit": result.audit.headline() if result.audit is not None else None}, indent=2) + "\n")
            os.replace(tmp, final)
    return final / BENCHMARK_FILE

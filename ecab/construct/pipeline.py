"""Construction orchestration: candidates -> stages -> verbalize -> validate -> benchmark.jsonl (SPEC §5).

`construct(cfg, catalog)` builds `n_per_intent` tasks for each configured intent:

1. One pass over the catalog collects, per intent, the candidate ids that pass the intent's sampling
   filters (in the category-uniform order of sample.py) and the catalog's value pools (negative
   constraints exclude real alternative values).
2. Each candidate runs the stages up to `max_attempts` times: extract -> voucher / opinions ->
   partition -> rubrics -> verbalize -> validate. Attempt `a` of candidate `i` of intent `x` draws from
   `random.Random(sha256(seed|x|i|a))`, so a task never depends on which process built it or when.
3. Candidates run in a process pool (`workers`); each worker opens the catalog itself, read-only. The
   accepted tasks of an intent are the first `n` valid candidates in pool order, and only candidates
   before the n-th accepted one are recorded (as rejected or skipped), so the output is the same
   whatever the scheduling and whatever the worker count.

Output folder: `benchmark.jsonl` (status ok, the released 18-key format), `rejected.jsonl` (status
final_validation_failed, with the validator's issues), `rejections.md` (the reason table, like the
paper's Table 12) and `construct.json` (counts per intent). Task ids are `ecab_<intent>_<NNNN>` where
NNNN is the 1-based position of the candidate in its intent's pool: ids are stable, and rejected
candidates keep theirs.
"""
from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import multiprocessing
import os
import random
import shutil
import sys
import threading
import time
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ecab.catalog.base import CatalogReader
from ecab.construct.draft import SOURCES, Draft
from ecab.construct.extract import (
    ExtractionError,
    assign_exclusions,
    count_values,
    extract_features,
    finish_pools,
)
from ecab.construct.intents import get_intent
from ecab.construct.opinions import OpinionError, opinion_features, pick_opinions
from ecab.construct.partition import PartitionError, partition_features
from ecab.construct.rubrics import build_rubrics
from ecab.construct.sample import (
    DEFAULT_MIN_CATEGORY_SIZE,
    interleave_by_category,
    passes_static_filters,
    present_detail_fields,
)
from ecab.construct.vouchers import VoucherError, make_voucher
from ecab.fields import INTENTS
from ecab.schema import ClarificationScript, Persona, Product, Task, write_jsonl

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
    "stage_error": "the candidate product could not be read from the catalog",
}
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
    min_category_size: int = DEFAULT_MIN_CATEGORY_SIZE
    max_candidates: int | None = None     # cap on candidates tried per intent (None: the whole pool)

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
        return cls(seed=int(get("seed", 0)), n_per_intent=n, intents=intents,
                   max_matches=int(get("max_matches", 3)), workers=max(1, int(get("workers", 2))),
                   max_attempts=max(1, int(get("max_attempts", 3))), verbalizer=str(get("verbalizer", "template")),
                   min_category_size=int(get("min_category_size", DEFAULT_MIN_CATEGORY_SIZE)),
                   max_candidates=None if get("max_candidates", None) is None else int(get("max_candidates")))

    def fingerprint_fields(self) -> dict[str, Any]:
        """What changes the output (workers does not)."""
        return {"seed": self.seed, "n_per_intent": self.n_per_intent, "intents": list(self.intents),
                "max_matches": self.max_matches, "max_attempts": self.max_attempts,
                "verbalizer": self.verbalizer, "min_category_size": self.min_category_size,
                "max_candidates": self.max_candidates}


def derive_seed(*parts: Any) -> int:
    """A 64-bit seed from hashlib over the parts (never Python's per-process salted `hash`)."""
    digest = hashlib.sha256("|".join(str(p) for p in parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big")


def task_rng(seed: int, intent: str, index: int, attempt: int) -> random.Random:
    return random.Random(derive_seed("task", seed, intent, index, attempt))


def task_id(intent: str, index: int) -> str:
    return f"ecab_{intent}_{index + 1:04d}"


# ---------------------------------------------------------------------------------------------------------
# One pass over the catalog
# ---------------------------------------------------------------------------------------------------------

@dataclass
class CatalogScan:
    candidates: dict[str, list[str]]               # intent -> ordered candidate ids
    value_pools: dict[tuple[str, str], list]        # (main_category, key) -> [(value, count)]
    category_of: dict[str, str]                    # candidate id -> main_category

    def pools_for(self, product_id: str) -> dict[tuple[str, str], list]:
        """The value pools of one candidate's category (all a worker needs for its negatives)."""
        category = self.category_of.get(product_id, "")
        return {k: v for k, v in self.value_pools.items() if k[0] == category}


def scan_catalog(catalog: CatalogReader, settings: Settings) -> CatalogScan:
    """Candidates per intent and value pools, in one streaming pass."""
    groups: dict[str, dict[str, list[str]]] = {i: {} for i in settings.intents}
    value_counts: dict[tuple[str, str], dict[str, int]] = {}
    category_of: dict[str, str] = {}
    intents = [get_intent(i) for i in settings.intents]
    for batch in catalog.iter_products():
        for product in batch:
            category = product.main_category or ""
            count_values(value_counts, product)
            present = present_detail_fields(product)
            for intent in intents:
                if passes_static_filters(product, intent.sampling, present):
                    groups[intent.id].setdefault(category, []).append(product.product_id)
                    category_of[product.product_id] = category
    candidates = {i: interleave_by_category(groups[i], random.Random(derive_seed("pool", settings.seed, i)),
                                            settings.min_category_size)[:settings.max_candidates]
                  for i in settings.intents}
    return CatalogScan(candidates, finish_pools(value_counts), category_of)


# ---------------------------------------------------------------------------------------------------------
# Building one candidate (runs in a worker process or in-process)
# ---------------------------------------------------------------------------------------------------------

class Skip(Exception):
    def __init__(self, reason: str, detail: str = ""):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason, self.detail = reason, detail


def run_stages(draft: Draft, rng: random.Random, pools) -> None:
    """Stages 2-5 on a draft whose product (and reviews) are set; raises Skip when the candidate cannot
    make a task this attempt."""
    intent = get_intent(draft.intent)
    product = draft.product
    try:
        features = extract_features(product, intent, rng)
    except ExtractionError as exc:
        raise Skip("too_few_features", str(exc)) from None
    if intent.id == "negative_constraint":
        assign_exclusions(features, product, pools, rng)
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
    draft.features = features
    try:
        draft.partition = partition_features(features, intent, rng, title=product.title)
    except PartitionError as exc:
        raise Skip("partition_failed", str(exc)) from None
    build_rubrics(draft, rng)


def to_task(draft: Draft, status: str = "ok") -> Task:
    """The released 18-key sample record of a finished draft."""
    ok = status == "ok"
    artifacts: dict[str, Any] = {"sample_retry_count": draft.retry_count, "judge_issues": []}
    if draft.match_count is not None:
        artifacts["match_count"] = draft.match_count
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


def _verbalizer(name: str) -> Callable[[Draft, random.Random], None]:
    from ecab.construct import verbalize
    if name == "template":
        return verbalize.verbalize
    other = getattr(verbalize, f"verbalize_{name}", None)
    if other is None:
        raise ValueError(f"construct.verbalizer={name!r} is not available; use 'template'")
    return other


@dataclass
class WorkerContext:
    catalog: CatalogReader
    pools: dict
    settings: Settings


_CONTEXT: WorkerContext | None = None


def _init_worker(opener: Callable[[], CatalogReader], settings: Settings) -> None:
    """Process-pool initializer: the worker opens its own read-only catalog (handles never cross a
    process boundary) and warms what every candidate needs, while the parent scans the catalog."""
    global _CONTEXT
    _limit_threads()
    _CONTEXT = WorkerContext(opener(), {}, settings)
    from ecab.construct import validate, verbalize  # noqa: F401 - import cost paid once, up front

    warm = getattr(validate, "_products_by_category", None)   # the validator's per-process product cache
    if warm is not None:
        warm(_CONTEXT.catalog)
    # The review checker's sentence model is NOT preloaded: verbatim opinions pass its lexical pre-check,
    # so most runs never need it (it loads lazily, once per worker, when a paraphrase must be scored).


def _limit_threads() -> None:
    """One compute thread per worker: `workers` processes already use the cores, and nested BLAS/torch
    thread pools would only fight over them."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "TOKENIZERS_PARALLELISM"):
        os.environ.setdefault(var, "false" if var == "TOKENIZERS_PARALLELISM" else "1")
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        pass


def _run_in_worker(intent: str, index: int, product_id: str, pools: dict) -> dict:
    assert _CONTEXT is not None, "worker not initialised"
    _CONTEXT.pools = pools
    return build_candidate(_CONTEXT, intent, index, product_id)


def _warm_up() -> int:
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
    verbalize = _verbalizer(settings.verbalizer)
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
            run_stages(draft, rng, ctx.pools)
        except Skip as skip:
            outcome.update(reason=skip.reason, detail=skip.detail)
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
            validate_draft(draft, ctx.catalog, max_matches=settings.max_matches)
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

    @property
    def tasks_per_second(self) -> float:
        return len(self.tasks) / self.elapsed_s if self.elapsed_s > 0 else 0.0


def _progress_bar(total: int, enabled: bool):
    try:
        from tqdm import tqdm
    except ImportError:   # tqdm is a dependency; this only guards odd environments
        return None
    return tqdm(total=total, desc="construct", unit="task", disable=not enabled, file=sys.stderr)


def _schedule(progress: dict[str, IntentProgress], submit: Callable[[str, int, str], Future], window: int,
              global_limit: int, bar) -> None:
    pending: dict[Future, IntentProgress] = {}
    shown = 0
    while True:
        for p in progress.values():
            while len(pending) < global_limit and p.wants_more(window):
                index = p.next_index
                p.next_index += 1
                p.in_flight += 1
                pending[submit(p.intent, index, p.candidates[index])] = p
        if not pending:
            break
        finished, _ = wait(list(pending), return_when=FIRST_COMPLETED)
        for fut in finished:
            p = pending.pop(fut)
            p.in_flight -= 1
            result = fut.result()
            p.results[result["index"]] = result
        if bar is not None:
            now = sum(p.accepted for p in progress.values())
            bar.update(now - shown)
            shown = now


class _InlineFuture(Future):
    """A Future already resolved by running the call in this process (the workers=1 path)."""

    def __init__(self, fn, *args):
        super().__init__()
        try:
            self.set_result(fn(*args))
        except BaseException as exc:     # re-raised by .result() exactly like a pool future
            self.set_exception(exc)


class _WorkerPool:
    """`n` single-process executors (spawned, each opening the catalog itself).

    review_driven candidates always go to worker 0: only that worker may need the review checker's
    sentence model (a few seconds to load), so it is loaded at most once per build. Other candidates go
    to the least busy worker. Which worker builds a candidate never changes its output.
    """

    PINNED = {"review_driven": 0}

    def __init__(self, n: int, opener: Callable[[], CatalogReader], settings: Settings):
        # spawn, not fork: a forked child would inherit the parent's LanceDB and torch thread state.
        ctx = multiprocessing.get_context("spawn")
        self.executors = [ProcessPoolExecutor(max_workers=1, mp_context=ctx, initializer=_init_worker,
                                              initargs=(opener, settings)) for _ in range(n)]
        self.busy = [0] * n
        self._lock = threading.Lock()   # done-callbacks run on the executors' threads
        for ex in self.executors:       # start every worker now, so it warms up during the catalog scan
            ex.submit(_warm_up)

    def submit(self, intent: str, args: tuple) -> Future:
        with self._lock:
            k = self.PINNED.get(intent)
            if k is None:
                k = min(range(len(self.executors)), key=lambda i: (self.busy[i], -i))
            self.busy[k] += 1
        fut = self.executors[k].submit(_run_in_worker, *args)
        fut.add_done_callback(lambda _f, k=k: self._done(k))
        return fut

    def _done(self, k: int) -> None:
        with self._lock:
            self.busy[k] -= 1

    def __enter__(self) -> "_WorkerPool":
        return self

    def __exit__(self, *exc) -> None:
        for ex in self.executors:
            ex.shutdown(wait=True, cancel_futures=True)


def construct(cfg: Any, catalog: CatalogReader, *, opener: Callable[[], CatalogReader] | None = None,
              out_dir: str | Path | None = None, progress: bool = True) -> ConstructResult:
    """Build the benchmark; writes the output folder when `out_dir` (or construct.out) is set.

    `opener` is a picklable zero-argument callable that opens the same catalog read-only; it is required
    for workers > 1 unless the catalog offers `reopener()`.
    """
    settings = Settings.from_cfg(cfg)
    started = time.perf_counter()
    if settings.workers <= 1:
        scan = scan_catalog(catalog, settings)
        progress_by_intent = {i: IntentProgress(i, scan.candidates[i], settings.n_per_intent)
                              for i in settings.intents}
        bar = _progress_bar(settings.n_per_intent * len(settings.intents), progress)
        ctx = WorkerContext(catalog, scan.value_pools, settings)
        _schedule(progress_by_intent, lambda i, k, pid: _InlineFuture(build_candidate, ctx, i, k, pid),
                  window=1, global_limit=1, bar=bar)
    else:
        opener = opener or _reopener(catalog)
        with _WorkerPool(settings.workers, opener, settings) as pool:
            scan = scan_catalog(catalog, settings)      # the workers warm up meanwhile
            progress_by_intent = {i: IntentProgress(i, scan.candidates[i], settings.n_per_intent)
                                  for i in settings.intents}
            bar = _progress_bar(settings.n_per_intent * len(settings.intents), progress)

            def submit(intent: str, index: int, pid: str) -> Future:
                pools = scan.pools_for(pid) if intent == "negative_constraint" else {}
                return pool.submit(intent, (intent, index, pid, pools))

            _schedule(progress_by_intent, submit, window=settings.workers + 1,
                      global_limit=settings.workers * 2, bar=bar)
    if bar is not None:
        bar.close()
    result = _collect(progress_by_intent, time.perf_counter() - started)
    target = out_dir if out_dir is not None else _cfg_out(cfg)
    if target is not None:
        write_outputs(result, Path(target))
    return result


def _cfg_out(cfg: Any) -> str | None:
    group = cfg.get("construct", cfg) if hasattr(cfg, "get") else cfg
    return group.get("out", None) if hasattr(group, "get") else None


def _reopener(catalog: CatalogReader) -> Callable[[], CatalogReader]:
    """A picklable opener for the same catalog: its own `reopener()`, or `type.open(path, mode=...)`
    for a LanceCatalog-like class (each worker then opens the store itself, read-only)."""
    reopen = getattr(catalog, "reopener", None)
    if reopen is not None:
        return reopen()
    opener = getattr(type(catalog), "open", None)
    path = getattr(catalog, "path", None)
    if opener is not None and path is not None:
        kwargs = {"mode": catalog.mode} if hasattr(catalog, "mode") else {}
        return functools.partial(opener, str(path), **kwargs)
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
    return "\n".join(lines) + "\n"


def write_outputs(result: ConstructResult, out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    write_jsonl(out_dir / BENCHMARK_FILE, result.tasks)
    write_jsonl(out_dir / REJECTED_FILE, result.rejected)
    (out_dir / REJECTIONS_TABLE).write_text(rejection_table(result), encoding="utf-8")
    report = {"per_intent": result.per_intent, "rejections": dict(sorted(result.rejection_counts.items())),
              "skips": dict(sorted(result.skip_counts.items())), "skipped": result.skipped}
    (out_dir / REPORT_FILE).write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    result.out_dir = out_dir


# ---------------------------------------------------------------------------------------------------------
# The cached default benchmark
# ---------------------------------------------------------------------------------------------------------

CODE_FILES = ("construct", "judge/rules.py", "judge/normalize.py", "fields.py", "schema.py")


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
            construct(cfg, catalog, opener=opener, out_dir=tmp, progress=progress)
            (tmp / "fingerprint.json").write_text(json.dumps(
                {"fingerprint": benchmark_fingerprint(cfg, catalog), "catalog": catalog.fingerprint,
                 "construct": Settings.from_cfg(cfg).fingerprint_fields()}, indent=2) + "\n")
            os.replace(tmp, final)
    return final / BENCHMARK_FILE

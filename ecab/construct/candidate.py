"""Building one candidate: up to `max_attempts` drafts of a task from one catalog product (docs/architecture.md §4).

Each attempt runs the stages (extract -> voucher / opinions -> load-bearing selection -> partition -> rubrics),
locks the rubrics, verbalizes and validates. Attempt `a` of candidate `i` of intent `x` draws from
`random.Random(sha256(task|seed|x|i|a))` (ecab/core/seeds.py::task_rng), so a task never depends on which
process built it or when. The outcome is plain JSON-able data, so it crosses process boundaries as is. Why a
candidate is skipped or rejected: reasons.py.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable

from ecab.catalog.base import CatalogReader
from ecab.catalog.knowledge import CatalogKnowledge
from ecab.construct import verbalize as verbalizers
from ecab.construct.draft import Draft, to_task
from ecab.construct.extract import ExtractionError, as_knowledge, assign_exclusions, extract_features
from ecab.construct.intents import get_intent
from ecab.construct.opinions import OpinionError, opinion_features, pick_opinions
from ecab.construct.partition import PartitionError, partition_features
from ecab.construct.reasons import FINAL_SKIPS
from ecab.construct.rubrics import build_rubrics
from ecab.construct.select import NotLoadBearing, select_load_bearing
from ecab.construct.settings import Settings
from ecab.construct.validate import rubric_lock, validate_draft
from ecab.construct.vouchers import VoucherError, make_voucher
from ecab.core.seeds import task_rng

REVIEWS_PER_PRODUCT = 20    # reviews read for a review_driven candidate's opinions


def task_id(intent: str, index: int) -> str:
    """Stable ids: the candidate's 1-based position in its intent's pool (rejected candidates keep theirs)."""
    return f"ecab_{intent}_{index + 1:04d}"


class Skip(Exception):
    """This attempt cannot make a task from the candidate; `reason` is a reasons.SKIP_REASONS code."""

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


def choose_verbalizer(settings: Settings) -> Callable[[Draft, random.Random], None]:
    """The configured verbalizer (construct.verbalizer): the template one, the LLM one, or another
    `verbalize_<name>` of the verbalize package."""
    name = settings.verbalizer
    if name == "template":
        return verbalizers.verbalize
    if name == "llm":   # one client and reply cache per process; imported only when configured
        from ecab.construct.llm_verbalizer import verbalizer_for
        if settings.llm is None:
            raise ValueError("construct.verbalizer=llm needs construct_settings (it resolves construct.llm)")
        return verbalizer_for(settings.llm)
    other = getattr(verbalizers, f"verbalize_{name}", None)
    if other is None:
        raise ValueError(f"construct.verbalizer={name!r} is not available; use 'template' or 'llm'")
    return other


@dataclass
class CandidateContext:
    """What building a candidate needs, in the parent or in a worker process (workers.py)."""

    catalog: CatalogReader | None
    knowledge: CatalogKnowledge | None
    settings: Settings


def _runtime_error(outcome: dict, draft: Draft, status: str, exc: Exception) -> dict:
    task = to_task(draft, status)
    task.error_message = f"{type(exc).__name__}: {exc}"
    outcome.update(status="rejected", reason=status, detail=task.error_message, record=task.to_dict())
    return outcome


def build_candidate(ctx: CandidateContext, intent_id: str, index: int, product_id: str) -> dict:
    """Up to max_attempts drafts for one candidate; the outcome as plain JSON-able data:
    {intent, index, product_id, status: ok | rejected | skipped, reason, record (task dict) | None}."""
    settings = ctx.settings
    intent = get_intent(intent_id)
    verbalize = choose_verbalizer(settings)
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

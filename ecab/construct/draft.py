"""The plain data that flows through the construction stages (docs/original-harness.md §5).

sample -> extract (Features) -> voucher / opinions -> partition (Feature per source) -> rubrics (fixed in
code: id, type, field, expected_value, info_source) -> verbalize (text only) -> validate.
A Draft is built up stage by stage; `to_task()` turns a finished one into a schema.Task.
The verbalizer may only set text fields (query, surfaces, persona noise, slot wording), never a rubric's
id, type, field, expected_value or info_source.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ecab.schema import ClarificationScript, Persona, Product, Review, Rubric, Task, Voucher

SOURCES = ("query", "persona", "clarification")


@dataclass
class Feature:
    """One verifiable fact about the target, before it becomes a rubric.

    field: "details.<Key>" | "average_rating" | "rating_number" | "price" | "review" | "budget"
    value: the canonical option (str), the threshold / cap (number) or the opinion text.
    """

    field: str
    value: Any
    type: str                      # attribute_match | numeric_range | review_opinion | budget_match
    expected_value: Any = None     # the rubric's expected_value, fixed in code
    rubric_text: str = ""          # "The recommended product's Color should be/contain 'Black'"
    negative: bool = False         # becomes negative_attribute with expected_value = excluded values
    source_review_id: Any = None   # review_opinion: the review it was taken from
    # Whether some other catalog product satisfies every other requirement and fails this one (select.py);
    # None before the audit. An unwitnessed feature can only go to the query (partition.py).
    witnessed: bool | None = None

    @property
    def detail_key(self) -> str | None:
        return self.field.split(".", 1)[1] if self.field.startswith("details.") else None


@dataclass
class EntitySpec:
    """The entity_match rubric's parts: the phrase in the query, its canonical form, the title span."""

    query_surface: str
    canonical_entity: str
    title_span: str


@dataclass
class Draft:
    sample_id: str
    intent: str
    product: Product
    reviews: list[Review] = field(default_factory=list)
    features: list[Feature] = field(default_factory=list)
    partition: dict[str, list[Feature]] = field(default_factory=lambda: {s: [] for s in SOURCES})
    rubrics: list[Rubric] = field(default_factory=list)
    implicit_rubric_ids: list[str] = field(default_factory=list)
    voucher: Voucher | None = None
    entity: EntitySpec | None = None
    # Set by the verbalizer (text only).
    user_query: str = ""
    persona: Persona | None = None
    clarification_script: ClarificationScript | None = None
    # Set by validation.
    validation_issues: list[str] = field(default_factory=list)
    rejection: str | None = None   # a reason code from reasons.REJECTION_REASONS, or None when valid
    match_count: int | None = None  # catalog products satisfying every rubric (uniqueness check)
    retry_count: int = 0
    meta: dict[str, Any] = field(default_factory=dict)


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

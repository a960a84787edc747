"""The plain data that flows through the construction stages (docs/original-harness.md §5).

sample -> extract (Features) -> voucher / opinions -> partition (Feature per source) -> rubrics (fixed in
code: id, type, field, expected_value, info_source) -> verbalize (text only) -> validate.
A Draft is built up stage by stage; `to_task()` (in pipeline.py) turns a finished one into a schema.Task.
The verbalizer may only set text fields (query, surfaces, persona noise, slot wording), never a rubric's
id, type, field, expected_value or info_source.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ecab.schema import ClarificationScript, Persona, Product, Review, Rubric, Voucher

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
    rejection: str | None = None   # a reason code from validate.REJECTION_REASONS, or None when valid
    match_count: int | None = None  # catalog products satisfying every rubric (uniqueness check)
    retry_count: int = 0
    meta: dict[str, Any] = field(default_factory=dict)

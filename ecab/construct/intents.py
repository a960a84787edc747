"""The 8 intents as data (docs/original-harness.md §5.3): sampling strategy, eligible fields per hidden source,
implicit minimum, opening styles and generation rules. Everything downstream reads these tables; nothing branches on an
intent's name except through them.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from ecab.fields import (BASE_CLARIFICATION_FIELDS, BASE_PERSONA_FIELDS, HIDEABLE_CLARIFICATION_FIELDS,
                         HIDEABLE_PERSONA_FIELDS, INTENTS, MIN_IMPLICIT_COUNT_BY_INTENT)

ALL_OPENING_STYLES = ("problem-first", "context-first", "direct-request", "question-first")

# docs/original-harness.md §5.2: the chance that an extracted field is kept, before any intent override.
DEFAULT_FIELD_PROBABILITY = {"average_rating": 0.3, "rating_number": 0.2, "price": 0.4, "store": 0.0,
                             "Brand": 0.2}


@dataclass(frozen=True)
class SamplingStrategy:
    """Filters a product must pass to be a candidate target for an intent (docs/original-harness.md §5.3 sampler)."""

    min_detail_fields: int = 6
    require_details_fields: tuple[str, ...] = ()
    min_rating: float | None = None
    min_rating_number: int | None = None
    require_price: bool = False
    require_content: bool = False      # features or description present
    min_implicit_eligible: int = 1
    min_reviews: int = 0


@dataclass(frozen=True)
class Intent:
    id: str
    name: str
    description: str
    sampling: SamplingStrategy
    persona_fields: frozenset[str]
    clarification_fields: frozenset[str]
    min_implicit: int
    opening_styles: tuple[str, ...] = ALL_OPENING_STYLES
    requires_voucher: bool = False
    requires_review_opinions: bool = False
    # Per-field keep probability overrides (on top of DEFAULT_FIELD_PROBABILITY).
    field_probability: dict[str, float] = field(default_factory=dict)

    def keep_probability(self, bare_field: str) -> float:
        if bare_field in self.field_probability:
            return self.field_probability[bare_field]
        return DEFAULT_FIELD_PROBABILITY.get(bare_field, 1.0)


def _fields(base: tuple[str, ...], drop: tuple[str, ...] = (), add: tuple[str, ...] = ()) -> frozenset[str]:
    return frozenset([f for f in base if f not in drop] + list(add))


def _build() -> dict[str, Intent]:
    moved = ("Item Form", "Scent")   # moved from persona to clarification for several intents
    rows = [
        Intent("product_search", "Basic Attribute Search",
               "The user directly specifies the attributes of the product they want.",
               SamplingStrategy(min_detail_fields=8),
               _fields(BASE_PERSONA_FIELDS), _fields(BASE_CLARIFICATION_FIELDS), 2),
        Intent("knowledge_reasoning", "Knowledge Reasoning Search",
               "Needs world or domain knowledge to map a need to an attribute; the query must not name it.",
               SamplingStrategy(min_detail_fields=8, require_content=True),
               _fields(BASE_PERSONA_FIELDS), _fields(BASE_CLARIFICATION_FIELDS), 3,
               opening_styles=("problem-first", "context-first", "direct-request")),
        # ecab keeps both rating features for this intent (the original left them to chance, so some of its
        # rating_quality tasks carry no rating requirement at all).
        Intent("rating_quality", "Rating & Quality Filter",
               "Explicit requirements on the review count and the rating.",
               SamplingStrategy(min_detail_fields=8, min_rating=4.0, min_rating_number=20),
               _fields(BASE_PERSONA_FIELDS, drop=moved),
               _fields(BASE_CLARIFICATION_FIELDS, drop=("average_rating", "rating_number"), add=moved), 2,
               field_probability={"average_rating": 1.0, "rating_number": 1.0}),
        Intent("feature_combination", "Multi-Feature Combination",
               "Four or more constraints across different dimensions.",
               SamplingStrategy(min_detail_fields=9),
               _fields(BASE_PERSONA_FIELDS), _fields(BASE_CLARIFICATION_FIELDS), 3),
        Intent("negative_constraint", "Negative Constraint Search",
               "Wants a product type but NOT certain attribute values.",
               SamplingStrategy(min_detail_fields=8),
               _fields(BASE_PERSONA_FIELDS, drop=moved + ("Compatible Phone Models", "Hard Drive",
                                                          "Memory Storage Capacity")),
               _fields(BASE_CLARIFICATION_FIELDS, drop=("Hardware Platform",), add=moved), 2),
        Intent("use_case_scenario", "Use Case Scenario",
               "A real-life situation from which the agent infers the attributes.",
               SamplingStrategy(min_detail_fields=8, require_content=True),
               _fields(BASE_PERSONA_FIELDS), _fields(BASE_CLARIFICATION_FIELDS), 3,
               opening_styles=("problem-first", "context-first")),
        Intent("coupon_budget", "Coupon & Budget Optimization",
               "A budget plus a discount voucher; the product must fit the budget after the voucher.",
               SamplingStrategy(min_detail_fields=8, require_price=True),
               _fields(BASE_PERSONA_FIELDS, drop=moved + ("Compatible Phone Models",)),
               _fields(BASE_CLARIFICATION_FIELDS,
                       drop=("average_rating", "rating_number", "price", "Hardware Platform"), add=moved), 2,
               requires_voucher=True),
        Intent("review_driven", "Review-Driven Recommendation",
               "The product's reviews must contain specific opinions.",
               SamplingStrategy(min_detail_fields=8, min_reviews=10),
               _fields(BASE_PERSONA_FIELDS, drop=moved + ("Compatible Phone Models",)),
               _fields(BASE_CLARIFICATION_FIELDS, drop=("Hardware Platform",), add=moved), 2,
               opening_styles=("review-targeted", "direct-request"), requires_review_opinions=True),
    ]
    table = {}
    for intent in rows:
        # The sampler requires as many implicit-eligible fields as the query will hide (docs/original-harness.md §5.2).
        intent = replace(intent, sampling=replace(
            intent.sampling, min_implicit_eligible=MIN_IMPLICIT_COUNT_BY_INTENT.get(intent.id, 1)))
        assert not intent.persona_fields & intent.clarification_fields, intent.id
        assert intent.min_implicit == MIN_IMPLICIT_COUNT_BY_INTENT[intent.id], intent.id
        # The generator's product lines vary in these fields (ecab/catalog/synthetic/lines.py): every intent
        # must be able to hide them, persona ones in the persona, clarification ones in the clarification.
        assert HIDEABLE_PERSONA_FIELDS <= intent.persona_fields, intent.id
        assert HIDEABLE_CLARIFICATION_FIELDS <= intent.clarification_fields, intent.id
        table[intent.id] = intent
    assert list(table) == INTENTS
    return table


INTENT_TABLE: dict[str, Intent] = _build()


def get_intent(intent: str | Intent) -> Intent:
    """The Intent record for an id; an unknown id is one clear error listing the known ones."""
    if isinstance(intent, Intent):
        return intent
    try:
        return INTENT_TABLE[intent]
    except KeyError:
        raise ValueError(f"unknown intent {intent!r}; expected one of {INTENTS}") from None

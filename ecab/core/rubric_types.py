"""One record per rubric type (issue 28, item 4): everything ecab knows about a type, in one place.

A `RubricType` holds what used to be spread over small tables keyed by type name in a dozen modules: the
shape of its expected_value, the rubric check that decides it (ecab/core/rubric_checks.py) and what that check
reads, how the LLM judge is told to decide it, where construction puts it and in which order it checks it,
the templates the template verbalizer words it with, and how a catalog=targets sibling fails it. Every module
that treats types differently reads the type's record (`type_of`) instead of naming types; a new rubric type is
a new record here (plus, when it needs a new kind of phrase, check or violation, that code where it lives).

`RUBRIC_TYPES` are the six types construction generates, in the order of `ecab.schema.RUBRIC_TYPES` (the same
names); `LEGACY_RUBRIC_TYPES` the one the original judge documents but never generates (store_match), accepted
when a foreign task file is read. The schema validates expected_value shapes itself (ecab/schema/rubric.py):
schema sits beside core and core imports it, so a record only names its shape (`value_shape`) and asks the
schema (`accepts`); tests/core/test_rubric_types.py pins both to the schema.

The kinds a record's string fields take (each consumer's code for a kind is where the consumer lives):
- value_kind (persona, clarification, leak checks, sibling numbers and pools): "text" (a phrase the field must
  carry), "excluded" (values the field must not carry), "range" (a number the field must fall in), "amount" (a
  budget the price after the voucher must fit), "opinion" (a claim some review must state);
- query_phrase (ecab/construct/verbalize/query.py): "attribute" (an explicit or clue post-modifier of the
  entity), "numeric" (a threshold post-modifier), "negative" (its own sentence naming the excluded values),
  "opinion" (review evidence to find), "budget" (the voucher and budget, last), "entity" (the entity phrase
  itself), "plain" ("sold by <value>", a post-modifier);
- violation (ecab/catalog/siblings/violate.py): "value" (another plausible value of the field), "excluded"
  (one of the excluded values present), "line" (another product line in the title), "store" (another store),
  "number" (numbers drawn outside the range, numbers.py), "review" (reviews without the opinion, make.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ecab.core.rubric_checks import (
    CheckInputs,
    CheckResult,
    ReviewMatcher,
    check_attribute_match,
    check_budget_match,
    check_entity_match,
    check_negative_attribute,
    check_numeric_range,
    check_review_opinion,
    check_store_match,
    no_product_verdict,
    stamp_verdict,
)
from ecab.schema import FormatError, Product, Review, Rubric, Verdict, Voucher

Check = Callable[[Rubric, Product, CheckInputs], CheckResult]

# A query rubric's keys in the released file (docs/original-harness.md §5.6 "Final rubric shapes"); a type's
# `extra_keys` go before info_source.
QUERY_RUBRIC_KEYS = ("id", "type", "field", "expected_value", "description", "query_surface", "info_source")
# A clarification slot's hidden info for a type without its own (a value the field must have).
_REQUIRES = "The shopper requires the {dim} to be {v}."


@dataclass(frozen=True)
class RubricType:
    """Everything about one rubric type. Templates are `str.format` templates; the names they may use are
    given per field."""

    name: str
    # -- the value ----------------------------------------------------------------------------------------
    value_kind: str                 # text | excluded | range | amount | opinion (module docstring)
    value_shape: str                # the expected_value shapes the schema accepts, in its words
    # -- judging (ecab/core/rubric_checks.py, ecab/judge/) ---------------------------------------------------
    check: Check                    # decides it against one product
    judge_rule: str                 # the LLM judge's rule for it (ecab/judge/llm.py, JUDGE_SYSTEM_PROMPT)
    reads_reviews: bool = False     # decided over the product's reviews by the injected review checker: reviews
    #                                 are fetched only for it, and it is checked after every other type
    uses_voucher: bool = False      # its verdict depends on the task's voucher
    extra_keys: tuple[str, ...] = ()   # rubric keys beyond a query rubric's that its record carries (released
    #                                    order) and its check reads
    llm_judged: bool = False        # the LLM judge decides it by default (judge.types, conf/judge/llm.yaml)
    # -- construction (ecab/construct/) ---------------------------------------------------------------------
    match_cost: int = 8             # uniqueness counting (validate.count_matches): cheap, selective first
    audit_cost: int = 8             # load-bearing audit (load_bearing.py), within a source: cheap first
    always_query: bool = False      # always stated in the query, never hidden in persona or clarification
    implicit_eligible: bool = False  # the query may state it through a clue instead of its value
    # -- verbalization (ecab/construct/rubrics.py, ecab/construct/verbalize/) -------------------------------
    query_phrase: str = "plain"     # how the query states it (module docstring)
    description: str = ""           # a rubric's description before verbalization ({v} value, {key} detail
    #                                 key); "": the feature's own rubric text
    query_hint: str = ""            # the hint for stating it ({v}, {key}); "": per field (field_hints, then
    #                                 the construction's per-field hints)
    field_hints: tuple[tuple[str, str], ...] = ()   # (field, hint template {v}) tried before query_hint
    hidden_info: str = _REQUIRES    # a clarification slot's hidden info ({dim}; {v} value; {values} the
    #                                 excluded values joined; {mod} the threshold phrase)
    # -- catalog=targets siblings (ecab/catalog/siblings/) ----------------------------------------------------
    violation: str = "value"        # how a sibling fails it (module docstring)

    def accepts(self, value: Any) -> bool:
        """Does the schema accept `value` as this type's expected_value?"""
        try:
            Rubric.from_dict({"id": "r", "type": self.name, "field": "f", "expected_value": value})
        except FormatError:
            return False
        return True

    def field_hint(self, field: str) -> str:
        """The hint template for stating this type on `field`: its field hint, else its query hint ("" when
        the construction's per-field hints decide)."""
        return dict(self.field_hints).get(field) or self.query_hint

    def query_keys(self) -> list[str]:
        """The key order of a verbalized query rubric of this type in the released file."""
        return [*QUERY_RUBRIC_KEYS[:-1], *self.extra_keys, QUERY_RUBRIC_KEYS[-1]]


ATTRIBUTE_MATCH = RubricType(
    name="attribute_match", value_kind="text", value_shape="a string",
    check=check_attribute_match,
    judge_rule='the field names where the value should be (e.g. details.Material). Check the details first; if '
               'absent there, the features and description may state it. Accept an exact equivalent or a value '
               'that is more specific than the requirement ("made of TPU" satisfies "Thermoplastic '
               'Polyurethane"); never accept a broader or merely related value ("Personal Computer" does not '
               'satisfy "Laptop").',
    match_cost=1, audit_cost=4, implicit_eligible=True, query_phrase="attribute", violation="value")

NUMERIC_RANGE = RubricType(
    name="numeric_range", value_kind="range",
    value_shape='a number, {"min"}, {"max"}, {"min","max"}, [x, y] or {"value", "op"}',
    check=check_numeric_range,
    judge_rule='expected is a number (exact), {"min":X}, {"max":X}, {"min":X,"max":Y}, [X, Y] (inclusive) or '
               '{"value":X,"op":">"|">="|"<"|"<="|"=="}; compare the product\'s value at the field.',
    match_cost=2, audit_cost=2, query_phrase="numeric",
    field_hints=(("average_rating", "Mention that it must be at least {v:g} stars."),
                 ("rating_number", "Mention that it must be at least {v} ratings."),
                 ("price", "Mention that it must be under ${v}.")),
    hidden_info="The shopper wants a product {mod}.", violation="number")

ENTITY_MATCH = RubricType(
    name="entity_match", value_kind="text", value_shape="a string",
    check=check_entity_match,
    judge_rule='the product must BE the named kind of thing; the same product type in other words is fine ("case '
               'for phone" matches "phone case"), a different category is not.',
    extra_keys=("canonical_entity", "title_span"),
    match_cost=0, audit_cost=0, query_phrase="entity", description="{v}", violation="line")

NEGATIVE_ATTRIBUTE = RubricType(
    name="negative_attribute", value_kind="excluded", value_shape="a list of strings",
    check=check_negative_attribute,
    judge_rule='expected lists EXCLUDED values; satisfied only when the product\'s value at the field clearly '
               'differs from every excluded value (a partial overlap such as "blue-green" against "blue" is NOT '
               'satisfied). An empty list excludes nothing.',
    match_cost=3, audit_cost=5, query_phrase="negative",
    description="Exclude concrete alternative values on the {key} dimension while keeping the target product "
                "value '{v}' valid",
    query_hint="Express a negative constraint on the {key} dimension by excluding other concrete values. "
               "Do not exclude the product's actual value '{v}'.",
    hidden_info="The shopper wants to avoid these {dim} values: {values}.", violation="excluded")

BUDGET_MATCH = RubricType(
    name="budget_match", value_kind="amount", value_shape="a number",
    check=check_budget_match,
    judge_rule="apply the voucher rules to THIS product's price (a coupon applies when the price reaches its "
               "threshold; stacked coupons apply in order, the second to the reduced price; for tiers the highest "
               "tier reached applies) and check the final price is at most the expected budget. Without a voucher "
               "compare the list price.",
    uses_voucher=True, match_cost=4, audit_cost=3, always_query=True, query_phrase="budget",
    description="The total cost after applying the voucher should be within the budget of ${v:.2f}",
    violation="number")

REVIEW_OPINION = RubricType(
    name="review_opinion", value_kind="opinion", value_shape='a string or {"opinion": str}',
    check=check_review_opinion,
    judge_rule="satisfied if at least one review of this product clearly expresses the same concrete claim as the "
               "opinion (wording may differ; a generic positive remark is not enough). With no reviews it is not "
               "satisfied.",
    reads_reviews=True, llm_judged=True, match_cost=9, audit_cost=9, always_query=True, query_phrase="opinion",
    description="A review of the recommended product should mention: {v}",
    query_hint="Mention that you want a product with reviews mentioning '{v}'. Frame it as review evidence you "
               "want to find, not as reviews the user has already read.",
    violation="review")

STORE_MATCH = RubricType(
    name="store_match", value_kind="text", value_shape="a string",
    check=check_store_match,
    judge_rule="the product comes from the named store.",
    match_cost=5, audit_cost=1, always_query=True, query_phrase="plain", violation="store")

# The types construction generates, in ecab.schema.RUBRIC_TYPES order; the legacy ones are only read.
RUBRIC_TYPES: tuple[RubricType, ...] = (ATTRIBUTE_MATCH, NUMERIC_RANGE, ENTITY_MATCH, NEGATIVE_ATTRIBUTE,
                                        BUDGET_MATCH, REVIEW_OPINION)
LEGACY_RUBRIC_TYPES: tuple[RubricType, ...] = (STORE_MATCH,)
ALL_RUBRIC_TYPES: tuple[RubricType, ...] = RUBRIC_TYPES + LEGACY_RUBRIC_TYPES
BY_NAME: dict[str, RubricType] = {t.name: t for t in ALL_RUBRIC_TYPES}
RUBRIC_TYPE_NAMES: tuple[str, ...] = tuple(t.name for t in RUBRIC_TYPES)


def type_of(rubric: Rubric | Any) -> RubricType:
    """The record of a rubric's type (a Rubric, a construction Feature, anything with `.type`, or a type name);
    a ValueError for a type no record describes."""
    name = rubric if isinstance(rubric, str) else getattr(rubric, "type", None)
    record = BY_NAME.get(name) if isinstance(name, str) else None
    if record is None:
        raise ValueError(f"no rule for rubric type {name!r}; expected one of {list(BY_NAME)}")
    return record


def names_where(test: Callable[[RubricType], bool]) -> tuple[str, ...]:
    """The names of the types (generated, then legacy) whose record passes `test`, in table order."""
    return tuple(t.name for t in ALL_RUBRIC_TYPES if test(t))


def reads_reviews(rubric: Rubric | Any) -> bool:
    """Is the rubric decided over the product's reviews? (False for a type no record describes.)"""
    record = BY_NAME.get(getattr(rubric, "type", None) or "")
    return record is not None and record.reads_reviews


def stated_values(rubric: Rubric) -> list[str]:
    """The literal values a rubric states, which text hiding it must not mention: every excluded value, a text
    value; none for a number, a budget or an opinion (a number is too common to mean a leak)."""
    kind = type_of(rubric).value_kind
    if kind == "excluded":
        return [str(v) for v in rubric.expected_value]
    if kind == "text" and isinstance(rubric.expected_value, str):
        return [rubric.expected_value]
    return []


def rubric_verdict(rubric: Rubric, product: Product | None, *, voucher: Voucher | None = None,
                   reviews: list[Review] | None = None, review_checker: ReviewMatcher | None = None) -> Verdict:
    """Decide one rubric against one product by its type's check; `voucher` prices budget_match,
    `review_checker` decides a review_opinion rubric over `reviews` (a ValueError when it is needed and not
    given, and for a type no record describes)."""
    if product is None:
        return no_product_verdict(rubric)
    record = BY_NAME.get(rubric.type)
    if record is None:
        raise ValueError(f"rubric {rubric.id!r}: field 'type': no rule for rubric type {rubric.type!r}")
    return stamp_verdict(rubric, record.check(rubric, product, CheckInputs(voucher, reviews, review_checker)))

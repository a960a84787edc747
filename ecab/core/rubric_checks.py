"""The rubric checks: one rubric decided against one product by rule (docs/original-harness.md §4.2-§4.4,
§8 items 11-15). Pure Python over a Product, deterministic, no I/O and no model: review_opinion is decided
by a review checker the caller injects (`ReviewMatcher`; the catalog's embedding checker,
ecab/catalog/review_match.py).

The rules judge (ecab/judge/rules.py), task construction's validation ("the target satisfies every rubric",
"how many catalog products satisfy every rubric") and catalog=targets' hard-negative siblings
(ecab/catalog/siblings/) all decide rubrics here, so they agree by construction. Every check has one
signature, (rubric, product, CheckInputs); which check decides which type is the `check` of the type's record,
and `rubric_verdict` (one rubric, one product) dispatches through those records: ecab/core/rubric_types.py.

The exact rule per type (normalization and phrase matching are in ecab/core/text.py):

- attribute_match (`details.<Key>`): the value is read with the alias-aware, case-insensitive
  `ecab.fields.lookup_detail` ("OS" answers for Operating System). Satisfied when the normalized expected
  value occurs in the normalized product value on token boundaries, or equals the whole value or one of
  its options once spaces are ignored. A multi-valued value (comma, semicolon, slash, pipe, list, dict)
  is matched option-wise by the same rule. Hence "Nylon" is in "Nylon, Silicone", "USB" is in "USB-C"
  (the product is more specific than the requirement), but "USB-C" is not in "USB" and "wired" is not in
  "wireless". When the details key is absent or its value does not match, the features bullets are read:
  only a bullet that contains the whole normalized expected phrase counts (a precise equivalent; the
  requirement is never broadened); a value shorter than 4 characters ("All", "Mac") counts only in a
  bullet that also names the field ("suitable for all skin types") or, for a capitalised acronym ("TPU",
  "PC"), where the bullet writes it in capitals too; and a purely numeric value ("1",
  "50") never counts from prose ("1 AC adapter and 1 power cord", "5 feet").
- negative_attribute: `expected_value` lists excluded values. Satisfied iff the field's value overlaps
  none of them, where overlap means either side is a phrase of the other ("blue-green" vs "blue" and
  "Bluetooth" vs "Bluetooth 5.0" both overlap). `[]` excludes nothing (the original's persona and
  clarification negatives): satisfied when the field exists. A missing field is NOT satisfied whatever
  the list, following the original judge's "ambiguous or missing -> not satisfied".
- numeric_range (average_rating, rating_number, price): `schema.NumericRange.contains`, every shape;
  a null or non-numeric value is not satisfied. Comparisons are exact, so a price equal to a strict
  "<" cap fails.
- budget_match: `voucher.apply(price) <= budget + 0.005` (the voucher rules applied to this product's
  own price, never the target's pre-computed price); null price is not satisfied; with no voucher the
  list price is compared.
- entity_match (`title`): satisfied when one of `title_span`, `canonical_entity` or `expected_value`
  occurs as a phrase in the normalized title, or all its keyword tokens (stopwords removed, simple plural
  strip) are title tokens in any order.
- store_match: the store equals the expected store, case-insensitively, whitespace collapsed.
- review_opinion: the injected `ReviewMatcher` (embedding similarity against review sentences); no
  reviews is not satisfied.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Protocol, Sequence

from ecab.core.text import (
    compact,
    contains_phrase,
    keyword_tokens,
    normalize,
    options,
    phrase_matches_value,
    value_text,
)
from ecab.fields import ALIASES_BY_CANONICAL, canonical_field, lookup_detail
from ecab.schema import NumericRange, Product, Review, Rubric, Verdict, Voucher

RULE = "rule"
EMBEDDING = "embedding"
NO_PRODUCT = "no_product"
NO_PRODUCT_REASON = "No valid product recommended"
BUDGET_TOLERANCE = 0.005  # a budget is stated in cents; float arithmetic must not fail an exact fit
NUMERIC_FIELDS = ("average_rating", "rating_number", "price")
# Product attributes a rubric field may name directly (anything else is read from `details`).
TOP_LEVEL_FIELDS = ("product_id", "title", "main_category", "store", "average_rating", "rating_number", "price",
                    "features", "description")


@dataclass(frozen=True)
class CheckInputs:
    """What a check may read besides the rubric and the product: the task's voucher (budget_match), the
    product's reviews and the review checker that decides an opinion over them (review_opinion)."""

    voucher: Voucher | None = None
    reviews: list[Review] | None = None
    review_checker: ReviewMatcher | None = None


NO_INPUTS = CheckInputs()


@dataclass(frozen=True)
class CheckResult:
    """What one check decided, before it is stamped with the rubric's identity."""

    satisfied: bool | None
    reasoning: str
    evidence: str = ""
    method: str = RULE
    score: float | None = None


# ---------------------------------------------------------------------------------------------------------
# Reading a field
# ---------------------------------------------------------------------------------------------------------

def _detail_key_used(details: dict[str, Any], field: str, value: Any) -> str:
    """The key under which `lookup_detail` found `value` (for evidence: shows "OS" when the alias answered)."""
    wanted = canonical_field(field.split(".", 1)[1] if field.startswith("details.") else field).casefold()
    same_value = [k for k, v in details.items() if v is value]
    for key in same_value:
        if canonical_field(str(key)).casefold() == wanted or str(key).casefold() == wanted:
            return str(key)
    return str(same_value[0]) if same_value else field


def field_value(product: Product, field: str) -> tuple[str, Any]:
    """(where it was found, value) for a rubric field; value None when absent or empty."""
    if not field.startswith("details.") and field in TOP_LEVEL_FIELDS:
        value = getattr(product, field)
        return field, (None if value in ("", [], {}) else value)
    value = lookup_detail(product.details, field)
    if value is None:
        return field, None
    return f"details[{_detail_key_used(product.details, field, value)!r}]", value


def _number(value: Any) -> float | None:
    """A numeric field as float; tolerates "1,234" strings from raw metadata; None when not a number."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(str(value).replace(",", "").strip())
    except ValueError:
        return None


def _short(value: Any, limit: int = 160) -> str:
    text = value_text(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---------------------------------------------------------------------------------------------------------
# Per-type checks
# ---------------------------------------------------------------------------------------------------------

# Words of a field name too generic to show that a bullet talks about that field.
_GENERIC_FIELD_WORDS = frozenset({"type", "level", "description", "range", "number", "technology", "feature",
                                  "special", "product", "recommended", "use", "size", "capacity"})


def _field_keywords(field: str) -> set[str]:
    """Tokens naming a detail field in prose: "Skin Type" -> {"skin"}, "Operating System" -> {"operating",
    "system", "os"} (aliases included)."""
    name = canonical_field(field.split(".", 1)[1] if field.startswith("details.") else field)
    names = [name, *ALIASES_BY_CANONICAL.get(name, [])]
    return {t for n in names for t in keyword_tokens(n)} - _GENERIC_FIELD_WORDS


def _is_number_like(expected_norm: str) -> bool:
    return compact(expected_norm).replace(",", "").replace(".", "").isdigit()


def _is_distinctive(expected_norm: str) -> bool:
    """A value that does not turn up in a bullet by accident: 4+ characters ("All", "Mac" and "PC" are
    not distinctive; "Black" and "Waterproof" are)."""
    return len(compact(expected_norm).replace(",", "")) >= 4


def _acronym_pattern(expected: str) -> re.Pattern | None:
    """For a capitalised short value ("TPU", "PC"), the case-sensitive whole-word pattern that finds it."""
    raw = expected.strip()
    if not (raw.isupper() and raw.replace(" ", "").isalnum()):
        return None
    return re.compile(r"(?<![A-Za-z0-9])" + re.escape(raw) + r"(?![A-Za-z0-9])")


def feature_bullet_stating(field: str, expected: str, features: Iterable[str]) -> str | None:
    """The first feature bullet that states the expected value as a whole phrase (see the module docstring
    for short and numeric values), or None."""
    expected_norm = normalize(expected)
    if _is_number_like(expected_norm):
        return None  # "1" in "1 AC adapter and 1 power cord", "5" in "5 feet": counts in prose are ambiguous
    short = not _is_distinctive(expected_norm)
    acronym = _acronym_pattern(expected) if short else None
    keywords = _field_keywords(field) if short else set()
    for bullet in features:
        if not isinstance(bullet, str):
            continue
        bullet_norm = normalize(bullet)
        if not contains_phrase(bullet_norm, expected_norm):
            continue
        if short and not (keywords & set(keyword_tokens(bullet_norm)) or (acronym and acronym.search(bullet))):
            continue
        return bullet
    return None


def check_attribute_match(rubric: Rubric, product: Product, inputs: CheckInputs = NO_INPUTS) -> CheckResult:
    expected = normalize(rubric.expected_value)
    if not expected:
        return CheckResult(False, "The rubric's expected value is empty after normalization.")
    where, value = field_value(product, rubric.field)
    if value is not None and phrase_matches_value(normalize(value_text(value)), expected):
        return CheckResult(True, f"{where} matches {rubric.expected_value!r}.", f"{where} = {_short(value)!r}")
    bullet = feature_bullet_stating(rubric.field, str(rubric.expected_value), product.features or [])
    if bullet is not None:
        return CheckResult(True, f"A feature bullet states {rubric.expected_value!r}.",
                       f"features: {_short(bullet, 240)!r}")
    found = f"{where} = {_short(value)!r}" if value is not None else f"{rubric.field} is absent"
    return CheckResult(False, f"{found}, which does not contain {rubric.expected_value!r}, and no feature bullet "
                          "states it.", found)


def _overlaps(value_norm: str, excluded_norm: str) -> bool:
    """Negative-constraint overlap: either side is a phrase of the other, option-wise."""
    if phrase_matches_value(value_norm, excluded_norm):
        return True
    return any(contains_phrase(excluded_norm, o) or compact(o) == compact(excluded_norm) for o in options(value_norm))


def check_negative_attribute(rubric: Rubric, product: Product, inputs: CheckInputs = NO_INPUTS) -> CheckResult:
    where, value = field_value(product, rubric.field)
    if value is None:
        return CheckResult(False, f"{rubric.field} is absent, so it cannot be shown to differ from the excluded "
                              "values (ambiguous or missing counts as not satisfied).", f"{rubric.field} is absent")
    shown = f"{where} = {_short(value)!r}"
    value_norm = normalize(value_text(value))
    for excluded in rubric.expected_value:
        if normalize(excluded) and _overlaps(value_norm, normalize(excluded)):
            return CheckResult(False, f"{shown} overlaps the excluded value {excluded!r}.", shown)
    if not any(normalize(e) for e in rubric.expected_value):
        return CheckResult(True, f"Nothing is excluded and {where} is present.", shown)
    return CheckResult(True, f"{shown} differs from every excluded value {list(rubric.expected_value)!r}.", shown)


def check_numeric_range(rubric: Rubric, product: Product, inputs: CheckInputs = NO_INPUTS) -> CheckResult:
    if rubric.field not in NUMERIC_FIELDS:
        where, raw = field_value(product, rubric.field)
    else:
        where, raw = rubric.field, getattr(product, rubric.field)
    number = _number(raw)
    if number is None:
        return CheckResult(False, f"{where} is {'missing' if raw is None else repr(raw)}, not a number.",
                       f"{where} = {raw!r}")
    ok = NumericRange.contains(rubric.expected_value, number)
    verb = "satisfies" if ok else "does not satisfy"
    return CheckResult(ok, f"{where} = {raw} {verb} {rubric.expected_value}.", f"{where} = {raw}")


def check_budget_match(rubric: Rubric, product: Product, inputs: CheckInputs = NO_INPUTS) -> CheckResult:
    voucher = inputs.voucher
    price = _number(product.price)
    budget = float(rubric.expected_value)
    if price is None:
        return CheckResult(False, "The product has no price, so the cost after the voucher is unknown.", "price = None")
    if voucher is None:
        final, arithmetic = round(price, 2), f"no voucher: final price {price:.2f}"
    else:
        final = voucher.apply(price)
        label = voucher.discount_type if voucher.kind == "simple" else voucher.kind
        arithmetic = (f"list price {price:.2f} - {label} voucher discount {price - final:.2f} "
                      f"= {final:.2f}")
    ok = final <= budget + BUDGET_TOLERANCE
    evidence = f"{arithmetic} {'<=' if ok else '>'} budget {budget:.2f}"
    return CheckResult(ok, f"Cost after voucher {final:.2f} is {'within' if ok else 'over'} the budget {budget:.2f}.",
                   evidence)


def entity_phrases(rubric: Rubric) -> list[str]:
    """The phrases that name the entity: title_span, canonical_entity (rubric extras), expected_value."""
    candidates = [rubric.extras.get("title_span"), rubric.extras.get("canonical_entity"), rubric.expected_value]
    phrases: list[str] = []
    for c in candidates:
        if isinstance(c, str) and c.strip() and c not in phrases:
            phrases.append(c)
    return phrases


class EntityMatcher:
    """An entity_match rubric's test, prepared once: its phrases normalized and tokenized, so that
    testing many titles (uniqueness counting meets every product of a category) costs one pass each."""

    def __init__(self, rubric: Rubric):
        self.phrases = entity_phrases(rubric)
        self._normalized = [normalize(p) for p in self.phrases]
        self._tokens = [keyword_tokens(p) for p in self.phrases]

    def match(self, title: str) -> tuple[str, list[str] | None] | None:
        """(phrase, None) when the title contains a phrase; (phrase, its keywords) when it has every
        keyword of one; None when it names none of them."""
        title_norm = normalize(title)
        for phrase, normalized in zip(self.phrases, self._normalized):
            if contains_phrase(title_norm, normalized):
                return phrase, None
        title_tokens = set(keyword_tokens(title))
        for phrase, tokens in zip(self.phrases, self._tokens):
            if tokens and all(t in title_tokens for t in tokens):
                return phrase, tokens
        return None


def check_entity_match(rubric: Rubric, product: Product, inputs: CheckInputs = NO_INPUTS) -> CheckResult:
    title = product.title or ""
    matcher = EntityMatcher(rubric)
    hit = matcher.match(title)
    evidence = f"title = {_short(title, 240)!r}"
    if hit is None:
        return CheckResult(False, f"The title names none of {matcher.phrases!r}.", evidence)
    phrase, tokens = hit
    if tokens is None:
        return CheckResult(True, f"The title contains {phrase!r}.", evidence)
    return CheckResult(True, f"The title has every keyword of {phrase!r} ({', '.join(tokens)}).", evidence)


def _store_key(text: Any) -> str:
    return " ".join(str(text or "").split()).casefold()


def check_store_match(rubric: Rubric, product: Product, inputs: CheckInputs = NO_INPUTS) -> CheckResult:
    ok = bool(_store_key(product.store)) and _store_key(product.store) == _store_key(rubric.expected_value)
    return CheckResult(ok, f"Store {product.store!r} {'is' if ok else 'is not'} {rubric.expected_value!r}.",
                   f"store = {product.store!r}")


class OpinionMatch(Protocol):
    """What a review checker found for one opinion (read-only: a frozen record satisfies it)."""

    @property
    def satisfied(self) -> bool: ...

    @property
    def score(self) -> float: ...         # the best sentence's similarity (1.0 for a lexical match)

    @property
    def sentence(self) -> str: ...        # the best review sentence

    @property
    def lexical(self) -> bool: ...        # found as a phrase, before any embedding

    @property
    def n_sentences(self) -> int: ...


class ReviewMatcher(Protocol):
    """Decides whether some review states an opinion (ecab/catalog/review_match.py's ReviewChecker)."""

    threshold: float

    def check(self, opinion: str, reviews: Sequence[Review], product_id: str | None = None) -> OpinionMatch: ...


def check_review_opinion(rubric: Rubric, product: Product, inputs: CheckInputs = NO_INPUTS) -> CheckResult:
    reviews, review_checker = inputs.reviews, inputs.review_checker
    if not reviews:
        return CheckResult(False, "No review data for this product, so the opinion cannot be found.",
                           "0 reviews", method=EMBEDDING)
    if review_checker is None:
        raise ValueError(f"rubric {rubric.id!r}: review_opinion over reviews needs a review checker "
                         "(ecab.catalog.review_match)")
    match = review_checker.check(rubric.opinion, reviews, product_id=product.product_id)
    how = "lexical match" if match.lexical else f"cosine {match.score:.3f} vs threshold {review_checker.threshold:.3f}"
    verb = "expresses" if match.satisfied else "does not clearly express"
    return CheckResult(match.satisfied,
                       f"The closest review sentence {verb} {rubric.opinion!r} ({how}; {match.n_sentences} sentences "
                       f"from {len(reviews)} reviews).",
                       f"best sentence: {match.sentence!r}", method=EMBEDDING, score=round(match.score, 4))


# ---------------------------------------------------------------------------------------------------------
# A result as a verdict (one rubric against one product, dispatched by type: rubric_types.rubric_verdict)
# ---------------------------------------------------------------------------------------------------------

def stamp_verdict(rubric: Rubric, result: CheckResult) -> Verdict:
    """A check's result as the rubric's Verdict (its id, type, source and field)."""
    return Verdict(rubric_id=rubric.id, type=rubric.type, info_source=rubric.info_source, field=rubric.field,
                   satisfied=result.satisfied, method=result.method, evidence=result.evidence,
                   reasoning=result.reasoning, score=result.score)


def no_product_verdict(rubric: Rubric) -> Verdict:
    """The verdict of every rubric when no valid product was recommended (no check is run)."""
    return stamp_verdict(rubric, CheckResult(False, NO_PRODUCT_REASON, method=NO_PRODUCT))

"""The tests every step of sibling making keeps to: a rubric decided by the rubric checks the rules judge uses
(ecab/core/rubric_checks.py), with the task's voucher and, for review_opinion, the injected review checker;
and whether a violation is REAL, not only nominal (issue 27, cue 5): a listing that fails a detail rubric
must not keep the required value under a near-duplicate key ("Special features" next to "Special Feature",
"OS" next to "Operating System") nor state it in its title, bullets or description, where a person (or an
attacker comparing a listing's details with its own text) would read it as compliant."""
from __future__ import annotations

import re
from typing import Any, Iterable

from ecab.core.rubric_checks import ReviewMatcher, feature_bullet_stating
from ecab.core.rubric_types import rubric_verdict, type_of
from ecab.core.text import compact, normalize
from ecab.fields import ALIASES_BY_CANONICAL, canonical_field
from ecab.schema import Product, Review, Rubric, Task


def satisfies(rubric: Rubric, product: Product, task: Task, reviews: list[Review] | None = None,
              review_checker: ReviewMatcher | None = None) -> bool:
    """Is `rubric` satisfied (True, not unscored) by `product` under `task`'s voucher?"""
    return rubric_verdict(rubric, product, voucher=task.voucher, reviews=reviews,
                          review_checker=review_checker).satisfied is True


# ---------------------------------------------------------------------------------------------------------
# Near-duplicate ("twin") detail keys
# ---------------------------------------------------------------------------------------------------------

def _bare(field_name: str) -> str:
    return field_name.split(".", 1)[1] if field_name.startswith("details.") else field_name


def key_form(key: str) -> str:
    """A detail key with case, spacing, punctuation and plural endings ignored, aliases resolved first
    ("Special features" and "Special Feature" -> "specialfeature"; "OS" -> "operatingsystem")."""
    return "".join(stem(w) for w in words(canonical_field(str(key))))


def field_forms(field_name: str) -> set[str]:
    """The key forms (`key_form`) of a field: its canonical spelling's and every alias's."""
    name = canonical_field(_bare(field_name))
    return {key_form(s) for s in (name, *ALIASES_BY_CANONICAL.get(name, []))}


def twin_keys(details: dict[str, Any] | None, field_name: str) -> list[str]:
    """Every key of `details` that names the field `field_name` (its canonical spelling, an alias, or a
    near-duplicate of either), in the listing's order."""
    forms = field_forms(field_name)
    return [k for k in (details or {}) if key_form(k) in forms]


# ---------------------------------------------------------------------------------------------------------
# Text stating a value
# ---------------------------------------------------------------------------------------------------------

_WORD = re.compile(r"[^\W_]+")


def words(text: Any) -> list[str]:
    return _WORD.findall(normalize(text))


def stem(word: str) -> str:
    """A crude singular: "inches" -> "inch", "trackers" -> "tracker" (both sides of a comparison go through
    it, so only consistency matters)."""
    if len(word) > 3 and not word[-1].isdigit():
        if word.endswith("es") and word[:-2].endswith(("x", "z", "ch", "sh", "ss")):
            return word[:-2]
        if word.endswith("s") and not word.endswith("ss"):
            return word[:-1]
    return word


def distinctive(value: Any) -> bool:
    """Long enough, and not a bare number, to be found in prose without hitting unrelated words (the judge's
    own notion for bullets: 4+ characters)."""
    text = compact(normalize(value)).replace(",", "")
    return len(text) >= 4 and not text.replace(".", "").isdigit()


def states_value(field_name: str, value: Any, text: str) -> bool:
    """Does `text` state `value` for the field: by the judge's rule for a feature bullet (a whole phrase;
    short values only next to the field's name or as a capitalised acronym), or, for a distinctive value,
    its words in order with plural endings ignored ("1.69 Inch" states "1.69 Inches")?"""
    if not isinstance(text, str) or not text:
        return False
    if feature_bullet_stating(field_name, str(value), [text]) is not None:
        return True
    if not distinctive(value):
        return False
    needle = [stem(w) for w in words(value)]
    hay = [stem(w) for w in words(text)]
    n = len(needle)
    return bool(n) and any(hay[i:i + n] == needle for i in range(len(hay) - n + 1))


def text_segments(product: Product) -> Iterable[str]:
    yield product.title or ""
    yield from (b for b in product.features or [] if isinstance(b, str))
    yield from (d for d in product.description or [] if isinstance(d, str))


def nominal_violation(rubric: Rubric, product: Product, task: Task) -> str | None:
    """Why a listing that fails `rubric` by the judge would still read as compliant, or None when the
    violation is real: a twin key holding a value that satisfies the rubric, or (a rubric failed by another
    value: attribute_match) text that states the required value. Only rubrics failed through a detail value
    (violation "value" or "excluded") are concerned."""
    violation = type_of(rubric).violation
    if violation not in ("value", "excluded") or not rubric.field.startswith("details."):
        return None
    name = canonical_field(_bare(rubric.field))
    for key in twin_keys(product.details, rubric.field):
        probe = Product(product_id=product.product_id, title="", main_category=product.main_category,
                        details={name: product.details[key]})
        if satisfies(rubric, probe, task):
            return f"detail {key!r} = {product.details[key]!r} still satisfies {rubric.id}"
    if violation == "value":
        expected = str(rubric.expected_value)
        for text in text_segments(product):
            if states_value(rubric.field, expected, text):
                return f"the listing's text still states {expected!r}: {text[:80]!r}"
    return None

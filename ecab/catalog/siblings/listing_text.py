"""Editing a listing's text: the detail key a rubric field reads, a phrase replaced on word boundaries however
it is punctuated and whatever its plural ending (as the judge's normalization reads it), a value said anew
wherever the listing's text states the old one, an option of a multi-valued value swapped, words of a
product line swapped."""
from __future__ import annotations

import re
from typing import Any

from ecab.catalog.siblings.checks import states_value, stem
from ecab.catalog.siblings.pools import OPTION_SEPARATORS, canonical
from ecab.core.text import normalize, singular
from ecab.fields import ALIASES_BY_CANONICAL
from ecab.schema import Product


_EMPTY = (None, "", [], {})
_WORD_CHARS = "A-Za-z0-9"


def detail_key(details: dict[str, Any], field_name: str) -> str | None:
    """The key of `details` that answers for a rubric field (canonical spelling first, then aliases, then
    case-insensitively), as `ecab.fields.lookup_detail` reads it; None when absent."""
    name = canonical(field_name)
    spellings = (name, *ALIASES_BY_CANONICAL.get(name, []))
    for s in spellings:
        if details.get(s) not in _EMPTY:
            return s
    for s in spellings:
        for key, value in details.items():
            if str(key).lower() == s.lower() and value not in _EMPTY:
                return key
    return None


def phrase_pattern(phrase: str) -> re.Pattern:
    return re.compile(rf"(?<![{_WORD_CHARS}]){re.escape(phrase)}(?![{_WORD_CHARS}])", re.IGNORECASE)


def _loose_pattern(phrase: str) -> re.Pattern | None:
    """`phrase` as the judge reads it: its normalized words in order, any punctuation or spacing between
    them ("USB Type C" finds "USB Type-C", "Android,Ios" finds "Android, iOS"), any plural ending ("1.69
    Inches" finds "1.69 Inch"), on word boundaries."""
    words = re.findall(r"[^\W_]+", normalize(phrase))
    if not words:
        return None
    return re.compile(rf"(?<![{_WORD_CHARS}])" + r"[\W_]*".join(_word_pattern(w) for w in words)
                      + rf"(?![{_WORD_CHARS}])", re.IGNORECASE)


def _word_pattern(word: str) -> str:
    base = stem(word)
    return re.escape(base) + ("" if word[-1].isdigit() else "(?:es|s)?")


def replace_phrase(text: str, old: str, new: str) -> str:
    """`old` replaced by `new` on word boundaries, case-insensitively, however it is punctuated."""
    if not old or not isinstance(text, str):
        return text
    pattern = _loose_pattern(old)
    return pattern.sub(lambda m: _match_case(m.group(0), new), text) if pattern is not None else text


def _match_case(word: str, replacement: str) -> str:
    """Written in lower case where the replaced text was ("bumper" -> "basic case"), else as given."""
    return replacement.lower() if word.islower() else replacement


def swap_words(text: str, token: str, replacement: str) -> str:
    """Every word of `text` whose singular keyword form is `token` replaced (case and plural kept)."""
    def sub(m: re.Match) -> str:
        word = m.group(0)
        if singular(word.lower()) != token and word.lower() != token:
            return word
        plural = word.lower().endswith("s") and not token.endswith("s") and not replacement.endswith("s")
        return _match_case(word, replacement + ("s" if plural else ""))
    return re.sub(rf"[{_WORD_CHARS}]+", sub, text or "")


def rewrite_stated(product: Product, field_name: str, old: str, new: str) -> None:
    """Say `new` in every text segment (title, bullets, description) that states `old` for the field
    (`checks.states_value`): a listing whose details changed does not keep saying the old value."""
    def fix(text: str) -> str:
        return replace_phrase(text, old, new) if states_value(field_name, old, text) else text
    product.title = fix(product.title or "")
    product.features = [fix(b) if isinstance(b, str) else b for b in product.features or []]
    product.description = [fix(d) if isinstance(d, str) else d for d in product.description or []]


def replace_option(value: str, expected: str, new: str) -> str:
    """The value with the option that states `expected` swapped for `new` (dropped when `new` is already
    one of its options; the whole value when the expected phrase is not written in it)."""
    options = [o for o in OPTION_SEPARATORS.split(value) if o.strip()]
    if len(options) > 1 and normalize(new) in {normalize(o) for o in options}:
        pattern = _loose_pattern(expected)
        rest = [o for o in options if pattern is None or not pattern.search(o)]
        if rest and len(rest) < len(options):
            separator = OPTION_SEPARATORS.search(value).group(0)
            return separator.join(o.strip() for o in rest)
    replaced = replace_phrase(value, expected, new)
    return replaced if replaced != value else new

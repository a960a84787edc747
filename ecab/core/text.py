"""Text normalization and phrase matching shared by the rubric checks (core/rubric_checks.py) and the review checker
(catalog/review_match.py).

Amazon metadata spells the same value many ways ("Wi-Fi" / "Wi Fi", "Ac/dc", "Black & White",
"Kindle (10th Generation, 2019)"), so both sides of every comparison go through `normalize` first:

- Unicode NFKC, casefold, combining marks dropped; trademark signs (TM, R, C) dropped;
  apostrophes dropped ("Kid's" -> "kids");
- "&" reads as "and" ("Black & White" == "black and white");
- list separators (comma, semicolon, slash, pipe, newline) become one canonical separator ",", so a
  multi-valued value keeps its option boundaries ("Nylon, Silicone" -> "nylon,silicone");
- every other punctuation mark, hyphen and underscore becomes a space ("USB-C" -> "usb c");
  a dot between two digits is kept ("1.69" stays one token);
- runs of spaces collapse.

`contains_phrase(haystack, needle)` is the one matching rule: the normalized needle occurs in the
normalized haystack starting and ending on token boundaries. So "usb" is found in "usb c" (USB-C is a
USB connection: the product is more specific than the requirement) but "usb c" is not found in "usb"
(that would broaden the requirement), and "wired" is not found in "wireless". Scripts written without
spaces between words (CJK, Thai) have no token boundaries, so there a plain substring counts.
"""
from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Any, Iterable

SEPARATOR = ","
_TRADEMARKS = re.compile(r"[\u2122\u00ae\u00a9\u2120]|\((?:tm|r|c)\)", re.IGNORECASE)
_APOSTROPHES = re.compile(r"['\u2019\u2018`\u00b4]")
_AMPERSAND = re.compile(r"\s*&\s*")
_LIST_SEPARATORS = re.compile(r"\s*[,;/|\n\r\t\u3001\uff0c\uff1b]+\s*")
_DECIMAL_DOT = re.compile(r"(?<=\d)\.(?=\d)")
_DOT_PLACEHOLDER = "\u0000"
_OTHER_PUNCTUATION = re.compile(r"[^\w,\u0000]+|_+")
_SPACES = re.compile(r" +")
_SEPARATOR_RUNS = re.compile(r" ?,[ ,]*")

STOPWORDS = frozenset({"the", "a", "an", "for", "with", "and", "or", "of"})


def normalize(text: Any) -> str:
    """The canonical comparison form of a value (see the module docstring)."""
    if text is None:
        return ""
    return _normalize_str(str(text))


# The judge normalizes the same titles, bullets and values for every rubric of every task that meets a
# product (construction's uniqueness count meets each catalog product many times), so results are cached.
@lru_cache(maxsize=1 << 16)
def _normalize_str(s: str) -> str:
    s = _TRADEMARKS.sub(" ", s)
    s = unicodedata.normalize("NFKC", s).casefold()
    # Combining marks left after NFKC composition (Thai, Devanagari vowel signs) are dropped, not spaced,
    # so a word keeps one token whether or not its source kept the marks.
    s = "".join(c for c in s if unicodedata.category(c) != "Mn")
    s = _APOSTROPHES.sub("", s)
    s = _AMPERSAND.sub(" and ", s)
    s = _LIST_SEPARATORS.sub(SEPARATOR, s)
    s = _DECIMAL_DOT.sub(_DOT_PLACEHOLDER, s)
    s = _OTHER_PUNCTUATION.sub(" ", s)
    s = s.replace(_DOT_PLACEHOLDER, ".")
    s = _SPACES.sub(" ", s)
    s = _SEPARATOR_RUNS.sub(SEPARATOR, s)
    return s.strip(" ,")


def value_text(value: Any) -> str:
    """A detail value of any JSON shape as one string; list items and dict values become options."""
    if value is None:
        return ""
    if isinstance(value, dict):
        return SEPARATOR.join(value_text(v) for v in value.values() if v not in (None, "", [], {}))
    if isinstance(value, (list, tuple)):
        return SEPARATOR.join(value_text(v) for v in value if v not in (None, "", [], {}))
    return str(value)


def options(normalized: str) -> list[str]:
    """The options of an already normalized multi-valued value."""
    return [o.strip() for o in normalized.split(SEPARATOR) if o.strip()]


def compact(normalized: str) -> str:
    """A normalized value without spaces, so "wi fi" == "wifi" and "smart watch" == "smartwatch"."""
    return normalized.replace(" ", "")


def _is_spaced_word_char(c: str) -> bool:
    """A letter or digit of a script that separates words with spaces (Latin, Greek, Cyrillic, ...)."""
    return c.isalnum() and ord(c) < 0x0E00


def contains_phrase(haystack: str, needle: str) -> bool:
    """True when normalized `needle` occurs in normalized `haystack` on token boundaries.

    Both arguments must already be normalized. An empty needle never matches.
    """
    if not needle:
        return False
    start = haystack.find(needle)
    while start != -1:
        end = start + len(needle)
        left_ok = start == 0 or not (_is_spaced_word_char(haystack[start - 1]) and _is_spaced_word_char(needle[0]))
        right_ok = end == len(haystack) or not (_is_spaced_word_char(haystack[end])
                                                 and _is_spaced_word_char(needle[-1]))
        # A kept decimal dot glues digits: "1" is not a token of "1.69".
        if left_ok and start > 0 and haystack[start - 1] == "." and needle[0].isdigit():
            left_ok = False
        if right_ok and end < len(haystack) and haystack[end] == "." and needle[-1].isdigit():
            right_ok = False
        if left_ok and right_ok:
            return True
        start = haystack.find(needle, start + 1)
    return False


def phrase_matches_value(value_norm: str, expected_norm: str) -> bool:
    """The attribute rule: the expected phrase is in the value on token boundaries, or it equals the
    whole value or one of its options once spaces are ignored ("Wi-Fi" vs "WiFi")."""
    if contains_phrase(value_norm, expected_norm):
        return True
    target = compact(expected_norm)
    return bool(target) and (compact(value_norm) == target or any(compact(o) == target for o in options(value_norm)))


def singular(token: str) -> str:
    """The simple plural strip of the original's keyword tokens: "ies" -> "y", a trailing "s" dropped."""
    if len(token) > 4 and token.endswith("ies"):
        return token[:-3] + "y"
    if len(token) > 3 and token.endswith("s") and not token.endswith("ss"):
        return token[:-1]
    return token


def keyword_tokens(text: Any) -> list[str]:
    """Normalized, stopword-free, singularized tokens of `text` (order kept, duplicates removed)."""
    return list(_keyword_tokens(normalize(text)))


@lru_cache(maxsize=1 << 16)
def _keyword_tokens(normalized: str) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for token in normalized.replace(SEPARATOR, " ").split():
        if token not in STOPWORDS:
            seen.setdefault(singular(token), None)
    return tuple(seen)


def any_phrase_in(texts: Iterable[str], needle_norm: str) -> str | None:
    """The first text whose normalized form contains the normalized needle as a phrase, else None."""
    for text in texts:
        if contains_phrase(normalize(text), needle_norm):
            return text
    return None

"""Text helpers of the generator: {Key} placeholders filled from a listing's values, the options of a
multi-valued string, phrase matching on word boundaries."""
from __future__ import annotations

import re

PLACEHOLDER = re.compile(r"\{([^{}]+)\}")
TOKENS = re.compile(r"[a-z0-9]+")


def phrase_in(needle: str, hay: str) -> bool:
    """`needle` occurs in `hay` on word boundaries, case and punctuation aside."""
    n, h = " ".join(TOKENS.findall(needle.lower())), " ".join(TOKENS.findall(hay.lower()))
    return bool(n) and f" {n} " in f" {h} "


def value_options(value: str) -> list[str]:
    return [o.strip() for o in re.split(r"[,/|]", value) if o.strip()]


def first_option(value: str) -> str:
    """The display form of a possibly multi-valued string: its first option."""
    for sep in (",", "/", "|"):
        if sep in value:
            return value.split(sep, 1)[0].strip()
    return value


def fill(template: str, values: dict[str, str], noun: str, short: bool = False) -> str | None:
    """Fill {Key} placeholders; None if a key is missing or empty (the caller drops that fragment)."""
    missing = False

    def one(match: re.Match) -> str:
        nonlocal missing
        key = match.group(1)
        if key == "noun":
            return noun
        value = values.get(key)
        if not value or "See more" in value:
            missing = True
            return ""
        return first_option(value) if short or ", " in value else value

    text = PLACEHOLDER.sub(one, template)
    return None if missing else text

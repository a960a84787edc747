"""Implicit clues: one-hop paraphrases hiding an attribute value (docs/original-harness.md §5.6 QueryBuilder).

An implicit query rubric is stated through a clue that maps uniquely to its value without containing it
("Bluetooth" -> "the short-range wireless tech with a blue runic logo", "Cream" -> "a thick, semi-solid
emulsion"). A clue goes beyond a synonym: it uses world knowledge, a problem and its solution, a scenario
or a distinctive physical property. Every clue is a noun phrase, so the verbalizer can wrap it per field
("made of <clue>", "that connects via <clue>", "designed for <clue>").

Coverage: every value of every implicit-eligible field in the synthetic catalog's value pools
(`ecab.catalog.synthetic.PRODUCT_TYPES`), plus common Amazon values. Multi-option values ("Nylon,
Silicone") get a clue when each option has one. A value without a clue is not implicit-eligible in
practice: the rubric stage asks `has_clue` before choosing it. The table itself is data, in clue_table.py;
this module parses it once and answers which clues fit a value and a product.

Rule enforced by the tests: no clue contains its value, nor any >= 3-letter word of its value.
"""
from __future__ import annotations

import random
import re

from ecab.construct.clue_table import CLUE_TABLE
from ecab.core.text import SEPARATOR, contains_phrase, normalize, options

# A clue may start with "[word, word]": it then fits only products whose entity phrase or title contains
# one of those words ("Full Size = [keyboard] a layout that keeps the number pad" must not describe a
# tripod). Every value with such a clue also has an unrestricted one (a test checks it), so a value that
# has a clue keeps one for every product.
_SCOPE = re.compile(r"^\[([^\]]+)\]\s*")


def _parse_line(line: str) -> tuple[str, list[tuple[str, tuple[str, ...]]]]:
    value, _, rest = line.partition(" = ")
    value = value.strip().strip('"')
    found = []
    for part in rest.split("|"):
        part = part.strip()
        m = _SCOPE.match(part)
        scope = tuple(normalize(w) for w in m.group(1).split(",") if w.strip()) if m else ()
        text = part[m.end():].strip() if m else part
        if text:
            found.append((text, scope))
    return value, found


def _build() -> tuple[dict[str, dict[str, list[str]]], dict[tuple[str, str], tuple[str, ...]]]:
    table: dict[str, dict[str, list[str]]] = {}
    scopes: dict[tuple[str, str], tuple[str, ...]] = {}
    for field, block in CLUE_TABLE.items():
        rows = table.setdefault(field, {})
        for line in block.strip().splitlines():
            if not line.strip():
                continue
            value, found = _parse_line(line)
            if not value or not found:
                raise ValueError(f"clue_table.py: field {field!r}: malformed clue line {line!r}")
            for text, scope in found:
                rows.setdefault(normalize(value), []).append(text)
                if scope:
                    scopes[(field, text)] = scope
    return table, scopes


CLUES, CLUE_SCOPES = _build()   # field -> normalized value -> clues; (field, clue) -> product words


def _bare(field: str | None) -> str:
    field = field or ""
    return field.split(".", 1)[1] if field.startswith("details.") else field


def fits(field: str | None, clue: str, context: str | None) -> bool:
    """Whether a clue suits the product described by `context` (entity phrase + title); without a
    context every clue counts (the rubric stage only asks whether some clue exists)."""
    scope = CLUE_SCOPES.get((_bare(field), clue))
    if not scope or context is None:
        return True
    text = normalize(context)
    return any(contains_phrase(text, w) or contains_phrase(text, w + "s") for w in scope)


def clues_for(field: str | None, value: object, context: str | None = None) -> list[str]:
    """Every clue for the value of that field that fits the product ([] when none). A multi-option value
    without its own line gets one composed clue when every option has a clue."""
    bare = _bare(field)
    rows = CLUES.get(bare)
    if not rows or value is None:
        return []
    key = normalize(value)
    if key in rows:
        return [c for c in rows[key] if fits(bare, c, context)]
    parts = options(key) if SEPARATOR in key else []
    firsts = [next((c for c in rows.get(p, []) if fits(bare, c, context)), None) for p in parts]
    if len(parts) >= 2 and all(firsts):
        return [" and ".join(firsts) if len(firsts) == 2 else ", ".join(firsts[:-1]) + " and " + firsts[-1]]
    return []


def has_clue(field: str | None, value: object, context: str | None = None) -> bool:
    """True when `clue_for` can hide this value (the rubric stage picks implicit rubrics only then)."""
    return bool(clues_for(field, value, context))


def clue_for(field: str | None, value: object, rng: random.Random, avoid: tuple[str, ...] = (),
             context: str | None = None) -> str | None:
    """One clue for the value that fits the product (chosen with rng when several exist), or None.
    Clues that mention a word of `avoid` (values hidden elsewhere in the task) are skipped when another
    clue is left."""
    found = clues_for(field, value, context)
    if avoid:
        clean = [c for c in found if not any(_mentions(c, a) for a in avoid)]
        found = clean or found
    return rng.choice(found) if found else None


def _mentions(text: str, value: str) -> bool:
    v = normalize(value)
    return len(v) > 2 and contains_phrase(normalize(text), v)

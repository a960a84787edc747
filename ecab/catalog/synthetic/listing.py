"""A listing's text and details: its title, feature bullets and description, and its details dict in the
family's layout (canonical keys, aliases, type extras and the noise keys real listings carry)."""
from __future__ import annotations

import random

from ecab.catalog.synthetic.model import Family
from ecab.catalog.synthetic.product_type import ProductType
from ecab.catalog.synthetic.seeding import format_day
from ecab.catalog.synthetic.tables.names import COUNTRIES
from ecab.catalog.synthetic.text import TOKENS, fill


def listing_title(family: Family, values: dict[str, str]) -> str:
    noun = family.ptype.title_noun
    parts = [fill(seg, values, noun, short=True) for seg in family.title_segments]
    return family.title_joiner.join(p for p in parts if p).replace("  ", " ").strip()


_POOL_PHRASES: dict[str, list[tuple[str, str]]] = {}


def _pool_phrases(ptype: ProductType) -> list[tuple[str, str]]:
    """(key, " tokens ") of every distinctive (4+ character) value of the type's pools."""
    if ptype.key not in _POOL_PHRASES:
        _POOL_PHRASES[ptype.key] = [(k, f" {' '.join(TOKENS.findall(v.lower()))} ")
                                    for k, pool in ptype.value_pools.items() for v in pool
                                    if len("".join(TOKENS.findall(v.lower()))) >= 4]
    return _POOL_PHRASES[ptype.key]


def _states_other_value(text: str, ptype: ProductType, values: dict[str, str]) -> bool:
    """Whether `text` names a value of the type's pools that this listing does not carry (a line's
    listings share bullet text, which must not claim another listing's spec)."""
    hay = f" {' '.join(TOKENS.findall(text.lower()))} "
    for key, phrase in _pool_phrases(ptype):
        if phrase in hay:
            own = f" {' '.join(TOKENS.findall((values.get(key) or '').lower()))} "
            if phrase not in own:
                return True
    return False


def feature_bullets(family: Family, values: dict[str, str], rng: random.Random) -> list[str]:
    if rng.random() < 0.12:
        return []
    noun = family.ptype.title_noun.lower()
    line = family.is_line
    bullets = []
    for i, point in enumerate(family.feature_plan):
        text = fill(point, values, noun)
        if text is None or (line and _states_other_value(text, family.ptype, values)):
            continue
        header = family.keywords[i % len(family.keywords)]
        if line and _states_other_value(header, family.ptype, values):
            header = ""
        if not header:
            pass
        elif family.feature_header == "caps":
            text = f"{header.upper()}: {text}"
        elif family.feature_header == "lenticular":
            text = f"\u3010{header}\u3011 {text}"
        elif family.feature_header == "check":
            text = f"\u2714 {text}"
        bullets.append(text)
    return bullets[:rng.randint(3, 6)]


def description_paragraphs(family: Family, values: dict[str, str], rng: random.Random) -> list[str]:
    if rng.random() < 0.45:
        return []
    noun = family.ptype.title_noun.lower()
    filled = [t for t in (fill(p, values, noun) for p in family.feature_plan) if t]
    intro = f"The {family.brand} {noun} is made for everyday use."
    if family.description_style == 0:
        return [" ".join([intro, *filled[:2]])]
    if family.description_style == 1:
        return ["Product Description", " ".join(filled[:3]) or intro]
    return [intro, f"Package includes: 1 x {family.ptype.title_noun}."]


def detail_dict(family: Family, values: dict[str, str], member: int, index: int, rng: random.Random,
                rating_number: int) -> dict:
    details: dict = {}
    for emitted, source in family.layout:
        if source.startswith("x:"):
            details[emitted] = family.extras[source[2:]]
        elif source == "#manufacturer":
            details[emitted] = family.members[member].manufacturer
        elif source.startswith("#"):
            details[emitted] = _noise_value(family, source, member, index, rng, rating_number)
        else:
            details[emitted] = values[source]
    return details


def _noise_value(family: Family, source: str, member: int, index: int, rng: random.Random, rating_number: int):
    if source == "#dims":
        return family.dims
    if source == "#weight":
        return family.weight
    if source == "#model":
        # 7919 is prime to 9000: any 9,000 consecutive listings get distinct numbers (a line's included)
        return f"{family.model_prefix}-{(index * 7919) % 9000 + 1000}"
    if source == "#bsr":
        sub_rank = max(1, int(20000 / (rating_number + 1) ** 0.6 * rng.lognormvariate(0, 0.5)))
        root = "Electronics" if family.main_category == "All Electronics" else family.main_category
        if rng.random() < 0.3:
            return {family.ptype.subcategory: sub_rank}
        return {root: sub_rank * rng.randint(8, 40), family.ptype.subcategory: sub_rank}
    if source == "#discontinued":
        return "No" if rng.random() < 0.95 else "Yes"
    if source == "#display":
        return "Wireless"
    if source == "#origin":
        return COUNTRIES[family.index % len(COUNTRIES)]
    if source == "#manufacturer":
        return family.manufacturer
    if source == "#date":
        return format_day(family.first_day + member * 11)
    return ""  # "#blank"

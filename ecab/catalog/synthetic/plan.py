"""A family's plan, drawn once and shared by its members: which detail keys it lists and their values
(some multi-valued, some spoiled as real metadata is), how each key is spelled (canonical or alias), the
order of the details dict, and the title's segments."""
from __future__ import annotations

import random

from ecab.catalog.synthetic.product_type import ProductType
from ecab.catalog.synthetic.tables.names import FOREIGN_VALUES
from ecab.catalog.synthetic.text import PLACEHOLDER, fill
from ecab.fields import ALIASES_BY_CANONICAL, IMPLICIT_ELIGIBLE_FIELDS, MULTI_OPTION_FIELDS

# Multi-option fields (plus Special Feature) may hold several values in one string, as real listings do.
MULTI_KEYS = frozenset(MULTI_OPTION_FIELDS) | {"Special Feature"}
_SEPARATORS = (", ", ", ", ",", "/", " / ")
_ODD_KINDS = (("caps", 0.06), ("see_more", 0.05), ("numeric", 0.03), ("empty", 0.04), ("foreign", 0.015))
_SEE_MORE_KEYS = ("Compatible Phone Models", "Compatible Devices", "Special Feature",
                  "Recommended Uses For Product", "Product Benefits")
_NUMERIC_KEYS = ("Color", "Style", "Pattern", "Finish Type", "Material Feature")


def _join_options(rng: random.Random, pool: tuple[str, ...], separator: str) -> str:
    """2-3 distinct options of a pool in one string: "Nylon, Silicone", "Black/Blue"."""
    atomic = [v for v in pool if not any(sep in v for sep in (",", "/", "|"))]
    if len(atomic) < 2:
        return rng.choice(pool)
    return separator.join(rng.sample(atomic, min(len(atomic), rng.choice((2, 2, 3)))))


def choose_keys(rng: random.Random, ptype: ProductType, optional_share: float = 0.6) -> list[str]:
    keys = ["Brand", *ptype.core]
    keys += [k for k in ptype.optional if rng.random() < optional_share]
    return keys


def base_values(rng: random.Random, ptype: ProductType, keys: list[str], brand: str,
                variant_keys: set[str]) -> dict[str, str]:
    pools = ptype.value_pools
    separator = rng.choice(_SEPARATORS)
    values = {"Brand": brand}
    for key in keys[1:]:
        pool = pools[key]
        multi_p = 0.5 if key == "Special Feature" else 0.2
        if key in MULTI_KEYS and key not in variant_keys and len(pool) >= 3 and rng.random() < multi_p:
            values[key] = _join_options(rng, pool, separator)
        else:
            values[key] = rng.choice(pool)
    return values


def apply_odd_value(rng: random.Random, family_values: dict[str, str], ptype: ProductType,
                    keys: list[str], variant_keys: set[str]) -> str | None:
    """Spoil one non-variant value now and then, as real metadata is (docs/original-harness.md §5.4, cleaning);
    returns the spoiled key."""
    roll, kind = rng.random(), None
    for name, p in _ODD_KINDS:
        if roll < p:
            kind = name
            break
        roll -= p
    if kind is None:
        return None
    free = [k for k in keys if k != "Brand" and k not in variant_keys]
    if kind == "see_more":
        candidates = [k for k in free if k in _SEE_MORE_KEYS]
    elif kind == "numeric":
        candidates = [k for k in free if k in _NUMERIC_KEYS]
    elif kind == "empty":
        candidates = [k for k in free if k in ptype.optional]  # never an always-present key
    elif kind == "foreign":
        candidates = [k for k in free if k in FOREIGN_VALUES]
    else:
        candidates = free
    if not candidates:
        return None
    key = rng.choice(candidates)
    value = family_values[key]
    if kind == "caps":
        family_values[key] = value.upper()
    elif kind == "numeric":
        family_values[key] = rng.choice(("1", "2", "01", "100", "2023", "5"))
    elif kind == "empty":
        family_values[key] = ""
    elif kind == "foreign":
        family_values[key] = FOREIGN_VALUES[key]
    else:  # a long marketing blurb cut off by the page, as scraped
        noun = ptype.title_noun.lower()
        shared = {k: v for k, v in family_values.items() if k not in variant_keys}  # true for every member
        blurb = " ".join(t for t in (fill(p, shared, noun) for p in ptype.selling_points) if t)
        long_text = f"{value}, {blurb} {value.upper()}: {blurb}"
        family_values[key] = long_text[:330].rstrip() + "\u2026   See more"
    return key


def alias_modes(rng: random.Random, keys: list[str], values: dict[str, str]) -> dict[str, str]:
    """Per aliasable key: "canonical", "both" (alias key next to the canonical one) or "alias" (alias only).

    An alias-only key no longer counts as implicit-eligible in the original DB (exact key names), so
    alias-only is turned back into "both" where it would leave fewer than 3 implicit-eligible keys.
    """
    style = rng.random()
    modes = {}
    for key in keys:
        if key not in ALIASES_BY_CANONICAL:
            continue
        roll = rng.random()
        if style < 0.45:
            modes[key] = "canonical"
        elif roll < 0.5:
            modes[key] = "both"
        elif roll < 0.75:
            modes[key] = "alias"
        else:
            modes[key] = "canonical"
    exact_implicit = [k for k in keys if k in IMPLICIT_ELIGIBLE_FIELDS and values[k] and modes.get(k) != "alias"]
    for key in keys:
        if len(exact_implicit) >= 3:
            break
        if modes.get(key) == "alias" and key in IMPLICIT_ELIGIBLE_FIELDS and values[key]:
            modes[key] = "both"
            exact_implicit.append(key)
    return modes


def detail_layout(rng: random.Random, ptype: ProductType, keys: list[str], modes: dict[str, str],
                  main_category: str) -> list[tuple[str, str]]:
    """The emitted key order: either spec/noise keys first (phones, electronics) or Brand and details first."""
    details, aliases_both = [], []
    for key in keys:
        mode = modes.get(key, "canonical")
        alias = ALIASES_BY_CANONICAL.get(key, [None])[0]
        if mode == "alias":
            details.append((alias, key))
        else:
            details.append((key, key))
            if mode == "both":
                aliases_both.append((alias, key))
    extras = [(name, "x:" + name) for name in ptype.extras if rng.random() < 0.7]
    dims_key = "Product Dimensions" if rng.random() < 0.58 else "Package Dimensions"
    noise = [(dims_key, "#dims"), ("Item Weight", "#weight")]
    if rng.random() < 0.65:
        noise.append(("Item model number", "#model"))
    if rng.random() < 0.65:
        noise.append(("Best Sellers Rank", "#bsr"))
    if rng.random() < 0.35:
        noise.append(("Is Discontinued By Manufacturer", "#discontinued"))
    if main_category == "Cell Phones & Accessories" and rng.random() < 0.5:
        noise.append(("Other display features", "#display"))
    if rng.random() < 0.15:
        noise.append(("Country of Origin", "#origin"))
    tail = [("Manufacturer", "#manufacturer")] if rng.random() < 0.85 else []
    if rng.random() < 0.9:
        tail.append(("Date First Available", "#date"))
    if rng.random() < 0.004:  # real listings once carry an empty-string key
        tail.append(("", "#blank"))
    if rng.random() < 0.5:
        brand_entry, rest = details[0], details[1:]
        rest.insert(rng.randrange(len(rest) + 1), brand_entry)
        return noise + aliases_both + extras + rest + tail
    rng.shuffle(noise)
    return details + extras + aliases_both + noise + tail


def title_plan(rng: random.Random, ptype: ProductType, keys: list[str], primary: str) -> tuple[list[str], str]:
    """Title segments with {Key} placeholders, shared by a family so member titles differ only in values."""
    present = set(keys)
    attrs = [a for a in ptype.title_attrs if all(k in present for k in PLACEHOLDER.findall(a))]
    primary_attrs = [a for a in attrs if "{" + primary + "}" in a]
    others = [a for a in attrs if a not in primary_attrs]
    rng.shuffle(others)
    if rng.random() < 0.15:  # the variant is not in the title at all: members share one title
        primary_attrs = []
    style = rng.choices(("short", "medium", "long", "bracket"), (0.2, 0.35, 0.3, 0.15))[0]
    noun = "{noun}"
    if style == "short":
        picked, kws = primary_attrs[:1], rng.sample(ptype.keywords, rng.randint(0, 1))
    elif style == "medium":
        picked, kws = primary_attrs + others[:1], rng.sample(ptype.keywords, rng.randint(1, 2))
    else:
        picked, kws = primary_attrs + others, rng.sample(ptype.keywords, rng.randint(2, 4))
    if style == "bracket":
        head = ["{Brand}", "".join(f"[{k}]" for k in kws), noun]
        body = picked
        joiner = " "
    else:
        lead_kw = kws[:1] and not kws[0].startswith(("with ", "for "))
        head = ["{Brand}", *kws[:1], noun] if lead_kw and rng.random() < 0.5 else ["{Brand}", noun, *kws[:1]]
        body = picked + kws[1:]
        rng.shuffle(body)
        joiner = rng.choice((", ", " ", " - ", ", "))
    brand_place = rng.random()
    if brand_place < 0.12:
        head = head[1:]                       # brand only in details and store
    elif brand_place < 0.2:
        head = head[1:]
        body = body + ["by {Brand}"]
    segments = [" ".join(head)] + body
    if style != "bracket" and "{Color}" in " ".join(segments) and rng.random() < 0.3:
        segments = [s for s in segments if s != "{Color}"] + ["({Color})"]
    return segments, joiner

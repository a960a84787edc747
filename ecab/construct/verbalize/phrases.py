"""Per-field phrases shared by the query and the clarification verbalizers: a value stated as a post-modifier
of the entity ("made of Nylon", "with a USB-C connector"), a clue wrapped per field, negatives, item counts,
numeric thresholds, and the voucher with every number."""
from __future__ import annotations

import random
from typing import Any

from ecab.construct.verbalize.tables import (DEFAULT_IMPLICIT_MODS, DIMENSION, EXPLICIT_MODS, GERUND_MODS,
                                             IMPLICIT_MODS, NEGATIVE_MODS)
from ecab.construct.verbalize.text import (PROPER_WORDS, a_or_an, bare_field, fmt_money, fmt_number, fmt_percent,
                                           join_words, plain, render_value, value_options, with_article)
from ecab.schema import Voucher


# ---------------------------------------------------------------------------------------------------------
# Explicit post-modifiers: the value stated literally
# ---------------------------------------------------------------------------------------------------------

# Words that make a value an adjective ("that is waterproof"), not a thing ("with the timer feature").
ADJECTIVE_ENDINGS = ("able", "ible", "proof", "less", "free", "resistant", "friendly", "weight", "duty", "ic",
                     "ed", "ive", "ful", "lit", "lasting", "wearing", "caring", "repellent", "safe")
ADJECTIVES = frozenset({"slim", "compact", "rugged", "portable", "travel", "electric", "manual", "natural",
                        "organic", "vegan", "non-toxic", "mild", "waterproof", "weatherproof", "lightweight"})
# Recommended uses that read as "for <x> use" rather than "for <x>".
USE_NOUNS = frozenset({"home", "office", "outdoor", "car", "truck", "salon", "studio", "school", "work",
                       "bedside", "party", "shower", "monitor", "mask", "journal", "night"})
PHOTO_SUBJECTS = frozenset({"portrait", "landscape", "wildlife", "sports"})
STAND_ALONE_MOUNTS = ("mount", "stand", "plate")
MOUNT_USES = frozenset({"desktop", "tabletop", "handheld", "portable", "floor standing"})


def is_adjective(text: str) -> bool:
    low = text.lower()
    return low in ADJECTIVES or low.split()[-1].endswith(ADJECTIVE_ENDINGS)


def _several(value: Any) -> bool:
    return len(value_options(value)) > 1


def _special_feature(value: str, p: str) -> list[str]:
    if _several(value):
        return [f"with {p} features", f"featuring {p}"]
    if is_adjective(p):
        return [f"that is {p}", f"that's {p}"]
    if p.lower().startswith("built-in"):
        return [f"with {with_article(p)}"]
    if p.split()[-1].endswith("ing"):                        # "with fast charging"
        return [f"with {p}", f"that supports {p}"]
    return [f"with the {p} feature", f"that has the {p} feature"]


def _product_benefits(value: str, p: str) -> list[str]:
    if all(is_adjective(o) or o.split()[-1].endswith("ing") for o in value_options(p)):
        return [f"that is {p}", f"that's {p}"]
    if p.lower() == "volume":
        return [f"that adds {p}"]
    return [f"with {p}", f"that offers {p}"]


def _connectivity(value: str, p: str) -> list[str]:
    if p.lower() in ("wired", "wireless"):
        return [f"with a {p} connection"]
    return [f"with {p} connectivity", f"that connects via {p}"]


def _connector(value: str, p: str) -> list[str]:
    if p.lower() == "wireless":
        return [f"with a {p} connection instead of a plug"]
    if _several(value):
        return [f"with {render_value(value)} connectors"]
    return [f"with {with_article(render_value(value))} connector", f"that uses {with_article(render_value(value))} connector"]


def _compatible_devices(value: str, p: str) -> list[str]:
    last = value_options(p)[-1]
    if last.endswith("s") or last.lower() in PROPER_WORDS:
        return [f"compatible with {p}", f"that works with {p}"]
    return [f"compatible with any {p}", f"that works with any {p}"]


def _age_range(value: str, p: str) -> list[str]:
    if p.lower() in ("adult", "kid", "teen", "child", "toddler", "baby"):
        return [f"made for {p}s", f"suitable for {p}s"]
    if p.lower().startswith("all"):
        return [f"suitable for {p}"]
    return [f"meant for the {p} age range"]


def _power_source(value: str, p: str) -> list[str]:
    low = p.lower()
    if low == "not required":
        return [f"where a power source is {p}"]
    if low.endswith("powered") or is_adjective(p) or low == "corded electric":
        return [f"that is {p}"]
    if len(p.split()) > 1:                                      # "an AC adapter", "a rechargeable battery"
        return [f"powered by {with_article(p)}"]
    return [f"powered by {p}", f"that runs on {p} power"]


def _mounting(value: str, p: str) -> list[str]:
    low = p.lower()
    if low in MOUNT_USES:
        return [f"for {p} use", f"built for {p} use"]
    if low.split()[-1] in STAND_ALONE_MOUNTS:
        return [f"with {with_article(p)}"]
    return [f"with {with_article(p + ' mount')}"]


def _water_resistance(value: str, p: str) -> list[str]:
    if p.upper().startswith("IP"):
        return [f"rated {p}", f"with {with_article(p)} rating"]
    return [f"that is {p}"]


def _recommended_use(value: str, p: str) -> list[str]:
    low = p.lower()
    last = low.split()[-1]
    if low in ("face", "face and neck"):
        phrase = f"use on the {p}"
    elif _several(value) and all(o.lower() in USE_NOUNS or o.lower() == "suv" for o in value_options(p)):
        phrase = f"{p} use"
    elif not _several(value) and last in USE_NOUNS:
        phrase = f"{p} use"
    elif low in PHOTO_SUBJECTS and not low.endswith("photography"):
        phrase = f"{p} photography"
    else:
        phrase = p
    return [f"meant for {phrase}", f"recommended for {phrase}"]


def _hair_or_skin(kind: str) -> Any:
    def mods(value: str, p: str) -> list[str]:
        if p.lower() == "all":
            return [f"for {p} {kind} types", f"suited to {p} {kind} types"]
        return [f"for {p} {kind}", f"made for {p} {kind}" if kind == "hair" else f"suited to {p} {kind}"]
    return mods


def _scent(value: str, p: str) -> list[str]:
    return [f"that is {p}"] if is_adjective(p) or p.lower() == "unscented" else EXPLICIT_MODS["Scent"]


def _shell(value: str, p: str) -> list[str]:
    return [f"with {with_article(p)}"] if p.lower().endswith("shell") else EXPLICIT_MODS["Shell Type"]


def _point(value: str, p: str) -> list[str]:
    return [f"with {with_article(p)}"] if p.lower().endswith("tip") else EXPLICIT_MODS["Point Type"]


def _phone_models(value: str, p: str) -> list[str]:
    return [f"with {p} phone compatibility"] if p.lower() == "universal" else EXPLICIT_MODS["Compatible Phone Models"]


def _closure(value: str, p: str) -> list[str]:
    return [f"with the closure type {p}"] if p.lower() == "none" else EXPLICIT_MODS["Closure"]


def _color(value: str, p: str) -> list[str]:
    if p.lower() in ("assorted", "multicolor", "multicolored", "multi"):
        return [f"in {p} colors"]
    return EXPLICIT_MODS["Color"]


# Fields whose values need a per-value choice of phrasing: (value as given, plain value) -> templates.
EXPLICIT_RULES: dict[str, Any] = {
    "Special Feature": _special_feature, "Product Benefits": _product_benefits,
    "Connectivity Technology": _connectivity, "Connector Type": _connector,
    "Compatible Devices": _compatible_devices, "Age Range (Description)": _age_range,
    "Power Source": _power_source, "Mounting Type": _mounting, "Water Resistance Level": _water_resistance,
    "Recommended Uses For Product": _recommended_use, "Hair Type": _hair_or_skin("hair"),
    "Skin Type": _hair_or_skin("skin"), "Scent": _scent, "Shell Type": _shell, "Point Type": _point,
    "Compatible Phone Models": _phone_models, "Closure": _closure, "Color": _color,
}


def explicit_mod(field: str, value: Any, rng: random.Random, keep_case: bool = False) -> str:
    """The post-modifier stating `value` of `field` literally (every template contains the value, so the
    query states it: checked by validation). `keep_case` writes the value exactly as given (slot answers
    quote it verbatim, like the original's)."""
    bare = bare_field(field)
    v = render_value(value)
    p = v if keep_case else plain(value)
    rule = EXPLICIT_RULES.get(bare)
    templates = rule(str(value), p) if rule else EXPLICIT_MODS.get(bare, [f"with the {dimension(field)} {{v}}"])
    return rng.choice(templates).format(v=v, p=p, a_v=with_article(v), a_p=with_article(p))


# ---------------------------------------------------------------------------------------------------------
# Implicit post-modifiers: a clue wrapped per field
# ---------------------------------------------------------------------------------------------------------

GERUND_READY_FIELDS = frozenset({"Mounting Type", "Recommended Uses For Product"})
NOT_GERUNDS = frozenset({"something", "anything", "nothing", "everything", "thing", "ring", "string", "king",
                         "spring", "wing", "sling", "swing", "ceiling", "bring"})


def implicit_mods(bare: str, clue: str) -> list[str]:
    """Wrappers for a clue; a clue that is an activity ("counting your steps") needs a verb-friendly one."""
    first = clue.split()[0].lower() if clue.split() else ""
    if first.endswith("ing") and first not in NOT_GERUNDS and bare not in GERUND_READY_FIELDS:
        return GERUND_MODS
    return IMPLICIT_MODS.get(bare, DEFAULT_IMPLICIT_MODS)


# ---------------------------------------------------------------------------------------------------------
# Dimensions, negatives, item counts and numeric thresholds
# ---------------------------------------------------------------------------------------------------------

def dimension(field: str) -> str:
    bare = bare_field(field)
    return DIMENSION.get(bare, bare.lower())


def negative_mod(field: str, excluded: list[str], keep_case: bool = False) -> str:
    bare = bare_field(field)
    keep_case = keep_case or bare in ("Brand", "Color")
    listed = join_words([str(v) if keep_case else plain(v) for v in excluded], "or")
    template = NEGATIVE_MODS.get(bare)
    if bare == "Mounting Type":   # "a wall mount or desk stand", "a clamp mount"
        ends = all(str(v).lower().split()[-1] in STAND_ALONE_MOUNTS for v in excluded if str(v).split())
        return "with " + with_article(listed if ends else f"{listed} mount")
    if template is None:
        return "with " + with_article(f"{listed} {dimension(field)}")
    return template.format(list=listed, a_list=with_article(listed))


SINGLE_ITEM_VALUES = {"1", "1 count", "1 pack of 1", "1 item", "1 piece", "1 pack", "one"}


def number_of_items_mod(value: str, rng: random.Random) -> str:
    """Number of Items hints (docs/original-harness.md §5.2): single-item listing, exact N-item pack, else the exact
    phrase."""
    v = " ".join(str(value).split())
    if v.lower() in SINGLE_ITEM_VALUES:
        return rng.choice(["sold as a single-item listing", "offered as a single-item listing"])
    head = v.split()[0] if v.split() else ""
    if head.isdigit() and v.isdigit():
        return rng.choice([f"in a pack of exactly {v}", f"sold as a set of exactly {v}"])
    return f"with the package count {v}"


def numeric_mod(field: str, ev: Any) -> str:
    """An explicit threshold phrase for average_rating / rating_number / price (every shape)."""
    unit = {"average_rating": ("rated ", " stars"), "rating_number": ("with ", " ratings"),
            "price": ("priced ", "")}.get(field, (f"with {dimension(field)} ", ""))
    money = "$" if field == "price" else ""

    def q(x: Any) -> str:
        return money + fmt_number(x)

    prefix, suffix = unit
    if isinstance(ev, dict) and "op" in ev:
        words = {">": "above", ">=": "at least", "<": "under", "<=": "at most", "==": "exactly"}[ev["op"]]
        return f"{prefix}{words} {q(ev['value'])}{suffix}"
    if isinstance(ev, dict):
        if "min" in ev and "max" in ev:
            return f"{prefix}between {q(ev['min'])} and {q(ev['max'])}{suffix}"
        if "min" in ev:
            return f"{prefix}at least {q(ev['min'])}{suffix}"
        return f"{prefix}at most {q(ev['max'])}{suffix}"
    if isinstance(ev, list):
        return f"{prefix}between {q(ev[0])} and {q(ev[1])}{suffix}"
    return f"{prefix}exactly {q(ev)}{suffix}"


def numeric_values(ev: Any) -> list[str]:
    """The numbers of a numeric expected_value as written by `fmt_number` (for answer checks)."""
    if isinstance(ev, dict):
        return [fmt_number(v) for k, v in ev.items() if k != "op"]
    if isinstance(ev, list):
        return [fmt_number(v) for v in ev]
    return [fmt_number(ev)]


# ---------------------------------------------------------------------------------------------------------
# Voucher text (coupon_budget): every number of the voucher and the budget
# ---------------------------------------------------------------------------------------------------------

def _coupon_terms(discount_type: str, face_value, discount, cap) -> str:
    if discount_type == "fixed":
        return f"{fmt_money(face_value)} off"
    text = f"{fmt_percent(discount)} off"
    return text + (f" capped at {fmt_money(cap)}" if cap is not None else "")


def voucher_phrase(voucher: Voucher, rng: random.Random) -> str:
    """The voucher described with every number (docs/original-harness.md §5.6 budget hint)."""
    kind = voucher.kind
    if kind == "simple":
        owner = voucher.voucher_type or "store"
        if voucher.discount_type == "fixed":
            return rng.choice([
                f"a {owner} coupon worth {fmt_money(voucher.face_value)} on orders of at least "
                f"{fmt_money(voucher.threshold)}",
                f"{a_or_an(fmt_money(voucher.face_value))} {owner} coupon for orders of {fmt_money(voucher.threshold)} "
                f"or more"])
        cap = f", capped at {fmt_money(voucher.cap)}" if voucher.cap is not None else ""
        return (f"{a_or_an(fmt_percent(voucher.discount))} {owner} coupon on orders of at least "
                f"{fmt_money(voucher.threshold)}{cap}")
    if kind == "tiered":
        tiers = sorted(voucher.tiers or [], key=lambda t: t.tier)
        parts = [f"tier {t.tier} gives {_coupon_terms(t.discount_type, t.face_value, t.discount, t.cap)} on "
                 f"orders of at least {fmt_money(t.threshold)}" for t in tiers]
        active = voucher.active_tier or 1
        return (f"a tiered {voucher.voucher_type or 'store'} coupon where {join_words(parts)}, "
                f"and tier {active} applies to this purchase")
    coupons = sorted(voucher.coupons or [], key=lambda c: c.coupon_index)
    ordinals = ["first", "then", "and finally"]
    parts = []
    for i, c in enumerate(coupons):
        lead = ordinals[min(i, len(ordinals) - 1)]
        parts.append(f"{lead} a {c.voucher_type or 'store'} coupon of "
                     f"{_coupon_terms(c.discount_type, c.face_value, c.discount, c.cap)} on orders of at least "
                     f"{fmt_money(c.threshold)}")
    count = {2: "two", 3: "three"}.get(len(coupons), str(len(coupons)))
    return f"{count} stacked coupons applied in order, " + ", ".join(parts)


def budget_surface(voucher: Voucher | None, budget: Any, rng: random.Random) -> str:
    total = fmt_money(budget)
    if voucher is None:
        return f"a final total of at most {total}"
    coupon = voucher_phrase(voucher, rng)
    return rng.choice([
        f"{coupon}, so the final total after the discount must be at most {total}",
        f"{coupon}, and my total after the discount has to stay within {total}",
        f"{coupon}, so the final price must come to no more than {total}",
    ])

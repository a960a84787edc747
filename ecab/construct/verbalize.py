"""Template verbalizer: turns a locked rubric plan into text (SPEC §5.6 QueryBuilder, §5.8, §5.9).

It writes only text: the user query, each query rubric's `description` / `query_surface`, the persona
(`product_requirements` from the persona rubrics plus whitelisted noise) and the clarification script.
It never touches a rubric's id, type, field, expected_value or info_source; validation compares a
fingerprint of those before and after (`validate.rubric_lock`).

Every query rubric is realised as one *surface* phrase that is placed verbatim in the query, so the
query/rubric alignment holds by construction:

- explicit attribute: a per-field post-modifier of the entity ("made of Nylon", "in Black", "with a
  USB-C connector", "compatible with iPhone 14", "sold as a single-item listing");
- implicit attribute: a per-field wrapper around a one-hop clue from clues.py ("that connects via the
  short-range wireless tech with a blue runic logo"), never the literal value;
- numeric: explicit thresholds ("rated at least 4.5 stars", "with at least 200 ratings", "priced under $30");
- negative: the excluded values spelled out ("not in Blue or Red");
- budget: the voucher with every number, and the budget;
- review opinion: the opinion text itself, framed as review evidence to find.

Sentences come from several opening styles per intent (intents.py) and varied frames, all chosen with
the caller's rng, so the output is deterministic for a given rng state. Filler text (problems,
contexts) is never allowed to contain a hidden or implicit value.
"""
from __future__ import annotations

import random
from typing import Any, Iterable

from ecab.construct import clues
from ecab.construct.draft import Draft
from ecab.construct.intents import get_intent
from ecab.fields import SAFE_NOISE_FIELDS, persona_key
from ecab.judge.normalize import contains_phrase, normalize
from ecab.schema import ClarificationScript, ClarificationSlot, Persona, Rubric, Voucher

# ---------------------------------------------------------------------------------------------------------
# Rubric record shapes (the released file's key orders, SPEC §5.6 "Final rubric shapes")
# ---------------------------------------------------------------------------------------------------------

QUERY_RUBRIC_KEYS = ["id", "type", "field", "expected_value", "description", "query_surface", "info_source"]
ENTITY_RUBRIC_KEYS = ["id", "type", "field", "expected_value", "description", "query_surface", "canonical_entity",
                      "title_span", "info_source"]
HIDDEN_RUBRIC_KEYS = ["id", "description", "type", "field", "expected_value", "info_source", "implicit_eligible",
                      "must_hide_value", "query_hint"]
# Scaffold keys the original's compiler drops from query rubrics once they are verbalized.
SCAFFOLD_KEYS = ("implicit_eligible", "must_hide_value", "query_hint")

DEFAULT_RESPONSE = ("Hmm, I'm not sure about that. Could you ask me about something more specific? "
                    "Like what features or specs I'm looking for?")
EMPTY_SCRIPT_RESPONSE = "I think I've covered everything in my initial request."
MAX_CLARIFICATION_TURNS = 10
MIN_KEYWORDS, MAX_KEYWORDS = 7, 10


# ---------------------------------------------------------------------------------------------------------
# Small text helpers
# ---------------------------------------------------------------------------------------------------------

def bare_field(field: str) -> str:
    return field.split(".", 1)[1] if field.startswith("details.") else field


def fmt_number(x: Any) -> str:
    """4.0 -> "4", 4.5 -> "4.5", 1000 -> "1000" (thresholds are written without trailing zeros)."""
    x = float(x)
    return str(int(x)) if x == int(x) else f"{x:.2f}".rstrip("0").rstrip(".")


def fmt_money(x: Any) -> str:
    """Voucher money is always in cents: "$2.19", "$200.00"."""
    return f"${float(x):.2f}"


def fmt_percent(fraction: Any) -> str:
    return fmt_number(round(float(fraction) * 100, 2)) + "%"


def join_words(items: list[str], conj: str = "and") -> str:
    if len(items) <= 1:
        return "".join(items)
    if len(items) == 2:
        return f"{items[0]} {conj} {items[1]}"
    return ", ".join(items[:-1]) + f", {conj} {items[-1]}"


def with_article(phrase: str) -> str:
    """"a phone case", "an AC adapter", "keycaps" (a plural head noun takes no article)."""
    last = phrase.split()[-1].lower() if phrase.split() else ""
    if last.endswith("s") and not last.endswith(("ss", "us", "is")):
        return phrase
    return ("an " if phrase[:1].lower() in "aeiou" else "a ") + phrase


def a_or_an(word: str) -> str:
    """"an 8%", "an 11%", "a 9%", "an apple" (by sound for the numbers a voucher can show)."""
    digits = word[: len(word) - len(word.lstrip("0123456789"))]
    vowel = word[:1].lower() in "aeiou" or digits.startswith("8") or digits in ("11", "18")
    return ("an " if vowel else "a ") + word


def capitalize(sentence: str) -> str:
    return sentence[:1].upper() + sentence[1:] if sentence else sentence


def mentions(text: str, value: str) -> bool:
    """True when normalized `value` (or a simple plural of it) occurs in `text` on token boundaries."""
    t, v = normalize(text), normalize(value)
    return bool(v) and any(contains_phrase(t, x) for x in (v, v + "s", v + "es"))


# ---------------------------------------------------------------------------------------------------------
# Per-field phrasing tables
# ---------------------------------------------------------------------------------------------------------

# Explicit post-modifiers of the entity noun; "{v}" is the exact value.
EXPLICIT_MODS: dict[str, list[str]] = {
    "Brand": ["from {v}", "made by {v}", "by the brand {v}"],
    "Color": ["in {v}", "in the color {v}", "in a {v} colorway"],
    "Material": ["made of {v}", "made from {v}"],
    "Style": ["in the {v} style", "with a {v} style"],
    "Size": ["in size {v}", "in the {v} size"],
    "Special Feature": ["with the {v} feature", "featuring {v}"],
    "Age Range (Description)": ["meant for the {v} age range", "suitable for {v}"],
    "Item Form": ["in {v} form", "that comes as a {v}"],
    "Hair Type": ["for {v} hair", "made for {v} hair"],
    "Skin Type": ["for {v} skin", "suited to {v} skin"],
    "Scent": ["with a {v} scent", "in the scent {v}"],
    "Finish Type": ["with a {v} finish", "in a {v} finish"],
    "Product Benefits": ["that offers {v}", "with the benefit {v}"],
    "Material Feature": ["with the material feature {v}", "that is {v}"],
    "Form Factor": ["in a {v} form factor", "with the {v} form factor"],
    "Connectivity Technology": ["with {v} connectivity", "that connects via {v}"],
    "Connector Type": ["with a {v} connector", "that uses a {v} connector"],
    "Compatible Phone Models": ["compatible with {v}", "that fits {v}"],
    "Compatible Devices": ["that works with {v}", "compatible with {v} devices"],
    "Screen Size": ["with a {v} screen", "with a screen size of {v}"],
    "Pattern": ["with a {v} pattern", "in the {v} pattern"],
    "Mounting Type": ["with {v} mounting", "with the {v} mounting type"],
    "Shell Type": ["with a {v} shell", "in the {v} shell type"],
    "Operating System": ["running {v}", "that runs {v}"],
    "RAM": ["with {v} of RAM", "that has {v} of RAM"],
    "Hard Drive": ["with a {v} hard drive", "with {v} of hard drive storage"],
    "Processor": ["with a {v} processor", "powered by a {v} processor"],
    "Graphics Coprocessor": ["with {v} graphics", "with a {v} graphics coprocessor"],
    "Wireless Type": ["with {v} wireless", "using {v} wireless"],
    "Computer Memory Type": ["with {v} memory", "using {v} memory"],
    "Memory Storage Capacity": ["with {v} of storage", "with a storage capacity of {v}"],
    "Hardware Platform": ["for the {v} platform", "built for {v}"],
    "Lens Type": ["with a {v} lens", "using a {v} lens"],
    "Video Capture Resolution": ["that records {v} video", "with {v} video capture"],
    "Water Resistance Level": ["rated {v}", "with a water resistance level of {v}"],
    "Power Source": ["powered by {v}", "that runs on {v}"],
    "Recommended Uses For Product": ["recommended for {v}", "meant for {v}"],
    "Ink Color": ["with {v} ink", "that writes in {v} ink"],
    "Shape": ["in a {v} shape", "with a {v} shape"],
    "Sheet Size": ["in {v} sheet size", "with {v} sheets"],
    "Closure": ["with a {v} closure", "that closes with a {v} closure"],
    "Point Type": ["with a {v} point", "with a {v} point type"],
}

# Wrappers around an implicit clue (a noun phrase from clues.py); "{c}" is the clue.
IMPLICIT_MODS: dict[str, list[str]] = {
    "Material": ["made of {c}", "built from {c}"],
    "Special Feature": ["that offers {c}", "with {c}"],
    "Style": ["with {c}", "styled with {c}"],
    "Skin Type": ["suited to {c}", "made for {c}"],
    "Hair Type": ["suited to {c}", "made for {c}"],
    "Item Form": ["that comes as {c}", "in the form of {c}"],
    "Product Benefits": ["that provides {c}", "that delivers {c}"],
    "Finish Type": ["with {c}", "finished with {c}"],
    "Material Feature": ["with {c}", "that has {c}"],
    "Scent": ["with {c}", "that smells of {c}"],
    "Form Factor": ["in the form of {c}", "built as {c}"],
    "Connectivity Technology": ["that connects via {c}", "that links up using {c}"],
    "Connector Type": ["with {c}", "that plugs in with {c}"],
    "Pattern": ["with {c}", "decorated with {c}"],
    "Mounting Type": ["designed for {c}", "made for {c}"],
    "Operating System": ["running {c}", "that runs {c}"],
    "RAM": ["with {c}", "that has {c}"],
    "Hard Drive": ["with {c}", "that stores data on {c}"],
    "Processor": ["powered by {c}", "that runs on {c}"],
    "Wireless Type": ["that talks over {c}", "using {c}"],
    "Lens Type": ["with {c}", "shooting through {c}"],
    "Power Source": ["powered by {c}", "that runs on {c}"],
    "Recommended Uses For Product": ["meant for {c}", "intended for {c}"],
    "Ink Color": ["that writes in {c}", "with ink in {c}"],
}
DEFAULT_IMPLICIT_MODS = ["with {c}"]

# The attribute dimension in plain words (slot keyword, hidden_info, negatives, responses).
DIMENSION: dict[str, str] = {
    "Age Range (Description)": "age range", "Recommended Uses For Product": "recommended uses",
    "average_rating": "average rating", "rating_number": "number of ratings", "price": "price",
    "Compatible Phone Models": "compatible phone models", "Compatible Devices": "compatible devices",
    "RAM": "RAM", "Number of Items": "number of items",
}


def dimension(field: str) -> str:
    bare = bare_field(field)
    return DIMENSION.get(bare, bare.lower())


# Negative post-modifiers; "{list}" is the excluded values joined with "or".
NEGATIVE_MODS: dict[str, str] = {
    "Brand": "from {list}", "Color": "in {list}", "Material": "made of {list}", "Scent": "with a {list} scent",
    "Style": "in a {list} style", "Finish Type": "with a {list} finish", "Pattern": "with a {list} pattern",
    "Shape": "in a {list} shape", "Ink Color": "with {list} ink", "Operating System": "running {list}",
    "Power Source": "powered by {list}",
}


def negative_mod(field: str, excluded: list[str]) -> str:
    listed = join_words([str(v) for v in excluded], "or")
    template = NEGATIVE_MODS.get(bare_field(field), "with a {list} " + dimension(field))
    return template.format(list=listed)


SINGLE_ITEM_VALUES = {"1", "1 count", "1 pack of 1", "1 item", "1 piece", "1 pack", "one"}


def number_of_items_mod(value: str, rng: random.Random) -> str:
    """SPEC §5.2 Number of Items hints: single-item listing, exact N-item pack, else the exact phrase."""
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
    """The voucher described with every number (SPEC §5.6 budget hint)."""
    kind = voucher.kind
    if kind == "simple":
        owner = voucher.voucher_type or "store"
        if voucher.discount_type == "fixed":
            return rng.choice([
                f"a {owner} coupon worth {fmt_money(voucher.face_value)} on orders of at least "
                f"{fmt_money(voucher.threshold)}",
                f"a {fmt_money(voucher.face_value)} {owner} coupon for orders of {fmt_money(voucher.threshold)} "
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


# ---------------------------------------------------------------------------------------------------------
# Surfaces per query rubric
# ---------------------------------------------------------------------------------------------------------

def attribute_surface(rubric: Rubric, implicit: bool, rng: random.Random,
                      avoid: tuple[str, ...] = ()) -> tuple[str, bool]:
    """(surface, used_clue). Falls back to the explicit phrase when no clue exists (validation then flags
    the implicit rubric's value in the query)."""
    bare = bare_field(rubric.field)
    value = str(rubric.expected_value)
    if implicit:
        clue = clues.clue_for(rubric.field, value, rng, avoid=avoid)
        if clue is not None:
            return rng.choice(IMPLICIT_MODS.get(bare, DEFAULT_IMPLICIT_MODS)).format(c=clue), True
    if bare == "Number of Items":
        return number_of_items_mod(value, rng), False
    templates = EXPLICIT_MODS.get(bare, [f"with the {dimension(rubric.field)} {{v}}"])
    return rng.choice(templates).format(v=value), False


def review_surface(rubric: Rubric) -> str:
    """The opinion itself, lower-cased at the start when it is an ordinary capitalised word."""
    text = rubric.opinion.strip().rstrip(".")
    if len(text) > 1 and text[0].isupper() and text[1].islower():
        text = text[0].lower() + text[1:]
    return text


# ---------------------------------------------------------------------------------------------------------
# Fillers: problems, contexts and scenarios (never containing a hidden value)
# ---------------------------------------------------------------------------------------------------------

PROBLEMS = [
    "My old one finally stopped working",
    "The one I have now keeps letting me down",
    "I've put off replacing a worn-out piece of gear for too long",
    "My current setup is falling apart",
    "I lost mine last week and miss it every day",
    "The cheap one I bought last year did not last",
]
CONTEXTS = [
    "I'm putting together a gift for a friend",
    "I'm restocking a few things before a busy month",
    "I'm replacing a few things after a move",
    "I'm getting organized before a trip",
    "I'm upgrading a few things at home",
    "I'm helping a relative shop online",
]
# Category-flavoured scenarios for use_case_scenario (and as extra contexts elsewhere).
SCENARIOS: dict[str, list[str]] = {
    "All Beauty": ["I'm rebuilding my morning routine from scratch", "I'm packing a small travel kit"],
    "Beauty": ["I'm rebuilding my morning routine from scratch", "I'm packing a small travel kit"],
    "Cell Phones & Accessories": ["I commute two hours a day and live on my phone",
                                  "I'm getting my phone ready for a long road trip"],
    "Computers": ["I'm building out a home office for remote work", "I'm reworking my desk for long study sessions"],
    "All Electronics": ["I'm reorganizing the entertainment corner of my living room",
                        "I'm setting up a small workshop bench"],
    "Electronics": ["I'm reorganizing the entertainment corner of my living room",
                    "I'm setting up a small workshop bench"],
    "Camera & Photo": ["I'm getting into weekend photography", "I'm filming short videos for a hobby channel"],
    "Office Products": ["I'm restocking my desk for a new school term", "I'm organizing a shared office space"],
    "Amazon Home": ["I'm redoing a spare room", "I'm making our kitchen easier to work in"],
    "Tools & Home Improvement": ["I'm finishing a weekend repair project", "I'm fixing up an older house"],
}
DEFAULT_SCENARIOS = ["I'm dealing with a small everyday annoyance at home", "I'm planning ahead for a busy season"]


def safe_choice(rng: random.Random, options: list[str], forbidden: list[str]) -> str:
    """A random option that mentions no forbidden value (the first option as a last resort is never
    needed in practice: options are generic)."""
    allowed = [o for o in options if not any(mentions(o, f) for f in forbidden)]
    return rng.choice(allowed or options)


# ---------------------------------------------------------------------------------------------------------
# Query assembly
# ---------------------------------------------------------------------------------------------------------

MOD_FRAMES = [
    "It has to be one {mods}.",
    "I'm only considering one {mods}.",
    "The right pick is one {mods}.",
    "I want one {mods}.",
    "Make sure it's one {mods}.",
]
NEGATIVE_FRAMES = [
    ("I don't want anything {neg}.", "don't want anything {neg}"),
    ("Please avoid anything {neg}.", "avoid anything {neg}"),
    ("Nothing {neg}, please.", "Nothing {neg}"),
]
BUDGET_FRAMES = ["I have {b}.", "I'm using {b}.", "I can apply {b}."]
REVIEW_FRAMES = [
    "I want reviews saying {ops}.",
    "It should have reviews that mention {ops}.",
    "I'm counting on reviews that mention {ops}.",
]


def _opening(style: str, entity: str, mods: list[str], forbidden: list[str], category: str, intent: str,
             rng: random.Random) -> str:
    a_entity = with_article(entity)
    tail = (" " + join_words(mods)) if mods else ""
    if intent == "use_case_scenario" and style in ("problem-first", "context-first"):
        scene = safe_choice(rng, SCENARIOS.get(category, DEFAULT_SCENARIOS), forbidden)
        return f"{scene}, so I need {a_entity}{tail}."
    if style == "problem-first":
        problem = safe_choice(rng, PROBLEMS, forbidden)
        return f"{problem}, so I'm looking for {a_entity}{tail}."
    if style == "context-first":
        context = safe_choice(rng, CONTEXTS + SCENARIOS.get(category, []), forbidden)
        return f"{context}, and I need {a_entity}{tail}."
    if style == "question-first":
        return rng.choice([f"Can you find me {a_entity}{tail}?", f"Any suggestions for {a_entity}{tail}?",
                           f"Could you help me pick {a_entity}{tail}?"])
    return rng.choice([f"I need {a_entity}{tail}.", f"Find me {a_entity}{tail}.", f"I'm looking for {a_entity}{tail}.",
                       f"Please recommend {a_entity}{tail}."])


def _chunks(items: list[str], rng: random.Random, max_size: int = 3) -> list[list[str]]:
    out, i = [], 0
    while i < len(items):
        size = rng.randint(1, max_size)
        out.append(items[i:i + size])
        i += size
    return out


def forbidden_values(draft: Draft) -> list[str]:
    """Values the query must not mention: hidden (persona / clarification) and implicit values."""
    out: list[str] = []
    implicit = set(draft.implicit_rubric_ids)
    for r in draft.rubrics:
        if r.info_source != "query" or r.id in implicit:
            if r.type in ("attribute_match", "entity_match") and isinstance(r.expected_value, str):
                out.append(r.expected_value)
            elif r.type == "negative_attribute" and r.info_source != "query":
                out.extend(str(v) for v in r.expected_value)
    return [v for v in out if len(normalize(v)) > 2]


def build_query(draft: Draft, rng: random.Random) -> dict[str, str]:
    """Write draft.user_query; return {rubric_id: surface} for every query rubric."""
    intent = get_intent(draft.intent)
    implicit = set(draft.implicit_rubric_ids)
    query_rubrics = [r for r in draft.rubrics if r.info_source == "query"]
    entity_rubric = next((r for r in query_rubrics if r.type == "entity_match"), None)
    entity = draft.entity.query_surface if draft.entity else (entity_rubric.expected_value if entity_rubric else "item")

    surfaces: dict[str, str] = {}
    mods: list[str] = []
    negatives: list[tuple[str, str]] = []   # (sentence, surface)
    opinions: list[str] = []
    budget_sentence = ""
    used_clue: dict[str, bool] = {}
    forbidden = forbidden_values(draft)
    for r in query_rubrics:
        if r.type == "attribute_match":
            s, used_clue[r.id] = attribute_surface(r, r.id in implicit, rng, avoid=tuple(forbidden))
            mods.append(s)
        elif r.type == "numeric_range":
            s = numeric_mod(r.field, r.expected_value)
            mods.append(s)
        elif r.type == "negative_attribute":
            sentence, surface = rng.choice(NEGATIVE_FRAMES)
            neg = negative_mod(r.field, list(r.expected_value))
            s = surface.format(neg=neg)
            negatives.append((sentence.format(neg=neg), s))
        elif r.type == "review_opinion":
            s = review_surface(r)
            opinions.append(s)
        elif r.type == "budget_match":
            s = budget_surface(draft.voucher, r.expected_value, rng)
            budget_sentence = rng.choice(BUDGET_FRAMES).format(b=s)
        elif r.type == "entity_match":
            s = str(r.expected_value)
        else:  # store_match and anything foreign: state it plainly
            s = f"sold by {r.expected_value}"
            mods.append(s)
        surfaces[r.id] = s
    draft.meta["implicit_without_clue"] = [rid for rid, ok in used_clue.items() if rid in implicit and not ok]

    rng.shuffle(mods)
    style = rng.choice(list(intent.opening_styles))
    sentences: list[str] = []
    if style == "review-targeted" and opinions:
        lead = f"with reviews saying {join_words(opinions)}"
        sentences.append(_opening("direct-request", entity, [lead], forbidden, draft.product.main_category,
                                  draft.intent, rng))
        opinions = []
        head, rest = [], mods
    else:
        n_head = min(len(mods), rng.randint(1, 2))
        head, rest = mods[:n_head], mods[n_head:]
        sentences.append(_opening(style, entity, head, forbidden, draft.product.main_category, draft.intent, rng))

    frames = rng.sample(MOD_FRAMES, len(MOD_FRAMES))   # no frame twice in a row
    body: list[str] = [capitalize(frames[i % len(frames)].format(mods=join_words(chunk)))
                       for i, chunk in enumerate(_chunks(rest, rng))]
    body += [sentence for sentence, _ in negatives]
    if opinions:
        body.append(rng.choice(REVIEW_FRAMES).format(ops=join_words(opinions)))
    rng.shuffle(body)
    sentences += body
    if budget_sentence:
        sentences.append(budget_sentence)
    draft.user_query = " ".join(capitalize(s) for s in sentences)
    return surfaces


# ---------------------------------------------------------------------------------------------------------
# Persona (SPEC §5.8): product_requirements from persona rubrics + whitelisted noise
# ---------------------------------------------------------------------------------------------------------

NOISE_POOLS: dict[str, dict[str, list[Any]]] = {
    "demographics": {
        "gender": ["Female", "Male", "Non-binary", "Prefer not to say"],
        "age_range": ["18-24", "25-34", "35-44", "45-54", "55-64", "65-74"],
        "location": ["Chicago, IL", "Austin, TX", "Seattle, WA", "Denver, CO", "Atlanta, GA", "Portland, OR",
                     "Omaha, NE", "Boston, MA", "Phoenix, AZ", "Raleigh, NC", "Columbus, OH", "San Diego, CA"],
        "occupation": ["Nurse", "Software Developer", "High School Teacher", "Accountant", "Graphic Designer",
                       "Electrician", "Retail Manager", "Graduate Student", "Pharmacist", "Sales Representative",
                       "Retired Librarian", "Logistics Coordinator"],
        "education_level": ["High School Diploma", "Associate Degree", "Bachelor's Degree", "Master's Degree",
                            "Doctorate", "Trade Certificate"],
    },
    "lifestyle": {
        "hobbies": ["Reading fiction", "Hiking", "Baking", "Board games", "Gardening", "Cycling", "Painting",
                    "Birdwatching", "Cooking", "Running", "Yoga", "Chess", "Woodworking", "Podcasts"],
        "daily_routine": [
            "Wakes up early, works a day shift, and winds down with a book in the evening.",
            "Works from home on weekdays and takes a long walk after lunch.",
            "Commutes to the office by train and cooks dinner most nights.",
            "Works evening shifts and runs errands in the morning.",
            "Splits the day between classes and a part-time job.",
            "Starts the day at the gym before heading to work.",
        ],
        "fitness_level": ["Sedentary", "Lightly active", "Moderate", "Active", "Very active"],
        "dietary_preference": ["Omnivore", "Vegetarian", "Vegan", "Pescatarian", "Gluten-free", "No restrictions"],
        "commute_method": ["Car", "Public Transit", "Bicycle", "Walking", "Carpool", "Works from home"],
        "pets": ["None", "One cat", "Two cats", "One dog", "A rescue dog", "A parakeet", "Fish tank"],
    },
    "shopping_habits": {
        "payment_method": ["Credit Card", "Debit Card", "Digital Wallet", "Gift Card balance", "Bank Transfer"],
        "shopping_frequency": ["Weekly", "Bi-weekly", "Monthly", "A few times a year", "Rarely"],
        "preferred_device": ["Smartphone", "Laptop", "Desktop computer", "Tablet"],
        "preferred_platform": ["App", "Web browser", "Both app and web"],
        "return_frequency": ["Almost never", "Rarely", "Sometimes", "Often"],
    },
}


def persona_noise(rng: random.Random) -> dict[str, dict[str, Any]]:
    """Whitelisted, product-free profile context (SPEC §5.8), in SAFE_NOISE_FIELDS order."""
    noise: dict[str, dict[str, Any]] = {}
    for section, keys in SAFE_NOISE_FIELDS.items():
        noise[section] = {}
        for key in keys:
            pool = NOISE_POOLS[section][key]
            noise[section][key] = rng.sample(pool, rng.randint(2, 3)) if key == "hobbies" else rng.choice(pool)
    return noise


AVOID_KEY = "avoid_preferences"


def product_requirements(rubrics: Iterable[Rubric]) -> dict[str, Any]:
    """SPEC §5.8 mapping of persona rubrics; negatives go to `avoid_preferences` WITH their excluded values
    (the original extended the list by `[]`)."""
    reqs: dict[str, Any] = {}
    for r in rubrics:
        if r.info_source != "persona":
            continue
        if r.type == "negative_attribute":
            reqs.setdefault(AVOID_KEY, []).extend(str(v) for v in r.expected_value)
        elif r.type == "numeric_range" and not isinstance(r.expected_value, (dict, list)):
            reqs[persona_key(r.field)] = {"max": r.expected_value} if r.field == "price" else r.expected_value
        else:
            reqs[persona_key(r.field)] = r.expected_value
    return reqs


def expected_requirement_keys(rubrics: Iterable[Rubric]) -> set[str]:
    return {AVOID_KEY if r.type == "negative_attribute" else persona_key(r.field)
            for r in rubrics if r.info_source == "persona"}


def build_persona(draft: Draft, rng: random.Random) -> Persona:
    noise = persona_noise(rng)
    return Persona(user_id=f"U_{rng.randint(10000, 99999)}", demographics=noise["demographics"],
                   lifestyle=noise["lifestyle"], shopping_habits=noise["shopping_habits"],
                   product_requirements=product_requirements(draft.rubrics))


# ---------------------------------------------------------------------------------------------------------
# Clarification script (SPEC §5.9)
# ---------------------------------------------------------------------------------------------------------

# Generic trigger keywords per dimension (besides the dimension name, always first). They avoid very
# short tokens and common question words as substrings, because the ask_user rule is lenient (SPEC §2.2
# tool 8: a keyword scores when it is a substring of the question or shares a >= 3-letter word with it).
SLOT_KEYWORDS: dict[str, list[str]] = {
    "Special Feature": ["special features", "features", "functions", "capabilities", "extras", "built-in",
                        "functionality", "perks"],
    "Material Feature": ["material property", "material quality", "materials", "composition", "fabric",
                         "eco-friendly", "ingredients"],
    "Product Benefits": ["benefits", "benefit", "results", "effects", "helps", "advantages", "outcome"],
    "Finish Type": ["finish", "surface finish", "coating", "sheen", "glossy", "matte", "lustre"],
    "Recommended Uses For Product": ["recommended use", "intended use", "usage", "purpose", "occasion",
                                     "application", "activity", "uses"],
    "Connectivity Technology": ["connectivity", "connect", "connection", "wireless", "wired", "pairing",
                                "network", "bluetooth"],
    "Connector Type": ["connector", "plug", "jack", "charging port", "cable end", "usb", "interface",
                       "plug type"],
    "Pattern": ["pattern", "print", "motif", "graphic", "artwork", "decoration", "printed"],
    "Mounting Type": ["mounting", "mount", "install", "installation", "attach", "bracket", "placement",
                      "mounted"],
    "Screen Size": ["screen", "display", "display size", "inches", "diagonal", "monitor size", "inch"],
    "Graphics Coprocessor": ["graphics", "graphics card", "gpu", "video card", "chipset", "radeon", "nvidia"],
    "Computer Memory Type": ["memory type", "memory", "ddr", "sdram", "ram type", "memory generation", "dimm"],
    "Hardware Platform": ["platform", "system", "console", "ecosystem", "compatible system", "gaming system",
                          "device family"],
    "Video Capture Resolution": ["video resolution", "resolution", "recording quality", "video quality",
                                 "footage", "records", "1080p"],
    "Ink Color": ["ink colour", "ink shade", "writing color", "pen color", "refill color", "color ink"],
    "Shape": ["shaped", "outline", "silhouette", "geometry", "contour", "round", "geometric"],
    "Closure": ["fasten", "fastening", "zipper", "clasp", "seal", "buckle", "latch", "close"],
    "Point Type": ["point", "nib", "pen tip", "tip size", "point size", "fine point", "stroke"],
    "average_rating": ["rating", "stars", "star rating", "rated", "score", "well reviewed", "review score"],
    "rating_number": ["ratings", "reviews", "rating count", "review count", "ratings count", "popular",
                      "popularity", "reviewers"],
    "price": ["cost", "budget", "spend", "expensive", "cheap", "inexpensive", "price limit", "dollars"],
    "Item Form": ["form", "consistency", "texture", "cream", "liquid", "gel", "lotion", "powder", "balm"],
    "Scent": ["fragrance", "smell", "aroma", "scented", "perfume", "odor", "unscented"],
    # Persona-eligible fields can reach clarification only as "both" negatives; keep them covered too.
    "Brand": ["manufacturer", "maker", "label", "made by", "trademark", "logo", "vendor"],
    "Color": ["colour", "colors", "shade", "colorway", "paint", "colored"],
    "Material": ["materials", "made of", "fabric", "construction", "built from", "composition"],
    "Style": ["styles", "look", "design", "styling", "vibe", "visual", "decor"],
    "Form Factor": ["shape", "design", "build", "size class", "profile", "body type", "housing"],
    "Operating System": ["operating", "windows", "macos", "linux", "chrome os", "mobile os", "system"],
    "Wireless Type": ["wireless", "wifi", "wi-fi", "bluetooth", "radio", "signal", "frequency", "802.11"],
    "Power Source": ["power", "battery", "charging", "powered", "plug in", "cord", "runs on"],
    "Shell Type": ["shell", "case type", "casing", "cover", "hard case", "protective"],
}
GENERIC_EXTRA_KEYWORDS = ["requirement", "spec", "specification", "preference", "detail", "attribute"]


# Frequent question words. A keyword containing one of them scores on almost any question under the
# lenient rule (e.g. "leather" contains "the"), so such keywords are never generated from values.
COMMON_QUESTION_WORDS = ("the", "you", "your", "what", "which", "how", "for", "and", "need", "want", "like",
                         "any", "prefer", "should", "would", "have", "with", "are", "can", "does", "there",
                         "that", "this", "about")


def keyword_is_safe(keyword: str) -> bool:
    """Long enough not to hide inside ordinary words, and free of common question words."""
    return len(keyword) >= 4 and not any(w in keyword for w in COMMON_QUESTION_WORDS)


def _value_keywords(rubric: Rubric) -> list[str]:
    if rubric.type == "numeric_range":
        return []
    values = rubric.expected_value if isinstance(rubric.expected_value, list) else [rubric.expected_value]
    out = []
    for v in values:
        kw = " ".join(str(v).lower().split())
        if len(kw) <= 30 and keyword_is_safe(kw):
            out.append(kw)
    return out


def slot_keywords(rubric: Rubric) -> list[str]:
    """7-10 lowercased trigger keywords: the dimension name first, then (when short and specific) the
    value itself, so a question naming the value also reaches the slot, then generic synonyms."""
    bare = bare_field(rubric.field)
    dim = dimension(rubric.field).lower()
    keywords: list[str] = [dim]
    for kw in _value_keywords(rubric) + SLOT_KEYWORDS.get(bare, []):
        if kw not in keywords and len(keywords) < MAX_KEYWORDS:
            keywords.append(kw)
    padding = [w for w in bare.lower().split() if len(w) >= 4] + [f"{dim} {x}" for x in GENERIC_EXTRA_KEYWORDS]
    for kw in padding:
        if len(keywords) >= MIN_KEYWORDS:
            break
        if kw not in keywords:
            keywords.append(kw)
    return keywords


ATTRIBUTE_RESPONSES = [
    "For the {dim}, I need {v}.",
    "It has to be {v} for the {dim}.",
    "I'm set on {v} as the {dim}. That part isn't negotiable.",
    "The {dim} should be {v}, please.",
]
FIELD_RESPONSES: dict[str, list[str]] = {
    "Special Feature": ["It needs to have {v} as a feature.", "The one feature I really need is {v}."],
    "Recommended Uses For Product": ["I'll mainly use it for {v}.", "It needs to be recommended for {v}."],
    "Connector Type": ["It needs a {v} connector.", "The connector has to be {v} to fit my other gear."],
    "Connectivity Technology": ["It has to connect via {v}.", "I need {v} connectivity."],
    "Scent": ["I'd like the {v} scent.", "The scent should be {v}."],
    "Screen Size": ["I want a screen size of {v}.", "The display should be {v}."],
    "Ink Color": ["It should write in {v} ink.", "The ink color needs to be {v}."],
}
NUMERIC_RESPONSES = {
    "average_rating": ["I only trust products {m}.", "I want something {m}, otherwise I'm not interested."],
    "rating_number": ["It should be a product {m}, so I know plenty of people tried it.",
                      "I only consider products {m}."],
    "price": ["I want it {m}.", "My limit is firm: it has to be {m}."],
}


def slot_response(rubric: Rubric, rng: random.Random) -> str:
    """1-2 natural sentences containing the exact value (numeric: the explicit threshold phrase)."""
    dim = dimension(rubric.field)
    if rubric.type == "numeric_range":
        templates = NUMERIC_RESPONSES.get(rubric.field, ["It should be a product {m}."])
        return rng.choice(templates).format(m=numeric_mod(rubric.field, rubric.expected_value))
    if rubric.type == "negative_attribute":
        neg = join_words([str(v) for v in rubric.expected_value], "or")
        return rng.choice([f"I don't want anything {negative_mod(rubric.field, list(rubric.expected_value))}.",
                           f"For the {dim}, please avoid {neg}."])
    templates = FIELD_RESPONSES.get(bare_field(rubric.field), []) + ATTRIBUTE_RESPONSES
    return rng.choice(templates).format(dim=dim, v=rubric.expected_value)


def hidden_info(rubric: Rubric) -> str:
    dim = dimension(rubric.field)
    if rubric.type == "numeric_range":
        return f"The shopper wants a product {numeric_mod(rubric.field, rubric.expected_value)}."
    if rubric.type == "negative_attribute":
        return f"The shopper wants to avoid these {dim} values: {join_words([str(v) for v in rubric.expected_value])}."
    return f"The shopper requires the {dim} to be {rubric.expected_value}."


def build_clarification(draft: Draft, rng: random.Random) -> ClarificationScript:
    slots = []
    for i, r in enumerate((r for r in draft.rubrics if r.info_source == "clarification"), start=1):
        slots.append(ClarificationSlot(slot_id=f"cl_{i}", linked_rubric_ids=[r.id], hidden_info=hidden_info(r),
                                       trigger_keywords=slot_keywords(r), user_response=slot_response(r, rng),
                                       revealed=False))
    return ClarificationScript(clarification_slots=slots,
                               default_response=DEFAULT_RESPONSE if slots else EMPTY_SCRIPT_RESPONSE,
                               max_clarification_turns=MAX_CLARIFICATION_TURNS)


# ---------------------------------------------------------------------------------------------------------
# Rubric text fields and key order
# ---------------------------------------------------------------------------------------------------------

def _finish_query_rubric(rubric: Rubric, surface: str) -> None:
    rubric.description = surface
    for key in SCAFFOLD_KEYS:
        rubric.extras.pop(key, None)
    rubric.extras["query_surface"] = surface
    if rubric.type == "entity_match":
        rubric.key_order = list(ENTITY_RUBRIC_KEYS)
    else:
        rubric.key_order = list(QUERY_RUBRIC_KEYS)


def _finish_hidden_rubric(rubric: Rubric) -> None:
    rubric.extras.setdefault("implicit_eligible", False)
    rubric.extras.setdefault("must_hide_value", None)
    rubric.extras.setdefault("query_hint", "")
    rubric.key_order = list(HIDDEN_RUBRIC_KEYS)


def verbalize(draft: Draft, rng: random.Random) -> None:
    """Fill the draft's text: user_query, query rubric surfaces, persona and clarification script."""
    surfaces = build_query(draft, rng)
    for r in draft.rubrics:
        if r.info_source == "query":
            _finish_query_rubric(r, surfaces[r.id])
        else:
            _finish_hidden_rubric(r)
    draft.persona = build_persona(draft, rng)
    draft.clarification_script = build_clarification(draft, rng)

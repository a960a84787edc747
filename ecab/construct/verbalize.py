"""Template verbalizer: a locked rubric plan into text (docs/original-harness.md §5.6 QueryBuilder, §5.8, §5.9).

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
import re
from typing import Any, Iterable

from ecab.construct import clues
from ecab.construct.draft import Draft
from ecab.construct.intents import get_intent
from ecab.fields import SAFE_NOISE_FIELDS, persona_key
from ecab.judge.normalize import contains_phrase, normalize
from ecab.schema import ClarificationScript, ClarificationSlot, Persona, Rubric, Voucher

# ---------------------------------------------------------------------------------------------------------
# Rubric record shapes (the released file's key orders, docs/original-harness.md §5.6 "Final rubric shapes")
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


def capitalize(sentence: str) -> str:
    return sentence[:1].upper() + sentence[1:] if sentence else sentence


def mentions(text: str, value: str) -> bool:
    """True when normalized `value` (or a simple plural of it) occurs in `text` on token boundaries."""
    t, v = normalize(text), normalize(value)
    return bool(v) and any(contains_phrase(t, x) for x in (v, v + "s", v + "es"))


# ---------------------------------------------------------------------------------------------------------
# Articles and value rendering
# ---------------------------------------------------------------------------------------------------------

# Letters whose spoken name starts with a vowel sound: "an HDMI port", "an SSD", "an LED" but "a USB hub".
VOWEL_SOUND_LETTERS = frozenset("AEFHILMNORSX")
# All-capital words read as words, not letter by letter ("a NASA", "a VESA mount").
WORD_ACRONYMS = frozenset({"NASA", "VESA", "RAM", "ROM", "SATA", "LAN", "WAN", "SIM", "PIN", "OLED", "QLED"})
# Lower-case spellings of initialisms that entity phrases use ("usb-c cable").
LOWER_INITIALISMS = frozenset({"usb", "hdmi", "led", "lcd", "ssd", "hdd", "sd", "ac", "dc", "gps", "nfc", "uv",
                               "hd", "spf", "rgb", "aux", "abs", "pvc", "tpu", "ipx", "mp3", "lte"})
# Names said differently from their spelling ("an NVIDIA GPU": en-vidia).
ARTICLE_EXCEPTIONS = {"nvidia": "an", "nvme": "an", "xbox": "an", "fbi": "an"}
SILENT_H = ("hour", "honest", "honor", "honour", "heir")
YOU_OR_WON_SOUND = ("uni", "use", "usu", "uti", "ubi", "ure", "uro", "eu", "ewe", "one", "once")
_FIRST_TOKEN = re.compile(r"[^A-Za-z0-9]*([A-Za-z0-9]+)([-A-Za-z0-9]*)")


def _number_takes_an(digits: str) -> bool:
    """8, 80, 800, 8-inch; 11 and 18 (and 11,000 / 18 million): said with a leading vowel sound."""
    return digits.startswith("8") or (len(digits) % 3 == 2 and digits[:2] in ("11", "18"))


def indefinite_article(phrase: str) -> str:
    """"a" or "an" by the sound of the phrase's first word (the phrase itself is never re-cased)."""
    m = _FIRST_TOKEN.match(phrase or "")
    if not m:
        return "a"
    token, rest = m.group(1), m.group(2)
    if token.lower() in ARTICLE_EXCEPTIONS:
        return ARTICLE_EXCEPTIONS[token.lower()]
    if token[0].isdigit():
        return "an" if _number_takes_an(re.match(r"\d+", token).group()) else "a"
    letters = re.match(r"[A-Za-z]+", token).group()
    spelled = (letters.isupper() and letters not in WORD_ACRONYMS
               and (len(letters) == 1 or len(letters) <= 4 or token != letters or rest.startswith("-")))
    if spelled or letters.lower() in LOWER_INITIALISMS and letters.lower() == letters:
        return "an" if letters[0].upper() in VOWEL_SOUND_LETTERS else "a"
    low = letters.lower()
    if low.startswith(SILENT_H):
        return "an"
    if low.startswith(YOU_OR_WON_SOUND):
        return "a"
    return "an" if low[0] in "aeiou" else "a"


SINGULAR_S_ENDINGS = ("ss", "us", "is", "lens", "series", "gps", "ios", "macos", "os")


def with_article(phrase: str) -> str:
    """"a phone case", "an AC adapter", "a USB hub", "an 8-inch tablet", "keycaps" (a plural head noun
    takes no article)."""
    last = phrase.split()[-1].lower() if phrase.split() else ""
    if last.endswith("s") and not last.endswith(SINGULAR_S_ENDINGS):
        return phrase
    return f"{indefinite_article(phrase)} {phrase}"


def a_or_an(word: str) -> str:
    """"an 8%", "an 11%", "a 9%", "an apple"."""
    return f"{indefinite_article(word)} {word}"


_RAW_SEPARATORS = re.compile(r"\s*[,;/|]\s*")


def value_options(value: Any) -> list[str]:
    return [o for o in _RAW_SEPARATORS.split(" ".join(str(value).split())) if o]


def render_value(value: Any) -> str:
    """A value as written in a sentence: a multi-option value as "A/B" (commas would read as the
    sentence's own list; the judge's normalization reads "/" and "," alike)."""
    return "/".join(value_options(value))


# Capitalised words that are names, so they keep their capital inside a sentence.
PROPER_WORDS = frozenset({
    "mac", "macos", "windows", "android", "bluetooth", "apple", "canon", "nikon", "sony", "fujifilm", "intel",
    "amd", "google", "samsung", "galaxy", "pixel", "chromebook", "linux", "alexa", "lightning", "thunderbolt",
    "qi", "ryzen", "celeron", "core", "chrome", "motorola", "moto", "oneplus", "bible", "wear", "micro", "four",
    "thirds", "ipad", "iphone", "moroccan", "pentium", "displayport"})


def plain(value: Any) -> str:
    """The value in running text: ordinary capitalised words lower-cased ("Battery Powered" ->
    "battery powered"), names, acronyms and mixed-case words kept ("USB Type C", "MagSafe", "Mac")."""
    def word(w: str) -> str:
        core = w.strip("()")
        if core[:1].isupper() and core[1:].islower() and core.isalpha() and core.lower() not in PROPER_WORDS:
            return w.lower()
        if "-" in w:
            return "-".join(word(p) for p in w.split("-"))
        return w
    return "/".join(" ".join(word(w) for w in option.split(" ")) for option in value_options(value))


# ---------------------------------------------------------------------------------------------------------
# Per-field phrasing tables
# ---------------------------------------------------------------------------------------------------------

# Explicit post-modifiers of the entity noun. Placeholders: {v} the value as written ("A/B" for several
# options), {p} the value in running text (see `plain`), {a_v} / {a_p} the same after "a" or "an".
EXPLICIT_MODS: dict[str, list[str]] = {
    "Brand": ["from {v}", "made by {v}", "by the brand {v}"],
    "Color": ["in {v}", "in the color {v}", "in {a_v} colorway"],   # "Assorted": see _color
    "Material": ["made of {p}", "made from {p}"],
    "Style": ["in {a_p} style", "with {a_p} style"],
    "Size": ["in size {v}", "in the {v} size"],
    "Item Form": ["in {p} form", "that comes as {a_p}"],
    "Hair Type": ["for {p} hair", "made for {p} hair"],
    "Skin Type": ["for {p} skin", "suited to {p} skin"],
    "Scent": ["with {a_p} scent", "that smells of {p}"],
    "Finish Type": ["with {a_p} finish", "in {a_p} finish"],
    "Material Feature": ["that is {p}", "that's {p}"],
    "Form Factor": ["with {a_p} form factor", "in {a_p} design"],
    "Connector Type": ["with {a_v} connector", "that uses {a_v} connector"],
    "Compatible Phone Models": ["compatible with {v}", "that fits {v}"],
    "Screen Size": ["with a screen size of {p}", "with a display size of {p}"],
    "Pattern": ["with {a_p} pattern", "in {a_p} pattern"],
    "Shell Type": ["with {a_p} shell", "in the {p} shell type"],
    "Operating System": ["running {v}", "that runs {v}"],
    "RAM": ["with {v} of RAM", "that has {v} of RAM"],
    "Hard Drive": ["with {a_v} hard drive", "with {a_v} drive for storage"],
    "Processor": ["with {a_v} processor", "powered by {a_v} processor"],
    "Graphics Coprocessor": ["with {v} graphics", "with {a_v} graphics coprocessor"],
    "Wireless Type": ["with {p} wireless", "using {p} wireless"],
    "Computer Memory Type": ["with {v} memory", "using {v} memory"],
    "Memory Storage Capacity": ["with {v} of storage", "with a storage capacity of {v}"],
    "Hardware Platform": ["for the {v} platform", "built for {v}"],
    "Lens Type": ["with {a_p} lens", "using {a_p} lens"],
    "Video Capture Resolution": ["that records {v} video", "with {v} video capture"],
    "Ink Color": ["with {p} ink", "that writes in {p} ink"],
    "Shape": ["in {a_p} shape", "with {a_p} shape"],
    "Sheet Size": ["with a sheet size of {p}", "in the {p} sheet size"],
    "Closure": ["with {a_p} closure", "that closes with {a_p} closure"],
    "Point Type": ["with {a_p} point", "with {a_p} point type"],
}

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
GERUND_MODS = ["capable of {c}", "designed for {c}"]
GERUND_READY_FIELDS = frozenset({"Mounting Type", "Recommended Uses For Product"})
NOT_GERUNDS = frozenset({"something", "anything", "nothing", "everything", "thing", "ring", "string", "king",
                         "spring", "wing", "sling", "swing", "ceiling", "bring"})

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
    "Brand": "from {list}", "Color": "in {list}", "Material": "made of {list}", "Scent": "with {a_list} scent",
    "Style": "in {a_list} style", "Finish Type": "with {a_list} finish", "Pattern": "with {a_list} pattern",
    "Shape": "in {a_list} shape", "Ink Color": "with {list} ink", "Operating System": "running {list}",
    "Power Source": "powered by {list}",
}


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


# ---------------------------------------------------------------------------------------------------------
# Surfaces per query rubric
# ---------------------------------------------------------------------------------------------------------

def attribute_surface(rubric: Rubric, implicit: bool, rng: random.Random,
                      avoid: tuple[str, ...] = (), product_context: str = "") -> tuple[str, bool]:
    """(surface, used_clue). Falls back to the explicit phrase when no clue fits (validation then flags
    the implicit rubric's value in the query). `product_context` (entity phrase and title) keeps clues
    written for one kind of product off the others."""
    bare = bare_field(rubric.field)
    value = str(rubric.expected_value)
    if implicit:
        clue = clues.clue_for(rubric.field, value, rng, avoid=avoid, context=product_context)
        if clue is not None:
            return rng.choice(implicit_mods(bare, clue)).format(c=clue), True
    if bare == "Number of Items":
        return number_of_items_mod(value, rng), False
    return explicit_mod(rubric.field, value, rng), False


def implicit_mods(bare: str, clue: str) -> list[str]:
    """Wrappers for a clue; a clue that is an activity ("counting your steps") needs a verb-friendly one."""
    first = clue.split()[0].lower() if clue.split() else ""
    if first.endswith("ing") and first not in NOT_GERUNDS and bare not in GERUND_READY_FIELDS:
        return GERUND_MODS
    return IMPLICIT_MODS.get(bare, DEFAULT_IMPLICIT_MODS)


# Opinions quoted from reviews often drop their subject ("does not bleed through thin paper"); the frame
# adds "it" in front so the sentence reads, while the opinion itself stays verbatim (it is the surface).
SUBJECTLESS_STARTS = frozenset({
    "does", "doesn't", "did", "didn't", "is", "isn't", "was", "wasn't", "has", "had", "holds", "held", "charges",
    "charged", "survived", "stays", "stayed", "keeps", "kept", "feels", "felt", "works", "worked", "looks",
    "arrived", "lasts", "lasted", "fits", "runs", "gets", "takes", "makes", "sounds", "dries", "writes",
    "sticks", "cleans", "heats", "connects", "pairs", "never", "still", "barely", "really", "comes", "came"})


def opinion_clause(opinion: str) -> str:
    first = opinion.split()[0].lower() if opinion.split() else ""
    return f"it {opinion}" if first in SUBJECTLESS_STARTS else opinion


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
            s, used_clue[r.id] = attribute_surface(r, r.id in implicit, rng, avoid=tuple(forbidden),
                                                   product_context=f"{entity} {draft.product.title}")
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
        lead = f"with reviews saying {join_words([opinion_clause(o) for o in opinions])}"
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
        body.append(rng.choice(REVIEW_FRAMES).format(ops=join_words([opinion_clause(o) for o in opinions])))
    rng.shuffle(body)
    sentences += body
    if budget_sentence:
        sentences.append(budget_sentence)
    draft.user_query = " ".join(capitalize(s) for s in sentences)
    return surfaces


# ---------------------------------------------------------------------------------------------------------
# Persona (docs/original-harness.md §5.8): product_requirements from persona rubrics + whitelisted noise
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
    """Whitelisted, product-free profile context (docs/original-harness.md §5.8), in SAFE_NOISE_FIELDS order."""
    noise: dict[str, dict[str, Any]] = {}
    for section, keys in SAFE_NOISE_FIELDS.items():
        noise[section] = {}
        for key in keys:
            pool = NOISE_POOLS[section][key]
            noise[section][key] = rng.sample(pool, rng.randint(2, 3)) if key == "hobbies" else rng.choice(pool)
    return noise


AVOID_KEY = "avoid_preferences"


def product_requirements(rubrics: Iterable[Rubric]) -> dict[str, Any]:
    """The persona mapping of docs/original-harness.md §5.8; negatives go to `avoid_preferences` WITH their
    excluded values (the original extended the list by `[]`)."""
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
# Clarification script (docs/original-harness.md §5.9)
# ---------------------------------------------------------------------------------------------------------

# Generic trigger keywords per dimension (besides the dimension name, always first). They avoid very
# short tokens and common question words as substrings, because the ask_user rule is lenient
# (docs/original-harness.md §2.2 tool 8: a keyword scores when it is a substring of the question or shares a
# >= 3-letter word with it).
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
    "The {dim} should be {v}, please.",
    "I'm set on {v} for the {dim}. That part isn't negotiable.",
]
# Answers built on the explicit query phrase ("I'd like one with a wired connection.").
MOD_RESPONSES = [
    "I'd like one {mod}.",
    "It has to be one {mod}.",
    "Ideally one {mod}. That part isn't negotiable.",
]
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
        return rng.choice([f"I don't want anything {negative_mod(rubric.field, list(rubric.expected_value), keep_case=True)}.",
                           f"For the {dim}, please avoid {neg}."])
    value = rubric.expected_value
    if bare_field(rubric.field) != "Number of Items":
        answer = rng.choice(MOD_RESPONSES).format(mod=explicit_mod(rubric.field, value, rng, keep_case=True))
        # The answer must carry the exact value (not a plural of it): fall back to the plain frames.
        if str(value) in answer:
            return answer
    return rng.choice(ATTRIBUTE_RESPONSES).format(dim=dim, v=value)


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

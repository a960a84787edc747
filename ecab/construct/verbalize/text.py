"""Text helpers of the template verbalizer: field names, numbers and money, word lists, value options,
"a" or "an", and values in running text."""
from __future__ import annotations

import re
from typing import Any

from ecab.core.text import contains_phrase, normalize


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

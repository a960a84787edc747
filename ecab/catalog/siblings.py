"""Hard-negative siblings of released targets, for `catalog=targets` (issue 15, deliverable 3).

Released tasks ship their target product but not the catalog around it, and the generic synthetic
distractors never come near a real target: on their own, the query's rubrics single the target out in every
task and no persona or clarification rubric matters (docs/decisions.md#validity-audit). For every task this
module makes products that look like other listings of the target's product line:

- per rubric, `per_rubric` (k, default 3) siblings that satisfy every other rubric of the task and violate
  exactly that one: another plausible value of the same field (values other products of the file and of the
  distractors carry), a number just outside the range, a price over the budget after the voucher, an
  excluded value present, reviews that lack the opinion, another product line (or brand) in the title for the
  entity rubric, another store;
- `query_only` siblings that satisfy every query rubric and violate every persona and clarification rubric
  they can.

Every sibling is checked with the rules judge (`ecab.judge.rules.check_rubric`, review_opinion with the
process-wide review checker) before it is kept, and a sibling that would satisfy every rubric of any task
(its own or another task of the same category) is dropped, so each target stays the only product matching
all of its task's rubrics.

Form: a sibling is a copy of its target with its own ASIN-like id (the target's first four characters, as
variants listed together share them, then six random ones), the target's title with only what changed
swapped, the same detail keys in the same order, its own rating statistics and price drawn near the
target's, a few listing facts varied (rank, date first available, weight, model number), and its own
reviews from the generator the targets' reviews come from (`amazon.opinion_reviews`: same count rule,
same templates). Targets and siblings are emitted in one seeded shuffle. Deterministic from the seed: every
sibling draws from `random.Random` seeded with its task, rubric and index.
"""
from __future__ import annotations

import copy
import datetime
import math
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from ecab.fields import ALIASES_BY_CANONICAL, MULTI_OPTION_FIELDS, canonical_field
from ecab.core.text import keyword_tokens, normalize, singular
from ecab.core.rubric_checks import EntityMatcher, entity_phrases, rubric_verdict
from ecab.schema import Product, Review, Rubric, Task

# Bump whenever the siblings made for a given task file and seed change: part of the catalog fingerprint.
SIBLINGS_VERSION = "1"
DEFAULT_PER_RUBRIC = 3
DEFAULT_QUERY_ONLY = 3
MAX_ATTEMPTS = 30
NUMERIC_FIELDS = ("average_rating", "rating_number", "price")
ID_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_EMPTY = (None, "", [], {})

# The head noun of an entity phrase -> the product line a sibling becomes instead (a neighbouring product a
# shopper could confuse with it). Keys are singular keyword tokens (ecab.core.text.singular).
LINE_SWAPS: dict[str, tuple[str, ...]] = {
    "protector": ("Camera Lens Protector", "Privacy Filter"), "screen": ("Camera Lens", "Bezel"),
    "case": ("Holster", "Sleeve", "Pouch"), "cover": ("Holster", "Pouch"), "skin": ("Sleeve",),
    "watch": ("Band", "Strap"), "tracker": ("Band",), "smartwatch": ("Fitness Band",),
    "keycap": ("Switches", "Wrist Rest"), "keyboard": ("Keypad", "Mouse"), "mouse": ("Mouse Pad",),
    "adapter": ("Cable", "Cord"), "charger": ("Cable", "Holder"), "block": ("Cable",), "cube": ("Cable",),
    "dock": ("Cable", "Mount"), "stand": ("Holder", "Mount"), "pad": ("Stand", "Mount"),
    "cable": ("Adapter", "Splitter"), "cord": ("Adapter",), "coupler": ("Crimper", "Splitter"),
    "camera": ("Doorbell", "Floodlight"), "monitor": ("Mount",), "dvr": ("NVR",), "nvr": ("DVR",),
    "bracket": ("Clip", "Strap"), "mount": ("Clip", "Strap"), "holder": ("Clip",), "lockbox": ("Key Cabinet",),
    "box": ("Bag", "Tin"), "cabinet": ("Cart", "Shelf"), "sticker": ("Patches", "Pins"),
    "decal": ("Patches",), "brush": ("Spatula", "Sponge"), "sponge": ("Brush",), "router": ("Switch",),
    "ap": ("Switch", "Router"), "phone": ("Tablet",), "smartphone": ("Tablet",), "tablet": ("E-Reader",),
    "earbud": ("Ear Tips",), "headphone": ("Ear Pads",), "speaker": ("Soundbar",), "light": ("Bulb",),
    "lamp": ("Bulb",), "bag": ("Pouch",), "pen": ("Refills",), "notebook": ("Binder",),
}
GENERIC_LINES = ("Organizer", "Cleaning Kit", "Replacement Parts", "Storage Case")

_SEPARATORS = re.compile(r"\s*[,;|/]\s*")
_NUMBER = re.compile(r"\d[\d,]*")
_DATE_FORMATS = ("%B %d, %Y", "%b %d, %Y")
_WORD_CHARS = "A-Za-z0-9"


# ---------------------------------------------------------------------------------------------------------
# Value pools: the plausible values of every field, from the rows of the file and of the distractors
# ---------------------------------------------------------------------------------------------------------

def canonical(field_name: str) -> str:
    return canonical_field(field_name.split(".", 1)[1] if field_name.startswith("details.") else field_name)


def split_options(value: Any) -> list[str]:
    if isinstance(value, (list, tuple)):
        return [o for v in value for o in split_options(v)]
    if not isinstance(value, str):
        return []
    return [o.strip() for o in _SEPARATORS.split(value) if 1 < len(o.strip()) <= 40]


@dataclass
class ValuePools:
    """The values each canonical detail field takes on other products: the task file's real rows and the
    distractors, indexed so a sibling takes a value another product of its own kind carries first."""

    real: list[tuple[str, frozenset, dict[str, list[str]]]] = field(default_factory=list)   # category, kind
    other: dict[tuple[str, str], list[tuple[frozenset, list[str]]]] = field(default_factory=dict)
    asked: dict[str, list[str]] = field(default_factory=dict)      # values the tasks' rubrics ask for
    stores: list[str] = field(default_factory=list)

    @staticmethod
    def _options(product: Product) -> dict[str, list[str]]:
        return {canonical(k): split_options(v) for k, v in (product.details or {}).items()}

    @classmethod
    def build(cls, real_products: Iterable[Product], tasks: Iterable[Task],
              other_products: Iterable[Product] = ()) -> "ValuePools":
        pools = cls()
        stores: set[str] = set()
        tasks = list(tasks)
        kinds: dict[str, set[str]] = {}     # a real product's kind: the entity head word of its tasks
        for task in tasks:
            kinds.setdefault(task.target_product.product_id, set()).add(kin_token(task) or "")
        for product in real_products:
            pools.real.append((product.main_category, frozenset(kinds.get(product.product_id, ())),
                               cls._options(product)))
            stores.add(product.store or product.brand)
        for task in tasks:
            for r in task.rubrics:
                if r.type in ("attribute_match", "negative_attribute") and r.field.startswith("details."):
                    values = r.expected_value if isinstance(r.expected_value, list) else [r.expected_value]
                    pools.asked.setdefault(canonical(r.field), []).extend(
                        v for v in values if isinstance(v, str) and v.strip())
        for product in other_products:
            tokens = frozenset(keyword_tokens(product.title))
            for key, options in cls._options(product).items():
                pools.other.setdefault((product.main_category, key), []).append((tokens, options))
            stores.add(product.store)
        pools.stores = sorted(s for s in stores if s)
        return pools

    def values(self, category: str, field_name: str, rng: random.Random, kin: str | None = None) -> list[str]:
        """Candidate values of a field, in tiers (each in a seeded order): real products of the same kind
        (their title has the entity's head word `kin`), generated ones of the same kind and category, real
        ones of the category, generated ones of the category, then any real value or asked-for value."""
        name = canonical(field_name)
        other = self.other.get((category, name), [])
        tiers = [
            [o for c, t, opts in self.real if kin in t for o in opts.get(name, ())],
            [o for t, opts in other if kin in t for o in opts],
            [o for c, t, opts in self.real if c == category for o in opts.get(name, ())],
            [o for t, opts in other for o in opts],
            [o for c, t, opts in self.real for o in opts.get(name, ())] + self.asked.get(name, []),
        ]
        out: list[str] = []
        seen: set[str] = set()
        for tier in tiers:
            group = sorted(set(tier) - seen)
            rng.shuffle(group)
            out += group
            seen.update(group)
        return out


def kin_token(task: Task) -> str | None:
    """The head word of the task's entity phrase ("protector" for "screen protector"): a product's kind."""
    for r in task.rubrics:
        if r.type == "entity_match":
            tokens = keyword_tokens(r.extras.get("title_span") or r.expected_value)
            return tokens[-1] if tokens else None
    return None


# ---------------------------------------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------------------------------------

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


def _phrase_pattern(phrase: str) -> re.Pattern:
    return re.compile(rf"(?<![{_WORD_CHARS}]){re.escape(phrase)}(?![{_WORD_CHARS}])", re.IGNORECASE)


def _loose_pattern(phrase: str) -> re.Pattern | None:
    """`phrase` as the judge reads it: its normalized words in order, any punctuation or spacing between
    them ("USB Type C" finds "USB Type-C", "Android,Ios" finds "Android, iOS"), on word boundaries."""
    words = re.findall(r"[^\W_]+", normalize(phrase))
    if not words:
        return None
    return re.compile(rf"(?<![{_WORD_CHARS}])" + r"[\W_]*".join(re.escape(w) for w in words)
                      + rf"(?![{_WORD_CHARS}])", re.IGNORECASE)


def replace_phrase(text: str, old: str, new: str) -> str:
    """`old` replaced by `new` on word boundaries, case-insensitively, however it is punctuated."""
    if not old or not isinstance(text, str):
        return text
    pattern = _loose_pattern(old)
    return pattern.sub(lambda m: _match_case(m.group(0), new), text) if pattern is not None else text


def _match_case(word: str, replacement: str) -> str:
    """Written in lower case where the replaced text was ("bumper" -> "basic case"), else as given."""
    return replacement.lower() if word.islower() else replacement


def new_id(prefix_of: str, rng: random.Random, taken: set[str]) -> str:
    """An ASIN-like id: "B0" ids keep the first four characters of `prefix_of` (variants listed together
    share them), then random characters; never one in `taken`."""
    prefix = prefix_of[:4].upper() if re.fullmatch(r"B0[0-9A-Z]{8}", prefix_of or "") else "B0" + "".join(
        rng.choice(ID_ALPHABET) for _ in range(2))
    while True:
        candidate = prefix + "".join(rng.choice(ID_ALPHABET) for _ in range(10 - len(prefix)))
        if candidate not in taken:
            taken.add(candidate)
            return candidate


def _price_tag(value: float, rng: random.Random) -> float:
    whole = max(0, math.floor(value))
    return round(whole + rng.choice((0.99, 0.99, 0.95, 0.49, 0.69, 0.29, 0.89)), 2)


def _ok(rubric: Rubric, product: Product, task: Task, reviews: list[Review] | None = None,
        review_checker=None) -> bool:
    return rubric_verdict(rubric, product, voucher=task.voucher, reviews=reviews,
                          review_checker=review_checker).satisfied is True


# ---------------------------------------------------------------------------------------------------------
# Listing facts that vary between variants (never a field a rubric of the target's tasks reads)
# ---------------------------------------------------------------------------------------------------------

# Each task's family of siblings is drawn around a CENTRE that is itself a draw around the target (the same
# spread both times), so the target is just another member: neither the median of the family's numbers nor
# the middle of its dates (docs/decisions.md#target-siblings).
RATING_SPREAD, COUNT_SPREAD, PRICE_SPREAD = 0.6, 0.7, 0.12     # rating: logit-normal; count, price: log-normal
RANK_SPREAD, WEIGHT_SPREAD, DATE_SPREAD = 0.8, 0.08, 200         # log-normal, log-normal, +-days
DRIFT_SHARE = 0.75    # share of a family carrying each drifted value
DRIFTED_FACTS = 2     # facts (no rubric reads them) on which most of a family differs from the target
DRIFT_FIELDS = frozenset(MULTI_OPTION_FIELDS | {"Special Feature"})


@dataclass
class Family:
    """One task's family: the centre its siblings are drawn around, and the detail values most of them
    carry instead of the target's (DRIFT_SHARE of them, on 1-2 facts no rubric reads)."""

    rating: float | None        # on the logit scale of (rating - 1) / 4: draws never pile up at 1 or 5 stars
    count: float | None
    price: float | None
    rank: float = 1.0
    weight: float = 1.0
    days: int = 0
    drift: dict[str, str] = field(default_factory=dict)


def family_of(task: Task, pools: ValuePools, rng: random.Random, protected: set[str]) -> Family:
    p = task.target_product
    fam = Family(
        rating=None if p.average_rating is None else _logit(float(p.average_rating)) + rng.gauss(0, RATING_SPREAD),
        count=None if not p.rating_number else float(p.rating_number) * math.exp(rng.gauss(0, COUNT_SPREAD)),
        price=None if p.price is None else float(p.price) * math.exp(rng.gauss(0, PRICE_SPREAD)),
        rank=math.exp(rng.gauss(0, RANK_SPREAD)), weight=math.exp(rng.gauss(0, WEIGHT_SPREAD)),
        days=rng.randint(-DATE_SPREAD, DATE_SPREAD))
    title = normalize(p.title)
    keys = [k for k, v in (p.details or {}).items()
            if isinstance(v, str) and v.strip() and k not in VARIED_FACTS and canonical(k) not in protected
            and canonical(k) not in ("Brand", "Manufacturer") and normalize(v) not in title]
    rng.shuffle(keys)
    for key in keys:
        if len(fam.drift) == DRIFTED_FACTS:
            break
        current = {normalize(o) for o in split_options(p.details[key])} | {normalize(p.details[key])}
        alternative = next((v for v in pools.values(p.main_category, key, rng, kin=kin_token(task))
                            if normalize(v) not in current and normalize(v) not in title), None)
        if alternative is not None:
            fam.drift[key] = alternative
    # Too few such facts: most of the family lists one more option on a multi-valued field a rubric reads
    # ("Waterproof" -> "Waterproof, Lightweight"), where every rubric of the task still holds.
    rubrics = [r for r in task.rubrics if r.type == "attribute_match" and canonical(r.field) in DRIFT_FIELDS]
    rng.shuffle(rubrics)
    for r in rubrics:
        key = detail_key(p.details, r.field)
        if len(fam.drift) >= DRIFTED_FACTS or key is None or key in fam.drift or not isinstance(p.details[key], str):
            continue
        current = {normalize(o) for o in split_options(p.details[key])}
        for v in pools.values(p.main_category, key, rng, kin=kin_token(task))[:20]:
            if normalize(v) in current or any(normalize(v) in c or c in normalize(v) for c in current):
                continue
            trial = copy.deepcopy(p)
            trial.details[key] = f"{p.details[key]}, {v}"
            if all(_ok(x, trial, task) for x in task.rubrics if x.type != "review_opinion"):
                fam.drift[key] = trial.details[key]
                break
    return fam


def _vary_rank(value: str, rng: random.Random, fam: Family) -> str:
    factor = fam.rank * math.exp(rng.gauss(0, RANK_SPREAD))
    return _NUMBER.sub(lambda m: f"{max(1, round(int(m.group(0).replace(',', '')) * factor)):,}", value)


def _vary_date(value: str, rng: random.Random, fam: Family) -> str:
    for fmt in _DATE_FORMATS:
        try:
            day = datetime.datetime.strptime(value.strip(), fmt)
        except ValueError:
            continue
        moved = day + datetime.timedelta(days=fam.days + rng.randint(-DATE_SPREAD, DATE_SPREAD))
        return f"{moved.strftime('%B')} {moved.day}, {moved.year}"
    return value


def _vary_weight(value: str, rng: random.Random, fam: Family) -> str:
    match = re.match(r"\s*(\d+(?:\.\d+)?)(.*)", value)
    if not match:
        return value
    number = float(match.group(1)) * fam.weight * math.exp(rng.gauss(0, WEIGHT_SPREAD))
    digits = len(match.group(1).split(".")[1]) if "." in match.group(1) else 0
    return f"{number:.{digits}f}{match.group(2)}" if digits else f"{max(1, round(number))}{match.group(2)}"


def _vary_model(value: str, rng: random.Random, fam: Family) -> str:
    chars = list(value)
    spots = [i for i, c in enumerate(chars) if c.isalnum()][-2:]
    for i in spots:
        pool = "0123456789" if chars[i].isdigit() else ("ABCDEFGHJKLMNPRSTUVWXYZ" if chars[i].isupper()
                                                          else "abcdefghjkmnprstuvwxyz")
        chars[i] = rng.choice(pool)
    return "".join(chars)


VARIED_FACTS: dict[str, Callable[[str, random.Random, Family], str]] = {
    "Best Sellers Rank": _vary_rank, "Date First Available": _vary_date, "Item Weight": _vary_weight,
    "Item model number": _vary_model, "Part Number": _vary_model,
}


def vary_listing(product: Product, rng: random.Random, protected: set[str], fam: Family) -> None:
    """The listing facts a variant has of its own (rank, date, weight, model number), and the family's
    drifted values for DRIFT_SHARE of siblings."""
    for key, value in fam.drift.items():
        if rng.random() < DRIFT_SHARE:
            product.details[key] = value
    for key in list(product.details):
        vary = VARIED_FACTS.get(key)
        value = product.details[key]
        if vary is _vary_rank and isinstance(value, dict) and canonical(key) not in protected:
            factor = fam.rank * math.exp(rng.gauss(0, RANK_SPREAD))    # {"Category": 12345, ...}
            product.details[key] = {k: (max(1, round(v * factor)) if isinstance(v, int) and not isinstance(v, bool)
                                        else v) for k, v in value.items()}
            continue
        if vary is None or canonical(key) in protected or not isinstance(value, str) or not value:
            continue
        new = vary(value, rng, fam)
        if key in ("Item model number", "Part Number") and new != value:   # the literal model number only
            product.title = _phrase_pattern(value).sub(lambda m: new, product.title or "")
        product.details[key] = new


# ---------------------------------------------------------------------------------------------------------
# Violating one rubric
# ---------------------------------------------------------------------------------------------------------

def _rewrite_text(product: Product, old: str, new: str, *, title: bool) -> None:
    """Say `new` where the listing said `old`: bullets and description (and the title when asked)."""
    product.features = [replace_phrase(b, old, new) for b in product.features or []]
    product.description = [replace_phrase(d, old, new) for d in product.description or []]
    if title:
        product.title = replace_phrase(product.title, old, new)


def _replace_option(value: str, expected: str, new: str) -> str:
    """The value with the option that states `expected` swapped for `new` (dropped when `new` is already
    one of its options; the whole value when the expected phrase is not written in it)."""
    options = [o for o in _SEPARATORS.split(value) if o.strip()]
    if len(options) > 1 and normalize(new) in {normalize(o) for o in options}:
        pattern = _loose_pattern(expected)
        rest = [o for o in options if pattern is None or not pattern.search(o)]
        if rest and len(rest) < len(options):
            separator = _SEPARATORS.search(value).group(0)
            return separator.join(o.strip() for o in rest)
    replaced = replace_phrase(value, expected, new)
    return replaced if replaced != value else new


def violate_attribute(product: Product, rubric: Rubric, task: Task, pools: ValuePools,
                      rng: random.Random, keep: Sequence[Rubric]) -> bool:
    """Another plausible value of the rubric's field (and the bullets say it), such that the rubric fails
    and every other rubric on the same field still holds."""
    expected = str(rubric.expected_value)
    key = detail_key(product.details, rubric.field)
    brand_like = canonical(rubric.field) in ("Brand", "Manufacturer")
    in_title = brand_like or canonical(rubric.field) == "Color"
    for value in pools.values(product.main_category, rubric.field, rng, kin=kin_token(task))[:40]:
        for title in ((True, False) if in_title else (False,)):
            trial = copy.deepcopy(product)
            if key is not None:
                old = trial.details[key]
                trial.details[key] = _replace_option(old, expected, value) if isinstance(old, str) else value
            if title:   # the title names the brand or color too (unless that changes another requirement)
                trial.title = replace_phrase(trial.title, expected, value)
            if brand_like:
                _rebrand(trial, expected, value)
            if _ok(rubric, trial, task):   # a bullet still states the value: the bullets say the new one
                _rewrite_text(trial, expected, value, title=False)
            if _ok(rubric, trial, task) or not all(_ok(r, trial, task) for r in keep):
                continue
            if _distinctive(expected):   # the description (which no rubric reads) says the new value too
                trial.description = [replace_phrase(d, expected, value) for d in trial.description or []]
            _copy_into(product, trial)
            return True
    return False


def _distinctive(value: str) -> bool:
    """Long enough, and not a bare number, to be replaced in prose without hitting unrelated words."""
    text = normalize(value)
    return len(text.replace(" ", "")) >= 4 and not text.replace(" ", "").replace(".", "").isdigit()


def _rebrand(product: Product, old: str, new: str) -> None:
    for key in ("Brand", "Manufacturer"):
        if isinstance(product.details.get(key), str) and normalize(product.details[key]) == normalize(old):
            product.details[key] = new
    if normalize(product.store) == normalize(old):
        product.store = new


def violate_negative(product: Product, rubric: Rubric, task: Task, rng: random.Random,
                     keep: Sequence[Rubric]) -> bool:
    """One of the excluded values present."""
    excluded = [v for v in rubric.expected_value if isinstance(v, str) and v.strip()]
    key = detail_key(product.details, rubric.field)
    if not excluded or key is None:
        return False   # "[]" excludes nothing: only a missing field fails it, and the key set stays
    rng.shuffle(excluded)
    for value in excluded:
        shown = value if not value.islower() else value.title()
        trial = copy.deepcopy(product)
        trial.details[key] = shown
        if canonical(rubric.field) == "Brand":
            _rebrand(trial, str(product.details.get(key)), shown)
        if _ok(rubric, trial, task) or not all(_ok(r, trial, task) for r in keep):
            continue
        _copy_into(product, trial)
        return True
    return False


def _swap_words(text: str, token: str, replacement: str) -> str:
    """Every word of `text` whose singular keyword form is `token` replaced (case and plural kept)."""
    def sub(m: re.Match) -> str:
        word = m.group(0)
        if singular(word.lower()) != token and word.lower() != token:
            return word
        plural = word.lower().endswith("s") and not token.endswith("s") and not replacement.endswith("s")
        return _match_case(word, replacement + ("s" if plural else ""))
    return re.sub(rf"[{_WORD_CHARS}]+", sub, text or "")


def violate_entity(product: Product, rubric: Rubric, task: Task, pools: ValuePools, rng: random.Random,
                   keep: Sequence[Rubric]) -> bool:
    """Another product line in the title: the entity's head noun swapped for a neighbouring one (every
    occurrence, also in bullets and description), so no entity phrase of the rubric names the title; an
    entity that is the brand's name becomes another brand."""
    phrases = entity_phrases(rubric)
    token_sets = [keyword_tokens(p) for p in phrases]
    common = [t for t in (token_sets[0] if token_sets else []) if all(t in ts for ts in token_sets)]
    candidates = list(reversed(common)) + [t for ts in token_sets for t in reversed(ts) if t not in common]
    matcher = EntityMatcher(rubric)
    for token in candidates:
        own_brand = set(keyword_tokens(product.brand)) | set(keyword_tokens(product.store))
        if token in own_brand:
            swaps = [b for b in pools.values(product.main_category, "Brand", rng)
                     if token not in keyword_tokens(b)][:40]
        else:
            swaps = list(LINE_SWAPS.get(token, ())) or list(GENERIC_LINES)
        rng.shuffle(swaps)
        for swap in swaps:
            if token in keyword_tokens(swap):
                continue
            trial = copy.deepcopy(product)
            trial.title = _swap_words(trial.title, token, swap)
            trial.features = [_swap_words(b, token, swap) for b in trial.features or []]
            trial.description = [_swap_words(d, token, swap) for d in trial.description or []]
            if matcher.match(trial.title) is None and all(_ok(r, trial, task) for r in keep):
                _copy_into(product, trial)
                return True
    return False


def violate_store(product: Product, rubric: Rubric, pools: ValuePools, rng: random.Random) -> bool:
    stores = [s for s in pools.stores if normalize(s) != normalize(rubric.expected_value)]
    if not stores:
        return False
    product.store = rng.choice(stores)
    return True


def _copy_into(product: Product, other: Product) -> None:
    for name in ("title", "store", "features", "description", "details", "price", "average_rating",
                 "rating_number"):
        setattr(product, name, getattr(other, name))


# ---------------------------------------------------------------------------------------------------------
# Numbers: ratings, rating counts and price, drawn near the target's inside (or outside) each range
# ---------------------------------------------------------------------------------------------------------

def _logit(stars: float) -> float:
    u = min(0.99, max(0.01, (stars - 1.0) / 4.0))
    return math.log(u / (1.0 - u))


def _stars(logit: float) -> float:
    return 1.0 + 4.0 / (1.0 + math.exp(-logit))


def _touches(rubric: Rubric, name: str) -> bool:
    if rubric.type == "numeric_range":
        return rubric.field == name
    return rubric.type == "budget_match" and name == "price"


def _thresholds(rubrics: Sequence[Rubric]) -> list[float]:
    out = []
    for r in rubrics:
        v = r.expected_value
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out.append(float(v))
        elif isinstance(v, list):
            out += [float(x) for x in v]
        elif isinstance(v, dict):
            out += [float(x) for k, x in v.items() if k in ("min", "max", "value")]
    return out


def _numeric_candidates(name: str, base: Any, rubrics: Sequence[Rubric], rng: random.Random) -> list[Any]:
    """Values for one number, most plausible first: draws around the family's centre `base` (the target's
    spread), then values just inside / outside each threshold, then a coarse sweep."""
    ts = _thresholds(rubrics)
    if name == "average_rating":
        b = _stars(float(base)) if base is not None else 4.3
        near = [round(_stars(float(base) + rng.gauss(0, RATING_SPREAD)), 1) for _ in range(12)] if base is not None \
            else []
        edges = [round(min(5.0, max(1.0, t + d)), 1) for t in ts for d in (-0.3, -0.2, -0.1, 0.1, 0.2, 0.3, 0.0)]
        return near + edges + [x / 10 for x in range(10, 51)]
    if name == "rating_number":
        b = float(base) if base else 50.0
        near = [max(1, round(b * math.exp(rng.gauss(0, COUNT_SPREAD)))) for _ in range(12)]
        edges = [max(1, round(t * f)) for t in ts for f in (0.3, 0.5, 0.8, 0.95, 1.05, 1.3, 2.0)]
        edges += [max(1, round(t)) + d for t in ts for d in (-1, 0, 1)]
        return near + edges + [1, 2, 3, 5, 8, 13, 25, 60, 150, 400, 1200, 5000]
    # price: a target without one gives its siblings none, unless a rubric needs one
    if base is None and not rubrics:
        return [None]
    b = float(base) if base is not None else (ts[0] if ts else 20.0)
    near = [_price_tag(b * math.exp(rng.gauss(0, PRICE_SPREAD)), rng) for _ in range(12)]
    edges = [_price_tag(t * f, rng) for t in ts for f in (0.8, 0.9, 0.97, 1.03, 1.1, 1.25)]
    edges += [round(t + d, 2) for t in ts for d in (-0.5, -0.01, 0.01, 0.5)]
    fine = [round(b * f, 2) for f in (0.7, 0.8, 0.9, 0.95, 1.05, 1.1, 1.2, 1.4)]
    span = [round(max([b, *ts]) * 3 * 0.97 ** n, 2) for n in range(160)]    # 3x the largest down to ~2.5%
    return near + edges + fine + [x for x in span if x > 0]


def choose_numbers(product: Product, task: Task, violate: set[str], rng: random.Random, fam: Family) -> bool:
    """Draw the sibling's average_rating, rating_number and price around the family's centre, inside every
    range it must satisfy, outside the ones it must violate. False when no value does both."""
    for name in NUMERIC_FIELDS:
        rubrics = [r for r in task.rubrics if _touches(r, name)]
        base = {"average_rating": fam.rating, "rating_number": fam.count, "price": fam.price}[name]
        for value in _numeric_candidates(name, base, rubrics, rng):
            if value is not None and name == "rating_number":
                value = int(value)
            if value is not None and value <= 0:
                continue
            setattr(product, name, value)
            if all(_ok(r, product, task) == (r.id not in violate) for r in rubrics):
                break
        else:
            return False
    return True


# ---------------------------------------------------------------------------------------------------------
# One task's siblings
# ---------------------------------------------------------------------------------------------------------

@dataclass
class Sibling:
    product: Product
    reviews: list[Review]
    task_id: str
    violates: tuple[str, ...]       # rubric ids it fails on purpose
    kind: str                       # "rubric" | "query_only"


@dataclass
class SiblingStats:
    made: Counter = field(default_factory=Counter)                 # (source, rubric type) -> siblings
    wanted: Counter = field(default_factory=Counter)
    impossible: list[str] = field(default_factory=list)           # "task rubric (type): why"
    dropped_not_unique: int = 0

    def line(self) -> str:
        total = sum(self.made.values())
        missing = len(self.impossible)
        return (f"{total} hard-negative siblings" + (f"; no sibling for {missing} rubric(s): "
                                                     + "; ".join(self.impossible[:5]) if missing else "")
                + (f"; {self.dropped_not_unique} dropped (they matched every rubric of a task)"
                   if self.dropped_not_unique else ""))


def _violate(product: Product, rubric: Rubric, task: Task, pools: ValuePools, rng: random.Random,
             keep: Sequence[Rubric]) -> bool:
    """Make `product` fail `rubric` while every rubric in `keep` (mechanical, to keep) still holds."""
    if rubric.type == "attribute_match":
        return violate_attribute(product, rubric, task, pools, rng, keep)
    if rubric.type == "negative_attribute":
        return violate_negative(product, rubric, task, rng, keep)
    if rubric.type == "entity_match":
        return violate_entity(product, rubric, task, pools, rng, keep)
    if rubric.type == "store_match":
        return violate_store(product, rubric, pools, rng)
    return rubric.type in ("numeric_range", "budget_match", "review_opinion")   # numbers / reviews later


def make_one(task: Task, violate: Sequence[Rubric], rng: random.Random, pools: ValuePools, taken: set[str],
             make_reviews: Callable[[str, str, list[str], random.Random], list[Review]], review_checker,
             protected: set[str], fam: Family) -> Sibling | None:
    """A sibling of the task's target failing exactly the rubrics in `violate` (checked with the judge)."""
    target = task.target_product
    wanted = {r.id for r in violate}
    for _ in range(MAX_ATTEMPTS):
        product = copy.deepcopy(target)
        product.product_id = "?"
        vary_listing(product, rng, protected, fam)
        keep = [r for r in task.rubrics if r.id not in wanted and r.type != "review_opinion"]
        if not all(_violate(product, r, task, pools, rng, keep) for r in violate):
            continue
        if not choose_numbers(product, task, wanted, rng, fam):
            continue
        mechanical = [r for r in task.rubrics if r.type != "review_opinion"]
        if not all(_ok(r, product, task) == (r.id not in wanted) for r in mechanical):
            continue
        product.product_id = new_id(target.product_id, rng, taken)
        opinions = [r for r in task.rubrics if r.type == "review_opinion"]
        keep = [r.opinion for r in opinions if r.id not in wanted]
        avoid = [r.opinion for r in opinions if r.id in wanted]
        reviews = make_reviews(product.product_id, task.id, keep, rng) if not avoid else \
            make_reviews(product.product_id, task.id, keep, rng, avoid=avoid)
        if opinions and not all(_ok(r, product, task, reviews, review_checker) == (r.id not in wanted)
                                for r in opinions):
            taken.discard(product.product_id)
            continue
        kind = "rubric" if len(violate) == 1 else "query_only"
        return Sibling(product, reviews, task.id, tuple(sorted(wanted)), kind)
    return None


def make_siblings(tasks: Sequence[Task], *, per_rubric: int = DEFAULT_PER_RUBRIC,
                  query_only: int = DEFAULT_QUERY_ONLY, seed: int = 0, taken: set[str],
                  pools: ValuePools, make_reviews, review_checker=None) -> tuple[list[Sibling], SiblingStats]:
    """Every task's siblings (see the module docstring), then the uniqueness pass over all of them."""
    stats = SiblingStats()
    out: list[Sibling] = []
    protected_by_target: dict[str, set[str]] = {}
    for task in tasks:
        protected_by_target.setdefault(task.target_product.product_id, set()).update(
            canonical(r.field) for r in task.rubrics)
    for task in tasks:
        if not all(_ok(r, task.target_product, task) for r in task.rubrics if r.type != "review_opinion"):
            stats.impossible.append(f"{task.id}: its target does not satisfy its own rubrics")
            continue
        protected = protected_by_target[task.target_product.product_id]
        fam = family_of(task, pools, random.Random(f"siblings|family|{SIBLINGS_VERSION}|{seed}|{task.id}"),
                        protected)
        for rubric in task.rubrics:
            key = (rubric.info_source, rubric.type)
            stats.wanted[key] += per_rubric
            made = 0
            for j in range(per_rubric):
                rng = random.Random(f"siblings|{SIBLINGS_VERSION}|{seed}|{task.id}|{rubric.id}|{j}")
                sibling = make_one(task, [rubric], rng, pools, taken, make_reviews, review_checker, protected,
                                   fam)
                if sibling is not None:
                    out.append(sibling)
                    made += 1
            stats.made[key] += made
            if made == 0 and per_rubric:
                stats.impossible.append(f"{task.id} {rubric.id} ({rubric.type} {rubric.field})")
        hidden = [r for r in task.rubrics if r.info_source in ("persona", "clarification")]
        for j in range(query_only if hidden else 0):
            rng = random.Random(f"siblings|{SIBLINGS_VERSION}|{seed}|{task.id}|query-only|{j}")
            # every hidden rubric it can violate together (dropping, one by one, those it cannot)
            violate = list(hidden)
            sibling = None
            while violate and sibling is None:
                sibling = make_one(task, violate, rng, pools, taken, make_reviews, review_checker, protected,
                                   fam)
                if sibling is None:
                    violate = violate[:-1]
            if sibling is not None:
                sibling.kind = "query_only"
                out.append(sibling)
                stats.made[("query", "query_only")] += 1
    kept = drop_non_unique(tasks, out, review_checker)
    stats.dropped_not_unique = len(out) - len(kept)
    return kept, stats


def drop_non_unique(tasks: Sequence[Task], siblings: list[Sibling], review_checker) -> list[Sibling]:
    """Siblings that satisfy every rubric of some task (of their category) are dropped: each target stays
    the only product a task accepts."""
    by_category: dict[str, list[Task]] = {}
    for task in tasks:
        by_category.setdefault(task.target_product.main_category, []).append(task)
    kept = []
    for sibling in siblings:
        p = sibling.product
        spoils = False
        for task in by_category.get(p.main_category, []):
            mechanical = [r for r in task.rubrics if r.type != "review_opinion"]
            if not all(_ok(r, p, task) for r in mechanical):
                continue
            if all(_ok(r, p, task, sibling.reviews, review_checker) for r in task.rubrics
                   if r.type == "review_opinion"):
                spoils = True
                break
        if not spoils:
            kept.append(sibling)
    return kept

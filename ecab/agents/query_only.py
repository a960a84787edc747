"""The query-only adversary (issue 27): the attacker the benchmark must resist.

It never calls get_user_profile or ask_user. It reads the visible query, searches the catalog several ways
(the query, its keywords, the product it names), inspects the best hits, searches the title of the
best-fitting one to pull in its near-identical listings, inspects those, reads everyone's rating statistics,
drops the listings that break what the query states (price cap and final budget, star and rating-count
minimums, excluded values) and ranks the rest by how many of the query's words they state plus FORM CUES:
how a listing sits among the near-identical listings around it (its family or product line: is it the one
the others look copied from, does it hold the original of a widened value, does its text contradict its
details), its price digits, its title's frequency, its search rank, its numbers. None of these cues says
anything about the shopper; a benchmark whose hidden information matters must leave this agent no better
than a blind pick among the query's matches.

Written to maximise its score, not to pass: every cue below is one a construction bug or a generator's
habit could leak, and each is documented with the reason it would point at the target. The scoring is a
pure function (`choose`) over what the tools returned, so tests and offline measurements can exercise it
on hand-made listings.
"""
from __future__ import annotations

import json
import math
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable

from ecab.agents.base import ScriptedAgent, SearchFusion, read_review_stats
from ecab.agents.heuristic import Constraints
from ecab.core.text import keyword_tokens, normalize, singular
from ecab.schema import Task

MAX_CALLS = 60            # tool calls before recommend_product (the episode's budget - 1 when smaller)
FIRST_DETAILS = 12        # listings inspected from the query's own searches before the family search
FAMILY_PAGES = 3          # search pages of the best-fitting listing's title (its near-identical listings)
FAMILY_TITLE = 0.5        # a hit whose title shares this much (Jaccard) with that title is inspected first
STATS_BATCH = 10          # get_product_review_stats takes at most 10 ids
RRF_K = 10                # reciprocal-rank fusion of the searches

# Words that say how the shopper talks, not what they want: never search or match terms.
FILLER = frozenset("""
i im i'm me my we our you your it its it's this that these those they them their there here a an the and or
but so if then than as at by for from in into of on onto to with within without about over under above below
up down out off again also too very really just only even still quite rather any some each every all both
either neither no not nor none nothing something anything everything one ones thing things stuff
am is are was were be been being do does did doing done have has had having can could should would will shall
may might must need needs needed want wants wanted wanting like looking look find finding get getting got
please help suggest suggestion suggestions recommend recommendation searching search shopping shop buy buying
purchase new old current currently since because while when where which who whom whose what how why
make sure sure definitely absolutely exactly specifically especially perfectly totally completely fully
entirely simply right around away keep keeps kept work works working use used using uses go going goes
product products item items listing listings option options choice choices one-piece piece
least most more less much many lot lots few several well-reviewed reviewed review reviews rating ratings rated
star stars price priced cost costs costing budget dollar dollars coupon discount final total order orders
applying apply applied capped cap worth before after customer customers well dont doesnt cant wont isnt
instead rely relying additionally also mention mentions mentioning mentioned say says saying
""".split())
_FILLER_FORMS = FILLER | {singular(w) for w in FILLER} | {w.replace("'", "") for w in FILLER}


def _content(word: str) -> bool:
    """Whether a word (any case, singular or not) says something about the product."""
    w = word.lower().strip(".")
    return bool(w) and w not in _FILLER_FORMS and singular(w) not in _FILLER_FORMS


# Words that name no value in a negative clause ("no white OR red OPTIONS").
NEGATIVE_GENERIC = frozenset("option options anything one ones thing things product products item items kind "
                             "type types version versions model models system systems look looks style".split())
# A generator's price endings (ecab's sibling and synthetic prices end this way); a real listing's price
# often ends otherwise.
GENERATED_CENTS = frozenset({99, 95, 49, 69, 29, 89})

# How much each cue counts in a listing's score (every cue is in [0, 1]). Set by measuring the agent on the
# generated world and on the released sample with catalog=targets (an attacker tunes on what it can get).
WEIGHTS: dict[str, float] = {
    "fit": 8.0,               # share of the query's words the listing states
    "structure": 12.0,        # 1 for its family's listing best explaining the others as its copies, down to 0
    "consistent": 1.0,        # its text names no value its family holds on a key instead of its own
    "drift_subset": 1.0,      # holds the shorter of "A" / "A, B" on keys where its family has both
    "drift_minority": 0.25,   # holds the minority value on two-valued keys where the minority is large
    "rare_cents": 0.15,       # its price ending is rare in its family
    "odd_cents": 1.0,         # its price ends unlike a generator's (.99, .95, ...) among generated-looking ones
    "title_mode": 0.25,       # its title is its family's most common one
    "first_in_family": 0.5,   # its family's best-ranked member in the query's searches
    "rank": 0.5,              # reciprocal-rank fusion over the query's searches, scaled to [0, 1]
    "stars": 0.5,             # its average rating's percentile in its family (hidden minimum-rating rubrics)
    "ratings": 0.5,           # its rating count's percentile in its family (hidden minimum-count rubrics)
    "cheap": 0.5,             # 1 - its price's percentile in its family (hidden price caps)
    "family_size": 2.0,       # log size of its family (a target is built with many listings around it)
}
# ... among a family of copies of one listing (catalog=targets builds the released tasks' hard negatives so):
# there the values are balanced so that the original no longer explains its copies best, while the best rated
# copy still meets the hidden minimum-rating rubrics most often (measured on the released sample).
COPY_WEIGHTS: dict[str, float] = {**WEIGHTS, "structure": 0.0, "drift_subset": 0.0, "consistent": 0.0,
                                  "rank": 0.0, "first_in_family": 0.0, "stars": 20.0, "ratings": 5.0}
COPY_PREFIX_SHARE = 0.8   # a family is one of copies when this share of it has the same id prefix
DRIFT_LIKE_SHARE = 0.5    # structure: a key most of the family disagrees on is drift, seen from that listing
DRIFT_KEY_COST = 2.5      # structure: the cost of one drift key ...
RARE_VALUE_COST = 2.0     # ... plus this when few listings share the listing's own value there
RARE_MIN_COUNT = 2        # "few": fewer than this many listings ...
RARE_SHARE = 0.12         # ... or than this share of the family
SUPERSET_AGREES = True    # structure: a value widening the listing's own (widened()) agrees with it
STRUCTURE_SPAN = 8.0      # structure falls to 0 at this much cost above the family's least
DRIFT_MIN_COUNT = 4       # drift_minority: a two-valued key whose smaller value at least this many hold ...
DRIFT_MIN_SHARE = 0.12    # ... and this share of the family
VIOLATION_COST = 100.0    # per violation of what the query states: a listing breaking it never wins on cues
TITLE_LINK = 0.5          # title Jaccard linking two listings into one family ...
KEYS_LINK = 0.8           # ... when their detail keys are this alike
TITLE_LINK_SAME_KEYS = 0.25   # ... or when they have exactly the same detail keys


# ---------------------------------------------------------------------------------------------------------
# What the query states
# ---------------------------------------------------------------------------------------------------------

_NEGATION = re.compile(
    r"\b(?:do not want|don't want|dont want|do not need|don't need|doesn't have|does not have|not|no|"
    r"avoid(?:ing)?|without|never|excluding|except|rather than|other than|instead of|anything but)\s+")
_CLAUSE_END = re.compile(r"[,.;:!?()]|\b(?:and (?:it|i|they|should|must|needs?|has|have|is|are|for|the)|but|so|"
                         r"because|since|that|which|while|as|when|if|though)\b")
_SPLIT = re.compile(r"\s+(?:or|and|nor)\s+|/")
_LEAD = re.compile(r"^(?:want|like|need|have|has|any|a|an|the|to|be|being|use|using|get|something|with)\s+")
_SENTENCE_CHAR = r"(?:[^.?!]|\.(?=\d))"     # a decimal point does not end a sentence
_COUPON_SENTENCE = re.compile(_SENTENCE_CHAR + r"*\b(?:coupon|voucher|discount|final total|after applying)\b"
                              + _SENTENCE_CHAR + r"*[.?!]?", re.I)
_MONEY = r"\$\s*(\d+(?:,\d{3})*(?:\.\d+)?)"
_HEAD = re.compile(r"\b(?:need|needs|want|looking for|searching for|shopping for|suggestions for|find me|"
                   r"get me|recommend|upgrade to|buy)\s+(?:(?:an?|some|the|new|replacement|good|one)\b\s*)*"
                   r"([^,.;:!?]+)", re.I)
_HEAD_STOP = re.compile(r"\b(?:for|that|with|from|which|to|made|by|rated|and|in|on|under|who|where|because|"
                        r"since|so|it|as|at|of)\b", re.I)


@dataclass
class Query:
    """What the shopper's visible text states: numbers, excluded phrases, the words to match."""

    text: str
    constraints: Constraints
    final_budget: float | None = None       # "the final total must stay under $X" (after a coupon)
    coupon_fixed_off: float = 0.0           # the most the coupon(s) can take off: fixed amounts and caps ...
    coupon_percent_off: float = 0.0         # ... plus these shares of the price (uncapped percentages)
    negatives: list[list[str]] = field(default_factory=list)   # each: the tokens of one excluded phrase
    terms: list[str] = field(default_factory=list)             # keyword tokens to find in a listing

    @classmethod
    def parse(cls, text: str) -> "Query":
        text = text or ""
        coupon = " ".join(m.group(0) for m in _COUPON_SENTENCE.finditer(text))
        plain = _COUPON_SENTENCE.sub(" ", text) if coupon else text
        constraints = Constraints.parse(plain)
        constraints.negatives = []
        q = cls(text=text, constraints=constraints)
        if coupon:
            q._parse_coupon(coupon)
            if constraints.max_price is None and (m := re.search(r"under\s*" + _MONEY + r"\s*before", coupon, re.I)):
                constraints.max_price = float(m.group(1).replace(",", ""))
        q.negatives = negative_phrases(plain)
        excluded = {t for phrase in q.negatives for t in phrase}
        numbers = {_num_token(v) for v in (constraints.max_price, constraints.min_rating, constraints.min_ratings)
                   if v is not None}
        q.terms = [t for t in keyword_tokens(_strip_numbers(plain))
                   if _content(t) and t not in excluded and t not in numbers and (len(t) > 1 or t.isdigit())]
        return q

    def _parse_coupon(self, coupon: str) -> None:
        """The final-total cap and an upper bound of what the coupon(s) can take off (fixed amounts and caps,
        plus uncapped percentages of the price)."""
        low = coupon.lower()
        m = (re.search(r"(?:final total|total|final price)[^$]*?" + _MONEY, low)
             or re.search(r"(?:under|below|at most|within|no more than)\s*" + _MONEY + r"[^.]*after", low))
        if m:
            self.final_budget = float(m.group(1).replace(",", ""))
        fixed = [float(x.replace(",", "")) for x in
                 re.findall(r"(?:worth|capped at|gives|cap of)\s*" + _MONEY, low)
                 + re.findall(_MONEY + r"\s+(?:\w+\s+)?(?:coupon|off)\b", low)]
        percents = [float(x) / 100 for clause in re.split(r"[,;]\s|\.\s", low) if "capped" not in clause
                    for x in re.findall(r"(\d+(?:\.\d+)?)\s*%", clause)]
        self.coupon_fixed_off = sum(fixed)
        self.coupon_percent_off = sum(percents)

    def price_verdict(self, price: float | None) -> bool | None:
        """Whether the list price can meet the query's price cap and final budget (None: unknown)."""
        c = self.constraints
        if c.max_price is None and self.final_budget is None:
            return True
        if price is None:
            return None
        if c.max_price is not None and price > c.max_price:
            return False
        if self.final_budget is not None:
            most_off = self.coupon_fixed_off + self.coupon_percent_off * price
            if price - most_off > self.final_budget + 0.01:
                return False
        return True


def _num_token(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _strip_numbers(text: str) -> str:
    """The query without its stated numbers (prices, star and rating-count thresholds, percentages)."""
    text = re.sub(_MONEY, " ", text)
    text = re.sub(r"\d+(?:\.\d+)?\s*%", " ", text)
    text = re.sub(r"\d+(?:,\d{3})*(?:\.\d+)?\s*(?:\+\s*)?(?:stars?|-star|ratings|reviews|reviewers|out of 5)", " ",
                  text, flags=re.I)
    return text


def negative_phrases(text: str) -> list[list[str]]:
    """Each excluded phrase of the query as its value tokens: "no white or red options" -> [[white], [red]];
    "I do not want a dashboard mount" -> [[dashboard, mount]]."""
    out: list[list[str]] = []
    low = text.lower()
    for m in _NEGATION.finditer(low):
        rest = low[m.end():]
        end = _CLAUSE_END.search(rest)
        clause = rest[: end.start()] if end else rest
        for part in _SPLIT.split(clause):
            part = part.strip()
            while (lead := _LEAD.match(part)) is not None:
                part = part[lead.end():]
            words = [t for t in keyword_tokens(part) if t not in NEGATIVE_GENERIC and _content(t)]
            if words and len(words) <= 4 and words not in out:
                out.append(words)
    return out


def head_phrase(text: str) -> str:
    """The product the shopper names: "need a face mask brush for applying..." -> "face mask brush"."""
    for m in _HEAD.finditer(text or ""):
        phrase = m.group(1)
        stop = _HEAD_STOP.search(phrase)
        words = (phrase[: stop.start()] if stop else phrase).split()
        if any(_content(w) for w in words):
            return " ".join(words[:6])
    return ""


def capitalized_words(text: str) -> list[str]:
    """Words capitalized inside a sentence (brands, colours, models): "made by Boao" -> Boao."""
    out = []
    for sentence in re.split(r"(?<=[.!?])\s+", text or ""):
        words = re.findall(r"[A-Za-z0-9][\w\-\.]*", sentence)
        for w in words[1:]:
            if len(w) > 1 and (w[0].isupper() or (any(c.isdigit() for c in w) and any(c.isalpha() for c in w))) \
                    and _content(w) and w not in out:
                out.append(w.rstrip("."))
    return out


def search_queries(text: str, terms: list[str]) -> list[str]:
    """The query itself, its keywords, and the named product with its capitalized words."""
    head = head_phrase(text)
    caps = [w for w in capitalized_words(text) if w.lower() not in head.lower()]
    out = [text, " ".join(terms[:12]), " ".join([*caps[:5], head]).strip(), head]
    seen, unique = set(), []
    for s in out:
        s = " ".join(s.split())
        if s and s.lower() not in seen:
            seen.add(s.lower())
            unique.append(s)
    return unique


# ---------------------------------------------------------------------------------------------------------
# What the tools returned
# ---------------------------------------------------------------------------------------------------------

@dataclass
class Listing:
    """One inspected product as the tools showed it."""

    product_id: str
    title: str = ""
    store: str = ""
    price: float | None = None
    details: dict[str, Any] = field(default_factory=dict)
    features: list[str] = field(default_factory=list)
    description: list[str] = field(default_factory=list)
    rating: float | None = None
    count: int | None = None
    rrf: float = 0.0          # reciprocal-rank fusion over the query's searches that returned it

    @classmethod
    def from_details(cls, product: dict[str, Any], rrf: float = 0.0) -> "Listing":
        details = product.get("details")
        return cls(product_id=str(product.get("product_id", "")), title=str(product.get("title") or ""),
                   store=str(product.get("store") or ""), price=_float(product.get("price")),
                   details=details if isinstance(details, dict) else {},
                   features=[str(x) for x in product.get("features") or [] if x is not None],
                   description=[str(x) for x in product.get("description") or [] if x is not None],
                   rrf=rrf)

    def text_tokens(self) -> set[str]:
        parts = [self.title, self.store, *self.features, *self.description]
        parts += [f"{k} {_value_text(v)}" for k, v in self.details.items()]
        return set(keyword_tokens(" ".join(parts)))

    def detail_tokens(self) -> set[str]:
        return set(keyword_tokens(" ".join([self.title, *(f"{k} {_value_text(v)}" for k, v in self.details.items())])))


def _float(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(float(value)) else None
    m = re.search(r"\d+(?:,\d{3})*(?:\.\d+)?", str(value))
    return float(m.group(0).replace(",", "")) if m else None


def _value_text(value: Any) -> str:
    if isinstance(value, dict):
        return " ".join(f"{k} {_value_text(v)}" for k, v in value.items())
    if isinstance(value, list):
        return " ".join(_value_text(v) for v in value)
    return "" if value is None else str(value)


def _value_key(value: Any) -> str:
    """A value's comparison form: normalized text; dicts and lists as sorted JSON."""
    if isinstance(value, (dict, list)):
        return normalize(json.dumps(value, sort_keys=True, ensure_ascii=False))
    return normalize(value)


def _options(value_key: str) -> frozenset[str]:
    return frozenset(o.strip() for o in value_key.split(",") if o.strip())


# ---------------------------------------------------------------------------------------------------------
# Scoring
# ---------------------------------------------------------------------------------------------------------

def _jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def families(listings: list[Listing]) -> list[list[int]]:
    """Near-identical listings grouped (single linkage): alike titles and detail keys (copies of a listing keep
    its layout; a product line's listings share one)."""
    n = len(listings)
    parent = list(range(n))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    titles = [set(keyword_tokens(x.title)) for x in listings]
    keys = [frozenset(str(k).lower() for k in x.details) for x in listings]
    for i in range(n):
        for j in range(i + 1, n):
            t = _jaccard(titles[i], titles[j])
            k = _jaccard(keys[i], keys[j])
            if (k >= KEYS_LINK and t >= TITLE_LINK) or (keys[i] == keys[j] and len(keys[i]) >= 4
                                                        and t >= TITLE_LINK_SAME_KEYS):
                parent[root(i)] = root(j)
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(root(i), []).append(i)
    return sorted(groups.values(), key=lambda g: g[0])


def _cents(price: float | None) -> int | None:
    return None if price is None else int(round(price * 100)) % 100


def _percentile(value: float | None, values: list[float]) -> float:
    """Share of `values` strictly below `value`, plus half the ties (0.5 when unknown)."""
    if value is None or not values:
        return 0.5
    below = sum(1 for v in values if v < value)
    same = sum(1 for v in values if v == value)
    return (below + 0.5 * same) / len(values)


def _key_values(members: list[Listing]) -> dict[str, dict[str, str]]:
    """key -> {product id: comparison form of its value ("<missing>" when the listing lacks the key)}, for the
    keys on which the family disagrees and some value is shared (a fact every listing has its own value
    of - model number, rank, date - carries no family signal)."""
    out = {}
    values = {x.product_id: {str(k): _value_key(v) for k, v in x.details.items()} for x in members}
    for key in sorted({str(k) for x in members for k in x.details}):
        held = {x.product_id: values[x.product_id].get(key, "<missing>") for x in members}
        counts = Counter(held.values())
        if len(counts) > 1 and max(counts.values()) > 1:
            out[key] = held
    held = {x.product_id: normalize(x.store) or "<missing>" for x in members}
    counts = Counter(held.values())
    if len(counts) > 1 and max(counts.values()) > 1:
        out["<store>"] = held
    return out


def widened(held: dict[str, str]) -> dict[str, set[str]]:
    """{value: the values that widen it} on one key: "A, B" widens "A" when it lists A's options and more, and
    at least two listings hold it (a generator's drift adds an option on most of a line)."""
    counts = Counter(v for v in held.values() if v != "<missing>")
    out: dict[str, set[str]] = {}
    for v in counts:
        for w in counts:
            if counts[w] >= 2 and _options(v) < _options(w):
                out.setdefault(v, set()).add(w)
    return out


def structure_cost(pid: str, members: list[Listing], keys: dict[str, dict[str, str]],
                   widen: dict[str, dict[str, set[str]]] | None = None) -> float:
    """How badly "`pid` is the original and every other listing a copy of it with one thing changed"
    explains the family: the lower, the likelier `pid` is the listing the others were made from.

    A construction that makes hard negatives copies the target and breaks ONE requirement per copy (a few
    copies per requirement), and to hide the target it gives most copies another value on a fact or two
    (drift). Seen from the target, a key is then either drift (most listings disagree with it: costs
    DRIFT_KEY_COST) or a broken requirement (a few listings disagree), and each copy disagrees on at most
    one such key - except a handful of copies that break the same several hidden requirements together,
    which share one pattern. Seen from a copy, its own broken key looks like drift, but the listings that
    kept the target's value on the real drift keys now disagree on two keys each, in varied patterns: each
    distinct pattern of two or more disagreements costs its size - 1. A generator that drifts by adding an
    option ("A" -> "A, B") leaves the original agreeing with no one there; so a listing whose value
    contains this one's options counts as agreeing with it (it meets every requirement this one meets),
    which the original's copies cannot claim back.
    """
    n = len(members)
    cost = 0.0
    rare = max(RARE_MIN_COUNT, RARE_SHARE * n)
    widen = {key: widened(held) for key, held in keys.items()} if widen is None else widen
    delta: dict[str, list[str]] = {x.product_id: [] for x in members if x.product_id != pid}
    for key, held in keys.items():
        mine = held[pid]
        # A listing whose value widens this one's still meets whatever requirement this one meets: it agrees.
        wider = widen[key].get(mine, set()) if SUPERSET_AGREES else set()
        against = [y for y in delta if held[y] != mine and held[y] not in wider]
        if len(against) >= DRIFT_LIKE_SHARE * (n - 1):
            # A drift key keeps the target's value on a good part of the family; a broken requirement's
            # wrong value is held by only a few copies.
            cost += DRIFT_KEY_COST + (RARE_VALUE_COST if n - len(against) < rare else 0.0)
            continue
        for y in against:
            delta[y].append(key)
    patterns = {frozenset(d) for d in delta.values() if len(d) >= 2}
    return cost + sum(len(p) - 1 for p in patterns)


def _phrase(value_key: str) -> str:
    return " " + " ".join(value_key.replace(",", " ").split()) + " "


def text_conflicts(x: Listing, keys: dict[str, dict[str, str]]) -> int:
    """On how many keys the listing's own text (title, bullets, description) names another value its family
    holds there and not its own: a copy whose detail was changed and whose text was not (fully) rewritten
    contradicts itself; the original listing does not."""
    text = _phrase(normalize(" ".join([x.title, *x.features, *x.description])))
    conflicts = 0
    for key, held in keys.items():
        mine = held.get(x.product_id, "<missing>")
        own = _phrase(mine)
        others = {v for v in held.values() if v != mine and v != "<missing>"}
        states = [v for v in others if len(v) >= 4 and not v.replace(".", "").isdigit()
                  and _phrase(v).strip() not in own and own.strip() not in _phrase(v) and _phrase(v) in text]
        if states and (mine == "<missing>" or own not in text):
            conflicts += 1
    return conflicts


def family_cues(members: list[Listing]) -> dict[str, dict[str, float]]:
    """Form cues of each listing among its family; empty cues for families of fewer than three listings
    (no frequency to read)."""
    out: dict[str, dict[str, float]] = {x.product_id: {} for x in members}
    n = len(members)
    if n < 3:
        return out
    keys = _key_values(members)
    widen = {key: widened(held) for key, held in keys.items()}
    cost = {x.product_id: structure_cost(x.product_id, members, keys, widen) for x in members}
    minority_hits: Counter = Counter()
    minority_keys = 0
    subset_hits: Counter = Counter()
    subset_keys = 0
    for key, held in keys.items():
        counts = Counter(held.values())
        # Drift by one more option: listings made from an original list "A, B" where it lists "A" (a
        # generator widening a multi-valued fact keeps every requirement on A true). On every key where one
        # value widens another, the narrower is the original's.
        shorter = set(widen[key])
        if shorter:
            subset_keys += 1
            for pid, v in held.items():
                subset_hits[pid] += v in shorter
            continue
        repeated = [v for v, c in counts.most_common() if c >= 2]
        if len(repeated) == 2 and min(counts[v] for v in repeated) >= max(DRIFT_MIN_COUNT, DRIFT_MIN_SHARE * n) \
                and sum(counts[v] for v in repeated) >= 0.8 * n:
            # Drift by replacement: a fact with two common values, the smaller one still held by many (a
            # broken requirement's wrong value is held by only a few listings): the target keeps its own
            # value, the minority one.
            a, b = repeated
            minority = b if counts[b] <= counts[a] else a
            minority_keys += 1
            for pid, v in held.items():
                minority_hits[pid] += v == minority
    least = min(cost.values())
    prefix_share = Counter(x.product_id[:4] for x in members).most_common(1)[0][1] / n
    titles = Counter(normalize(x.title) for x in members)
    cents = Counter(_cents(x.price) for x in members if x.price is not None)
    priced = sum(cents.values())
    generated_share = sum(c for v, c in cents.items() if v in GENERATED_CENTS) / priced if priced else 0.0
    best_title = max(titles.values())
    ranked = sorted(members, key=lambda x: (-x.rrf, x.product_id))
    ratings = [x.rating for x in members if x.rating is not None]
    counts_ = [float(x.count) for x in members if x.count is not None]
    prices = [x.price for x in members if x.price is not None]
    for x in members:
        c = out[x.product_id]
        pid = x.product_id
        # The listing the others look copied from (structure_cost), the original of widened values and of
        # replaced facts (above), a text that does not contradict its details (text_conflicts).
        c["structure"] = max(0.0, 1.0 - (cost[pid] - least) / STRUCTURE_SPAN)
        c["drift_subset"] = subset_hits[pid] / subset_keys if subset_keys else 0.0
        c["drift_minority"] = minority_hits[pid] / minority_keys if minority_keys else 0.0
        c["consistent"] = 1.0 / (1.0 + text_conflicts(x, keys))
        # Re-listings copy their anchor's title and siblings keep their target's: the most common title
        # is the original's.
        c["title_mode"] = float(best_title >= 2 and titles[normalize(x.title)] == best_title)
        mine = _cents(x.price)
        if mine is not None and priced >= 3:
            # A price ending nobody else in the family has: copied listings get generated prices.
            c["rare_cents"] = 1.0 - (cents[mine] - 1) / (priced - 1)
            c["odd_cents"] = float(mine not in GENERATED_CENTS and generated_share >= 0.6)
        # The search engine ranks the original first among its copies (its title says the most).
        c["first_in_family"] = float(ranked[0].product_id == pid and ranked[0].rrf > ranked[1].rrf)
        # Hidden numeric requirements ask for at least so many stars / ratings, at most a price: the best
        # rated, most rated, cheapest of a family breaks the fewest of them.
        c["stars"] = _percentile(x.rating, ratings)
        c["ratings"] = _percentile(None if x.count is None else float(x.count), counts_)
        c["cheap"] = 1.0 - _percentile(x.price, prices)
        # Hard negatives are built around the target: the biggest family matching the query is its own.
        c["family_size"] = min(1.0, math.log(n) / math.log(40))
        # Copies of one listing keep its id's first characters (variants listed together share them); a
        # product line's listings do not. The two kinds of family leak different cues (COPY_WEIGHTS).
        c["copies"] = float(prefix_share >= COPY_PREFIX_SHARE)
    return out


def query_fit(x: Listing, q: Query, present: set[str], tokens: set[str] | None = None) -> float:
    """Share of the query's words (those some inspected listing states) that the listing states in its title,
    store, details, bullets or description."""
    tokens = x.text_tokens() if tokens is None else tokens
    terms = [t for t in q.terms if t in present]
    return sum(1 for t in terms if t in tokens) / len(terms) if terms else 0.0


def violations(x: Listing, q: Query, detail_tokens: set[str] | None = None) -> float:
    """How badly the listing breaks what the query states (0: passes; unknown numbers count half)."""
    bad = 0.0
    c = q.constraints
    verdict = q.price_verdict(x.price)
    bad += 0.0 if verdict else (0.5 if verdict is None else 1.0)
    if c.min_rating is not None:
        bad += 0.5 if x.rating is None else float(x.rating < c.min_rating)
    if c.min_ratings is not None:
        bad += 0.5 if x.count is None else float(x.count < c.min_ratings)
    tokens = x.detail_tokens() if detail_tokens is None else detail_tokens
    for phrase in q.negatives:
        if all(t in tokens for t in phrase):
            bad += 1.0
    return bad


def cue_table(listings: list[Listing], q: Query) -> list[tuple[Listing, dict[str, float]]]:
    """Every listing with its cues (family cues, query fit, search rank) and its violations of what the query
    states."""
    if not listings:
        return []
    token_sets = {x.product_id: x.text_tokens() for x in listings}
    present = {t for toks in token_sets.values() for t in set(q.terms) & toks}
    cues: dict[str, dict[str, float]] = {}
    for group in families(listings):
        cues.update(family_cues([listings[i] for i in group]))
    top_rrf = max(x.rrf for x in listings) or 1.0
    rows = []
    for x in listings:
        c = dict(cues.get(x.product_id, {}))
        c["fit"] = query_fit(x, q, present, token_sets[x.product_id])
        c["rank"] = x.rrf / top_rrf
        c["violations"] = violations(x, q)
        rows.append((x, c))
    return rows


def rank_table(rows: list[tuple[Listing, dict[str, float]]], weights: dict[str, float] | None = None,
               seed: int = 0, copy_weights: dict[str, float] | None = None
               ) -> list[tuple[float, Listing, dict[str, float]]]:
    """(score, listing, cues), best first: the listings with the fewest violations of what the query states
    first, then by the weighted sum of their cues (`copy_weights` for members of a family of copies, `weights`
    for the rest); ties broken by a draw from `seed`."""
    weights = WEIGHTS if weights is None else weights
    copy_weights = (COPY_WEIGHTS if weights is WEIGHTS else weights) if copy_weights is None else copy_weights
    if not rows:
        return []
    rng = random.Random(f"query-only|{seed}")
    jitter = {x.product_id: rng.random() * 1e-6 for x, _ in sorted(rows, key=lambda r: r[0].product_id)}
    scored = []
    for x, c in rows:
        w = copy_weights if c.get("copies") else weights
        total = sum(w.get(k, 0.0) * v for k, v in c.items() if k not in ("violations", "copies"))
        scored.append((total + jitter[x.product_id] - VIOLATION_COST * c["violations"], x, c))
    scored.sort(key=lambda r: (-r[0], r[1].product_id))
    return scored


def score_listings(listings: list[Listing], q: Query, weights: dict[str, float] | None = None,
                   seed: int = 0, copy_weights: dict[str, float] | None = None
                   ) -> list[tuple[float, Listing, dict[str, float]]]:
    """Every listing's (score, listing, cues), best first (cue_table, then rank_table)."""
    return rank_table(cue_table(listings, q), weights, seed, copy_weights)


def choose(listings: list[Listing], q: Query, weights: dict[str, float] | None = None,
           seed: int = 0, copy_weights: dict[str, float] | None = None) -> Listing | None:
    """The listing the attacker recommends, or None when there is none. Given `weights` only, they serve
    every family."""
    scored = score_listings(listings, q, weights, seed, copy_weights)
    return scored[0][1] if scored else None


# ---------------------------------------------------------------------------------------------------------
# The agent
# ---------------------------------------------------------------------------------------------------------

class QueryOnlyAgent(ScriptedAgent):
    """Reads only the query and the catalog tools (never get_user_profile, never ask_user)."""

    name = "query-only"

    def __init__(self, task: Task, seed: int = 0, budget: int = 100, weights: dict[str, float] | None = None):
        super().__init__()
        self.query = task.user_query or ""
        self.seed = seed
        self.budget = int(budget)
        self.limit = max(0, min(self.budget - 1, MAX_CALLS))   # calls before recommend_product
        self.weights = weights
        self.listings: dict[str, Listing] = {}    # what it inspected, kept for tests and measurements

    def plan(self):
        q = Query.parse(self.query)
        hits = SearchFusion(RRF_K)
        ranks, titles, take = hits.scores, hits.titles, hits.take

        call = self.call

        def stats_calls(n: int) -> int:
            return -(-n // STATS_BATCH)

        # 1. Search the query several ways (the first search is the query itself).
        searches = search_queries(self.query, q.terms)
        for k, text in enumerate(searches):
            if self.calls_left() < 1 or (k and self.calls_left() <= 3):
                break
            result = yield from call("search_products", {"query": text})
            take(result)

        # 2. Inspect the best-fused hits.
        products: dict[str, dict] = {}

        def inspect(pids: Iterable[str], reserve: int):
            for pid in pids:
                if pid in products or pid in self.listings:
                    continue
                if self.calls_left() - stats_calls(len(products) + 1) - reserve < 1:
                    return
                detail = yield from call("get_product_details", {"product_id": pid})
                product = detail.get("product") if isinstance(detail, dict) else None
                if isinstance(product, dict) and product.get("product_id"):
                    products[pid] = product

        yield from inspect(hits.fused()[:FIRST_DETAILS], reserve=FAMILY_PAGES)

        # 3. The best-fitting listing's near-identical listings: search its title, inspect what comes back.
        if products and self.calls_left() > FAMILY_PAGES + stats_calls(len(products)) + 1:
            listings = self._listings(products, ranks, {})
            pre = score_listings(listings, q, self.weights, self.seed)
            anchor = pre[0][1] if pre else None
            family_ids: list[str] = []
            if anchor is not None and anchor.title:
                for page in range(FAMILY_PAGES):
                    if self.calls_left() - stats_calls(len(products)) < 2:
                        break
                    # Not fused into the ranks: the rank cue is the query's own searches.
                    result = yield from call("search_products", {"query": anchor.title, "page": page})
                    got = take(result, weight=0.0)
                    family_ids += [p for p in got if p not in family_ids]
                    total = result.get("total_found") if isinstance(result, dict) else None
                    if not got or (isinstance(total, int) and total <= (page + 1) * 20):
                        break
                # Copies keep the title (most of it): those first, in the search's order.
                mine = set(keyword_tokens(anchor.title))
                family_ids.sort(key=lambda p: _jaccard(mine, set(keyword_tokens(titles.get(p, "")))) < FAMILY_TITLE)
            yield from inspect(family_ids, reserve=0)
            yield from inspect(hits.fused(), reserve=0)

        # 4. Ratings and rating counts of everything inspected.
        stats = yield from read_review_stats(list(products), STATS_BATCH, call, self.calls_left)

        # 5. Score and recommend.
        listings = self._listings(products, ranks, stats)
        self.listings = {x.product_id: x for x in listings}
        best = choose(listings, q, self.weights, self.seed)
        if best is None:
            fallback = hits.fused()
            pid = fallback[0] if fallback else "NONE"
            yield "recommend_product", {"product_id": pid, "reasoning": "query-only: first search hit"}
            return
        yield "recommend_product", {"product_id": best.product_id,
                                    "reasoning": "query-only: best query fit and form cues among its family"}

    @staticmethod
    def _listings(products: dict[str, dict], ranks: dict[str, float], stats: dict[str, dict]) -> list[Listing]:
        out = []
        for pid, product in products.items():
            x = Listing.from_details(product, rrf=ranks.get(pid, 0.0))
            row = stats.get(pid) or {}
            x.rating = _float(row.get("average_rating"))
            count = _float(row.get("rating_number"))
            x.count = None if count is None else int(count)
            out.append(x)
        return out

"""An honest non-LLM baseline: no target knowledge, only the tools, simple text matching.

It reads the profile, asks broad clarification questions (each names many of the dimensions shoppers leave
out, and is repeated while it still gets answers), searches with the query and with every requirement it has
gathered, inspects as many hits as its call budget allows (the best hit's near-identical listings first),
reads rating statistics when a rating or rating-count requirement was stated, and recommends the listing that
satisfies the most requirements: a profile value or a value the shopper's answers name that a detail holds
counts most, the query's values and words less, a broken price / rating / rating-count limit or an avoided
value costs. Implicit clues ("a thick, semi-solid emulsion") defeat it, as they should.

It is a pure function of the query and of the tool results it receives (the simulator replays it from the
message history: ecab/agents/sim_policy.py); it never sees the task's target or rubrics.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from ecab.agents.base import ScriptedAgent, SearchFusion, read_review_stats
from ecab.core.text import compact, contains_phrase, normalize, options, phrase_matches_value, singular, value_text
from ecab.env.tools import canonical_attribute
from ecab.schema import Task

# Broad questions (each under 100 characters). Under the released harness's matcher a question reveals the
# unrevealed slot whose trigger keywords it hits most, so one question asked again reveals the next slot.
QUESTIONS = (
    "What special features, recommended uses, material, finish, shape or size do you need?",
    "Any price budget, average rating, number of ratings or reviews requirement?",
    "Which connector type, connectivity, compatible devices, hardware platform or mounting type?",
    "Any color, pattern, design, style, brand, power source, item form or benefits you want?",
    "What screen size, resolution, capacity, point type or water resistance level do you need?",
)
MAX_CALLS = 70          # tool calls before recommend_product (the episode's budget - 1 when smaller)
MAX_ASKS = 10           # the released harness's clarification turns
MAX_SEARCHES = 10
FAMILY_PAGES = 2        # search pages of the best listing's title (its near-identical listings)
RRF_K = 10              # reciprocal-rank fusion of the searches
STATS_BATCH = 10        # get_product_review_stats takes at most 10 ids
REVIEW_CHECKS = 3

# How much each kind of evidence counts in a listing's score.
W_PROFILE = 3.0         # a profile requirement's value held by a detail (1.0 on a matching key, less elsewhere)
W_ANSWER = 3.0          # a detail value the shopper's clarification answers name
W_QUERY = 1.0           # a detail value the query names
W_TITLE = 0.5           # share of the query's words in the title
W_NUMBER = 4.0          # a broken price / rating / rating-count limit
W_AVOID = 3.0           # a value the shopper said to avoid
W_REVIEW = 4.0
UNNAMED_OPTION = 0.25   # a named detail's options the text does not name each take this many words off

STOPWORDS = frozenset("""a an and any are as at be but by can do for from has have i i'm id if in is it its just
like looking me my need needs of on one or so that the this to want with would you your it's should must
under over least most than more less only also really something product products item please find good
great get i'd about into their there them they what which who while very""".split())
_TOKEN = re.compile(r"[a-z0-9][a-z0-9\-\+\.]*[a-z0-9\+]|[a-z0-9]")
_NUM = r"(\d+(?:,\d{3})*(?:\.\d+)?)"
_NEGATION = re.compile(r"\b(?:not|no|avoid|avoiding|without|dont|don't|do not|never|hate|except|rather than|"
                       r"instead of|other than)\b", re.I)
_CLAUSE = re.compile(r"(?<!\d)\.|\.(?!\d)|[;:!?,()]|\b(?:but|because|since|so|as)\b", re.I)
_KEY_NOISE = frozenset({"need", "preference", "requirement", "prefer", "type", "level"})


def tokens(text: str) -> list[str]:
    return [t for t in _TOKEN.findall(text.lower()) if t not in STOPWORDS]


def flatten_text(value) -> str:
    if isinstance(value, dict):
        return " ".join(f"{k} {flatten_text(v)}" for k, v in value.items())
    if isinstance(value, list):
        return " ".join(flatten_text(v) for v in value)
    return "" if value is None else str(value)


@dataclass
class Constraints:
    """Numeric requirements read from the shopper's text."""

    min_rating: float | None = None
    min_ratings: int | None = None
    max_price: float | None = None
    negatives: list[str] = field(default_factory=list)

    @classmethod
    def parse(cls, text: str) -> "Constraints":
        t = text.lower().replace("$", " $")
        c = cls()
        if m := re.search(_NUM + r"\s*(?:\+\s*)?(?:stars?|-star|star rating|out of 5)", t):
            c.min_rating = float(m.group(1))
        if m := re.search(r"(?:rating|rated)\s*(?:of\s*)?(?:at least|above|over|minimum of)?\s*" + _NUM, t):
            value = float(m.group(1))
            c.min_rating = value if value <= 5 else c.min_rating
        if m := re.search(_NUM + r"\s*(?:customer\s+)?(?:ratings|reviews|reviewers)", t):
            c.min_ratings = int(float(m.group(1).replace(",", "")))
        if m := re.search(r"(?:under|below|less than|within|budget of|at most|max(?:imum)?(?: of)?|no more than)"
                          r"\s*\$\s*" + _NUM, t):
            c.max_price = float(m.group(1).replace(",", ""))
        for m in re.finditer(r"\bnot\s+([a-z0-9\- ]+?)(?:\s+or\s+([a-z0-9\- ]+?))?(?=[,.;]|$)", t):
            c.negatives += [g.strip() for g in m.groups() if g]
        return c


def parse_constraints(text: str) -> Constraints:
    """Constraints.parse plus a price cap written in words ("less than 100 dollars")."""
    c = Constraints.parse(text)
    if c.max_price is None:
        if m := re.search(r"(?:under|below|less than|within|at most|no more than|max(?:imum)?(?: of)?)\s*"
                          + _NUM + r"\s*(?:dollars|usd|bucks)\b", text.lower()):
            c.max_price = float(m.group(1).replace(",", ""))
    return c


def is_default_answer(response: str) -> bool:
    r = response.lower()
    return any(s in r for s in ("not sure", "asked too much", "over 100 chars", "covered everything"))


def review_phrases(query: str) -> list[str]:
    """What the shopper wants reviews to say: the clause after 'review(s) ... saying/mention'."""
    out = []
    for m in re.finditer(r"reviews?\b[^.?!]*?\b(?:say|saying|says|mention|mentioning|mentions|confirm|"
                         r"confirming|note|noting|that)\s+(?:that\s+)?([^.?!;]+)", query, flags=re.I):
        out.append(m.group(1).strip(" \"'"))
    return out


# ---------------------------------------------------------------------------------------------------------
# Matching detail values against what the shopper said
# ---------------------------------------------------------------------------------------------------------

def _sing(normalized: str) -> str:
    """A normalized text with every word singularized (options' separators become spaces)."""
    return " ".join(singular(t) for t in normalized.replace(",", " ").split())


def value_options(value) -> tuple[str, ...]:
    """A detail value's options, normalized and singularized ("Nylon, Silicone" -> ("nylon", "silicone"))."""
    return _text_options(value_text(value))


# The scoring below re-reads the same listings' values against the same shopper texts on every turn of every
# episode (a profile found it 80% of a heuristic run's agent time), so its pure text functions are memoised.
@lru_cache(maxsize=1 << 16)
def _text_options(text: str) -> tuple[str, ...]:
    return tuple(s for s in (_sing(o) for o in options(normalize(text))) if len(s) >= 2)


@dataclass
class Said:
    """One piece of the shopper's text, ready for phrase matching: what it asks for and what it rules out."""

    positive: str
    negative: str

    @classmethod
    def of(cls, text: str) -> "Said":
        pos, neg = [], []
        for clause in _CLAUSE.split(text or ""):
            if not clause:
                continue
            m = _NEGATION.search(clause)
            if m:
                pos.append(clause[:m.start()])
                neg.append(clause[m.end():])
            else:
                pos.append(clause)
        return cls(_sing(normalize(" , ".join(pos))), _sing(normalize(" , ".join(neg))))

    def cover(self, option: str) -> frozenset:
        """Which words of the positive text the option names (empty: it is not named)."""
        return _cover(self.positive, option)

    def rules_out(self, option: str) -> bool:
        return bool(self.negative) and bool(_cover(self.negative, option)) and not self.cover(option)


@lru_cache(maxsize=1 << 18)
def _cover(text: str, option: str) -> frozenset:
    """The word positions of `text` where `option` occurs as a phrase (or written together / apart:
    "water proof" / "waterproof"); for scripts without spaces, the option itself when it is a substring."""
    words, want = text.split(), option.split()
    if not want or not words:
        return frozenset()
    n = len(want)
    hit: set = set()
    for i in range(len(words) - n + 1):
        if words[i:i + n] == want:
            hit.update(range(i, i + n))
    flat = compact(option)
    if not hit and len(flat) >= 6:
        for i, w in enumerate(words):
            if n > 1 and w == flat:
                hit.add(i)
            elif i + 1 < len(words) and w + words[i + 1] == flat:
                hit.update((i, i + 1))
    if not hit and not option.isascii() and option in text:
        hit.add(option)
    return frozenset(hit)


@lru_cache(maxsize=1 << 14)
def key_words(key: str) -> frozenset[str]:
    """A profile key's or detail key's words, singularized, without 'need' / 'preference' ("os" expanded)."""
    words = {singular(w) for w in normalize(key.replace("_", " ")).split()} - _KEY_NOISE
    if "o" in words or "os" in words:
        words |= {"operating", "system"}
    if "compatibility" in words:
        words |= {"compatible"}
    return frozenset(w[:6] for w in words)


def profile_match(details: dict, title: str, key: str, value: str) -> float:
    """1 when the detail whose key is most like the profile key holds the value (the judge's rule), 0.3
    when only another detail or the title holds it, else 0."""
    wanted = normalize(value)
    if not wanted:
        return 0.0
    mine = key_words(key)
    overlap = {k: len(mine & key_words(str(k))) for k in details}
    most = max(overlap.values(), default=0)
    held = [k for k, v in details.items() if phrase_matches_value(normalize(value_text(v)), wanted)]
    if most and any(overlap[k] == most for k in held):
        return 1.0
    if held or contains_phrase(normalize(title), wanted):
        return 0.3
    return 0.0


def canonical_details(details: dict) -> dict[str, object]:
    """Details keyed by canonical name (alias spellings such as "Special features" folded into one key, the
    canonical spelling first), so a listing that repeats a value under two spellings does not count it twice."""
    out: dict[str, object] = {}
    for k, v in sorted(details.items(), key=lambda kv: str(kv[0]) != canonical_attribute(str(kv[0]))):
        out.setdefault(canonical_attribute(str(k)).lower(), v)
    return out


def named_words(details: dict[str, object], said: Said) -> tuple[dict[str, float], int]:
    """({detail key: how many distinct words of the text its options name}, details with an option only
    the text's negated clauses name). "Activity Tracker, Pedometer" names 3 words of "an activity tracker
    and a pedometer", "Activity Tracker" 2; "USB-C, USB" names as many of "via USB-C" as "USB-C" does, and
    each option the text does not name costs UNNAMED_OPTION, so the exact value beats a wider one."""
    named: dict[str, int] = {}
    ruled_out = 0
    words = said.positive.split()
    for k, v in details.items():
        opts = value_options(v)
        covered: set = set()
        unnamed = 0
        for o in opts:
            got = {words[i] if isinstance(i, int) else i for i in said.cover(o)}
            covered |= got
            unnamed += not got
        if covered:
            named[k] = len(covered) - UNNAMED_OPTION * unnamed
        elif any(said.rules_out(o) for o in opts):
            ruled_out += 1
    return named, ruled_out


@dataclass
class Requirements:
    """Everything the agent has gathered about what the shopper wants."""

    query: str
    profile: list[tuple[str, str]]          # (profile key, value)
    avoid: list[str]
    answers: list[str]
    constraints: Constraints = field(default_factory=Constraints)
    query_said: Said = field(default_factory=lambda: Said("", ""))
    answers_said: list[Said] = field(default_factory=list)
    query_words: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.constraints = parse_constraints(" . ".join([self.query, *self.answers]))
        self.query_said = Said.of(self.query)
        self.answers_said = [Said.of(a) for a in self.answers]
        self.query_words = {singular(t) for t in tokens(self.query)}

    @property
    def needs_stats(self) -> bool:
        return self.constraints.min_rating is not None or self.constraints.min_ratings is not None


def score_all(products: dict[str, dict], stats: dict[str, dict], req: Requirements) -> dict[str, float]:
    """Every inspected listing's score. Per clarification answer a listing gets W_ANSWER x (the most words
    of the answer one of its details names) / (the most any listing names); per profile requirement
    W_PROFILE x profile_match; per detail the query names W_QUERY (a little more per further word); the
    share of the query's words in its title; minus broken numeric limits and avoided values."""
    rows = {}
    for pid, product in products.items():
        raw = product.get("details")
        details = canonical_details(raw if isinstance(raw, dict) else {})
        answers = [named_words(details, said) for said in req.answers_said]
        rows[pid] = (details, answers)
    best = [max((max(rows[p][1][i][0].values(), default=0) for p in rows), default=0)
            for i in range(len(req.answers_said))]
    out = {}
    for pid, product in products.items():
        details, answers = rows[pid]
        title = str(product.get("title") or "")
        total = 0.0
        for key, value in req.profile:
            total += W_PROFILE * profile_match(details, title, key, value)
        for (named, ruled_out), most in zip(answers, best):
            total += W_ANSWER * max(named.values(), default=0) / most if most else 0.0
            total -= W_AVOID * ruled_out
        named, ruled_out = named_words(details, req.query_said)
        total += W_QUERY * sum(1 + 0.25 * (n - 1) for n in named.values()) - W_AVOID * ruled_out
        if req.query_words:
            title_words = {singular(t) for t in tokens(title)}
            total += W_TITLE * len(req.query_words & title_words) / len(req.query_words)
        for avoid in req.avoid:
            a = normalize(avoid)
            if a and any(phrase_matches_value(normalize(value_text(v)), a) for v in details.values()):
                total -= W_AVOID
        total -= W_NUMBER * broken_limits(product, stats.get(pid, {}), req.constraints)
        out[pid] = total
    return out


def broken_limits(product: dict, stats: dict, c: Constraints) -> float:
    """How many price / rating / rating-count limits the listing breaks (an unknown number: a quarter)."""
    broken = 0.0
    checks = ((c.max_price, product.get("price"), lambda x, lim: x > lim),
              (c.min_rating, stats.get("average_rating"), lambda x, lim: x < lim),
              (c.min_ratings, stats.get("rating_number"), lambda x, lim: x < lim))
    for limit, value, breaks in checks:
        if limit is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            broken += 0.25
        elif breaks(float(value), float(limit)):
            broken += 1
    return broken


# ---------------------------------------------------------------------------------------------------------
# The agent
# ---------------------------------------------------------------------------------------------------------

class HeuristicAgent(ScriptedAgent):
    name = "heuristic"

    def __init__(self, task: Task, seed: int = 0, questions: int = len(QUESTIONS), budget: int = 100):
        super().__init__()
        self.query = task.user_query or ""
        self.n_questions = questions
        self.budget = int(budget)
        self.limit = max(0, min(self.budget - 1, MAX_CALLS))    # calls before recommend_product

    def plan(self):
        call = self.call
        # 1. The profile.
        requirements = {}
        if self.calls_left() > 0:
            result = yield from call("get_user_profile", {})
            profile = result.get("profile") if isinstance(result, dict) else None
            requirements = (profile or {}).get("product_requirements") if isinstance(profile, dict) else None
            requirements = requirements if isinstance(requirements, dict) else {}
        wanted = [(str(k), value_text(v)) for k, v in requirements.items()
                  if k != "avoid_preferences" and value_text(v).strip()]
        avoid = [value_text(v) for v in requirements.get("avoid_preferences") or [] if value_text(v).strip()]

        # 2. Clarification: each broad question again while it still gets a new answer.
        answers = yield from self.ask()
        req = Requirements(self.query, wanted, avoid, answers)

        # 3. Searches, fused by reciprocal rank.
        hits = SearchFusion(RRF_K)
        order, take = hits.order, hits.take

        searches = self.search_queries(wanted, answers)
        n_searches = max(1, min(MAX_SEARCHES, self.limit // 7))
        for text in searches[:n_searches]:
            if self.calls_left() < 2:
                break
            take((yield from call("search_products", {"query": text})))
        if not order:
            yield "recommend_product", {"product_id": "NONE", "reasoning": "no search results"}
            return

        # 4. Inspect the best-fused hits, then the best listing's near-identical listings, then the rest.
        products: dict[str, dict] = {}
        reserve_reviews = REVIEW_CHECKS * len(review_phrases(self.query)) if self.limit >= 40 else 0

        def room(extra: int = 1) -> bool:
            n = len(products) + extra
            stats_calls = -(-n // STATS_BATCH) if req.needs_stats else 0
            return self.calls_left() - extra - stats_calls - reserve_reviews >= 0

        def inspect(pids, how_many: int):
            done = 0
            for pid in pids:
                if done >= how_many or not room():
                    return
                if pid in products:
                    continue
                detail = yield from call("get_product_details", {"product_id": pid})
                product = detail.get("product") if isinstance(detail, dict) else None
                done += 1
                if isinstance(product, dict):
                    products[pid] = product

        family_reserve = FAMILY_PAGES if self.limit >= 30 else 0
        first = max(1, (self.calls_left() - family_reserve) // 3)
        yield from inspect(hits.fused(), first)
        if products and family_reserve:
            best = self.rank(products, {}, req, order)[0]
            title = str(products[best].get("title") or "")
            family: list[str] = []
            for page in range(FAMILY_PAGES):
                if not title or not room(2):
                    break
                result = yield from call("search_products", {"query": title, "page": page})
                got = take(result, weight=0.0)
                family += [p for p in got if p not in family]
                total = result.get("total_found") if isinstance(result, dict) else None
                if not got or (isinstance(total, int) and total <= (page + 1) * len(got)):
                    break
            yield from inspect(family, len(family))
        yield from inspect(hits.fused(), len(order))

        # 5. Rating statistics, when a rating or rating-count requirement was stated.
        stats: dict[str, dict] = {}
        if req.needs_stats:
            stats = yield from read_review_stats(list(products), STATS_BATCH, call, self.calls_left)

        # 6. Score, check reviews for what the query wants them to say, recommend.
        if not products:
            yield "recommend_product", {"product_id": hits.fused()[0], "reasoning": "best search hit"}
            return
        scores = score_all(products, stats, req)
        ranked = sorted(scores, key=lambda pid: (-scores[pid], order.index(pid)))
        phrases = review_phrases(self.query)
        if phrases and reserve_reviews:
            for pid in ranked[:REVIEW_CHECKS]:
                for phrase in phrases:
                    if self.calls_left() < 1:
                        break
                    found = yield from call("get_review_content", {"product_id": pid, "query": phrase})
                    reviews = found.get("reviews") if isinstance(found, dict) else None
                    scores[pid] += self.review_support(phrase, reviews if isinstance(reviews, list) else [])
            ranked = sorted(scores, key=lambda pid: (-scores[pid], order.index(pid)))
        best = ranked[0]
        yield "recommend_product", {"product_id": best, "reasoning": f"best heuristic score {scores[best]:.1f}"}

    def ask(self):
        """Each broad question, asked again while it gets a new answer; stops at the turn limit."""
        answers: list[str] = []
        asks = min(MAX_ASKS, max(1, self.limit // 7)) if self.limit > 2 else 0
        for question in QUESTIONS[: self.n_questions]:
            while asks > 0 and self.calls_left() > 2:
                asks -= 1
                reply = yield from self.call("ask_user", {"question": question})
                reply = reply if isinstance(reply, dict) else {}
                text = str(reply.get("user_response") or "")
                if "asked too much" in text.lower():
                    return answers
                if not text or is_default_answer(text) or text in answers:
                    break
                answers.append(text)
                if reply.get("turns_remaining") == 0:
                    return answers
        return answers

    @staticmethod
    def rank(products: dict, stats: dict, req: Requirements, order: list[str]) -> list[str]:
        scores = score_all(products, stats, req)
        return sorted(scores, key=lambda pid: (-scores[pid], order.index(pid)))

    def search_queries(self, wanted: list[tuple[str, str]], answers: list[str]) -> list[str]:
        """The query itself; its keywords with every hidden requirement; then its head words with each
        profile value and each answer's content words."""
        query_words = tokens(self.query)
        head = " ".join(query_words[:8])
        values = [v for _, v in wanted]
        searches = [self.query, " ".join(query_words[:12] + tokens(" ".join(values))[:8]
                                         + tokens(" ".join(answers))[:8])]
        searches += [f"{head} {v}" for v in values]
        searches += [" ".join(query_words[:8] + tokens(a)[:8]) for a in answers]
        out: list[str] = []
        for s in searches:
            s = s.strip()
            if s and s not in out:
                out.append(s)
        return out

    @staticmethod
    def review_support(phrase: str, reviews: list[dict]) -> float:
        words = set(tokens(phrase))
        if not words:
            return 0.0
        best = max((len(words & set(tokens(f"{r.get('title', '')} {r.get('text', '')}"))) / len(words)
                    for r in reviews if isinstance(r, dict)), default=0.0)
        return W_REVIEW * best

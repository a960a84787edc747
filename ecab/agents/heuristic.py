"""An honest non-LLM baseline: no target knowledge, only the tools, simple text matching.

It reads the profile, asks about the dimensions shoppers usually leave out, searches with the query and
the requirements it has gathered, inspects the top candidates, checks ratings and review evidence, and
recommends the best-scoring candidate. Implicit clues ("a thick, semi-solid emulsion") defeat it, as they
should: it sits well above random and well below perfect.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ecab.agents.base import ScriptedAgent
from ecab.schema import Task

QUESTIONS = (
    "What features or specs matter most to you?",
    "Do you need a particular connector, connectivity or compatibility?",
    "Any material, color, style, pattern or finish preference?",
    "Any price, rating or number of ratings requirement?",
    "What will you mainly use it for, any special use or benefit?",
)
CANDIDATES_TO_INSPECT = 12
REVIEW_CHECKS = 3

STOPWORDS = frozenset("""a an and any are as at be but by can do for from has have i i'm id if in is it its just
like looking me my need needs of on one or so that the this to want with would you your it's should must
under over least most than more less only also really something product products item please find good
great get i'd about into their there them they what which who while very""".split())
_TOKEN = re.compile(r"[a-z0-9][a-z0-9\-\+\.]*[a-z0-9\+]|[a-z0-9]")
_NUM = r"(\d+(?:,\d{3})*(?:\.\d+)?)"


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


class HeuristicAgent(ScriptedAgent):
    name = "heuristic"

    def __init__(self, task: Task, seed: int = 0, questions: int = len(QUESTIONS)):
        super().__init__()
        self.query = task.user_query
        self.n_questions = questions

    def plan(self):
        result = yield "get_user_profile", {}
        requirements = ((result or {}).get("profile") or {}).get("product_requirements") or {}
        wanted = [flatten_text(v) for k, v in requirements.items() if k != "avoid_preferences"]
        avoid = [flatten_text(v) for v in requirements.get("avoid_preferences") or []]
        answers = []
        for question in QUESTIONS[: self.n_questions]:
            reply = yield "ask_user", {"question": question}
            text = (reply or {}).get("user_response", "")
            if text and not is_default_answer(text):
                answers.append(text)
        shopper_text = " ".join([self.query, *answers])
        constraints = Constraints.parse(shopper_text)
        constraints.negatives += [a for a in avoid if a]

        candidates: list[str] = []
        for search in self.search_queries(wanted, answers):
            found = yield "search_products", {"query": search}
            for hit in (found or {}).get("products") or []:
                if hit["product_id"] not in candidates:
                    candidates.append(hit["product_id"])
        if not candidates:
            yield "recommend_product", {"product_id": "NONE", "reasoning": "no search results"}
            return

        products = {}
        for pid in candidates[:CANDIDATES_TO_INSPECT]:
            detail = yield "get_product_details", {"product_id": pid}
            if isinstance(detail, dict) and detail.get("product"):
                products[pid] = detail["product"]
        stats = {}
        ids = list(products)
        for i in range(0, len(ids), 10):
            got = yield "get_product_review_stats", {"product_ids": ids[i:i + 10]}
            for row in (got or {}).get("products") or []:
                stats[row["product_id"]] = row

        scores = {pid: self.score(p, stats.get(pid, {}), wanted, answers, constraints)
                  for pid, p in products.items()}
        ranked = sorted(scores, key=lambda pid: (-scores[pid], candidates.index(pid)))
        phrases = review_phrases(self.query)
        if phrases:
            for pid in ranked[:REVIEW_CHECKS]:
                for phrase in phrases:
                    found = yield "get_review_content", {"product_id": pid, "query": phrase}
                    scores[pid] += self.review_support(phrase, (found or {}).get("reviews") or [])
            ranked = sorted(scores, key=lambda pid: (-scores[pid], candidates.index(pid)))
        best = ranked[0] if ranked else candidates[0]
        yield "recommend_product", {"product_id": best, "reasoning": f"best heuristic score {scores.get(best, 0):.1f}"}

    def search_queries(self, wanted: list[str], answers: list[str]) -> list[str]:
        """The query itself, then the query's keywords plus the hidden requirements gathered."""
        query_words = tokens(self.query)
        extra = " ".join(wanted)
        searches = [self.query, " ".join(query_words[:12] + tokens(extra)[:8])]
        if answers:
            searches.append(" ".join(query_words[:8] + tokens(" ".join(answers))[:8]))
        return [s for s in searches if s.strip()]

    @staticmethod
    def score(product: dict, stats: dict, wanted: list[str], answers: list[str], c: Constraints) -> float:
        haystack = " ".join([product.get("title", ""), flatten_text(product.get("details")),
                             flatten_text(product.get("features"))]).lower()
        hay_tokens = set(tokens(haystack))
        score = 0.0
        for value in wanted:                       # profile requirements: whole value, else its words
            v = value.lower().strip()
            if v and v in haystack:
                score += 3
            else:
                words = tokens(v)
                score += sum(1 for w in words if w in hay_tokens) / max(len(words), 1)
        for answer in answers:                     # clarification answers: their content words
            words = tokens(answer)
            score += 2 * sum(1 for w in words if w in hay_tokens) / max(len(words), 1)
        for negative in c.negatives:
            if negative and negative.lower() in flatten_text(product.get("details")).lower():
                score -= 4
        price = product.get("price")
        if c.max_price is not None and (price is None or price > c.max_price):
            score -= 5
        rating, count = stats.get("average_rating"), stats.get("rating_number")
        if c.min_rating is not None and (rating is None or rating < c.min_rating):
            score -= 5
        if c.min_ratings is not None and (count is None or count < c.min_ratings):
            score -= 5
        return score

    @staticmethod
    def review_support(phrase: str, reviews: list[dict]) -> float:
        words = set(tokens(phrase))
        if not words:
            return 0.0
        best = max((len(words & set(tokens(f"{r.get('title', '')} {r.get('text', '')}"))) / len(words)
                    for r in reviews), default=0.0)
        return 4 * best

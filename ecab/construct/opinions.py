"""Stage 3b: review opinions for review_driven (docs/original-harness.md §5.10), from the target's real review text.

The original asked an LLM for "one atomic, verifiable 3-10 word opinion" per picked review. Offline and
deterministic instead: the review is cut into sentences and clauses, generic praise ("love it", "great
product") and restatements of the title are dropped, and the most specific 3-10 word clause is kept
verbatim. Being verbatim, the opinion is found again in the same review by the judge's review checker.

Eligible reviews: rating >= 4 and text >= 30 characters (relaxed to rating >= 4 when fewer than 2);
the 6 most helpful are the pool, 2 are picked at random, and the next pool review stands in when a
picked review yields no usable clause.
"""
from __future__ import annotations

import random
import re

from ecab.construct.draft import Feature
from ecab.schema import Product, Review

MIN_REVIEWS = 10
MIN_RATING = 4.0
MIN_TEXT_CHARS = 30
POOL_SIZE = 6
MIN_WORDS, MAX_WORDS = 3, 10

_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+|<\s*br\s*/?\s*>", re.IGNORECASE)
_CLAUSES = re.compile(r"\s*(?:;|:|\u2014|\s-\s|,\s*(?:but|and|so|although|though|which)\s|\s(?:but|although|though)\s)\s*",
                      re.IGNORECASE)
_LEADING_FILLER = re.compile(
    r"^(?:(?:honestly|overall|also|plus|and|but|so far|so|well|really|definitely|basically|however|anyway|oh)\b[,\s]*"
    r"|(?:i (?:think|feel|found|noticed|love|like|must say|have to say|would say) (?:that )?)"
    r"|(?:it turns out (?:that )?))+", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z0-9']+")
_COMPLAINT = re.compile(r"^(?:(?:my |the )?only (?:complaint|issue|problem|gripe|downside)|however|downside|"
                        r"cons?\b|unfortunately|sadly|but\b)", re.IGNORECASE)
GENERIC_PHRASES = (
    "love it", "love this", "loved it", "great product", "good product", "nice product", "highly recommend",
    "would recommend", "recommend it", "five stars", "5 stars", "works great", "works well", "as described",
    "as expected", "buy again", "would buy", "exactly what", "very happy", "so happy", "happy with",
    "good quality", "great quality", "great buy", "good buy", "great deal", "no complaints", "thank you",
    "thanks", "perfect", "awesome", "amazing", "excellent", "great value", "value for the money",
    "value for money",
)
STOP = {"the", "a", "an", "and", "or", "of", "for", "with", "to", "in", "on", "it", "is", "this", "that", "my", "i"}


class OpinionError(ValueError):
    """The target's reviews cannot supply enough opinions (the candidate is skipped)."""


def eligible_reviews(reviews: list[Review]) -> list[Review]:
    """Rating >= 4 with >= 30 characters of text; relaxed to rating >= 4 when fewer than 2 qualify."""
    good = [r for r in reviews if (r.rating or 0) >= MIN_RATING]
    strict = [r for r in good if len(r.text or "") >= MIN_TEXT_CHARS]
    return strict if len(strict) >= 2 else good


def review_pool(reviews: list[Review]) -> list[Review]:
    """The most helpful eligible reviews (stable on ties: input order)."""
    ranked = sorted(enumerate(eligible_reviews(reviews)), key=lambda ir: (-(ir[1].helpful_vote or 0), ir[0]))
    return [r for _, r in ranked[:POOL_SIZE]]


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def clauses(text: str) -> list[str]:
    """Sentences split into clauses, leading filler removed, trailing punctuation stripped. Sentences
    that announce a complaint ("Only complaint: ...", "However, ...") are left out: the task asks for
    what satisfied reviewers report."""
    out = []
    for sentence in _SENTENCES.split(text or ""):
        if _COMPLAINT.match(sentence.strip()):
            continue
        for clause in _CLAUSES.split(sentence):
            clause = _LEADING_FILLER.sub("", " ".join(clause.split())).strip(" ,.!?;:\"'()")
            clause = _drop_intro(clause)
            if clause:
                out.append(clause)
    return out


def _drop_intro(clause: str) -> str:
    """Drop a short introductory phrase before a comma ("After a month, gentle enough ..." keeps the
    claim), when what follows is still a full opinion."""
    head, sep, rest = clause.partition(", ")
    if sep and len(head.split()) <= 4 and len(rest.split()) >= MIN_WORDS:
        return rest
    return clause


def is_generic(clause: str) -> bool:
    low = " ".join(_words(clause))
    if any(p in low for p in GENERIC_PHRASES) and len(_words(clause)) <= 5:
        return True
    content = [w for w in _words(clause) if w not in STOP]
    return len(content) < 2


def restates_title(clause: str, title: str) -> bool:
    """Most of the clause's content words are title words: a spec, not an opinion."""
    content = [w for w in _words(clause) if w not in STOP]
    title_words = set(_words(title))
    return bool(content) and sum(w in title_words for w in content) / len(content) > 0.6


def opinion_score(clause: str) -> float:
    """Higher is better: 4-8 words, not a first-person narration, some descriptive content."""
    words = _words(clause)
    n = len(words)
    score = -abs(n - 6) * 0.5
    if words and words[0] in ("i", "we", "my", "me"):
        score -= 1.5
    score += 0.3 * sum(1 for w in words if w not in STOP and len(w) > 3)
    return score


def extract_opinion(review: Review, title: str) -> str | None:
    """The most specific 3-10 word clause of the review, verbatim; None when it has none."""
    candidates = []
    for i, clause in enumerate(clauses(review.text) + clauses(review.title)):
        n = len(clause.split())
        if MIN_WORDS <= n <= MAX_WORDS and not is_generic(clause) and not restates_title(clause, title):
            candidates.append((-opinion_score(clause), i, clause))
    return min(candidates)[2] if candidates else None


def pick_opinions(product: Product, reviews: list[Review], rng: random.Random, k: int = 2) -> list[dict]:
    """`k` opinions `{opinion, source_review_id, source_review_rating}` from distinct reviews.

    Raises OpinionError with fewer than MIN_REVIEWS reviews or fewer than `k` usable opinions.
    """
    if len(reviews) < MIN_REVIEWS:
        raise OpinionError(f"{product.product_id}: {len(reviews)} reviews, need {MIN_REVIEWS}")
    pool = review_pool(reviews)
    if len(pool) < k:
        raise OpinionError(f"{product.product_id}: {len(pool)} eligible reviews, need {k}")
    picked = rng.sample(pool, k)
    order = picked + [r for r in pool if r not in picked]   # stand-ins after the random picks
    opinions, seen = [], set()
    for review in order:
        opinion = extract_opinion(review, product.title)
        if opinion and opinion.lower() not in seen:
            seen.add(opinion.lower())
            opinions.append({"opinion": opinion, "source_review_id": review.review_id,
                             "source_review_rating": review.rating})
        if len(opinions) == k:
            return opinions
    raise OpinionError(f"{product.product_id}: only {len(opinions)} usable opinions in {len(pool)} reviews")


def opinion_features(opinions: list[dict]) -> list[Feature]:
    """review_opinion features; expected_value is the opinion string (the released format)."""
    return [Feature(field="review", value=o["opinion"], type="review_opinion", expected_value=o["opinion"],
                    rubric_text=f"A review of the recommended product should mention: {o['opinion']}",
                    source_review_id=o["source_review_id"]) for o in opinions]

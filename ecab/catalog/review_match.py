"""Does some review state this opinion? review_opinion by sentence embeddings (docs/original-harness.md
§4.3, §5.10).

It sits with the catalog's embedder it is built on and serves every stage that must agree on an opinion:
the rules judge (ecab/judge/rules.py), task construction, and catalog=targets' siblings (a sibling that must
lack an opinion is checked with the same checker that judges it); the rubric checks of
ecab/core/rubric_checks.py receive it injected.

The original asked an LLM whether any review "clearly expresses the same concrete claim". Here each
review's title and text are split into sentences, the opinion and every sentence are embedded with the
catalog's embedder (all-MiniLM-L6-v2, L2-normalised), and the rubric is satisfied iff the best cosine
similarity reaches a threshold. Before embedding, a lexical pre-check accepts a sentence that contains
the normalized opinion as a phrase (score 1.0); it is part of the same checker, so its verdicts keep
method "embedding" and say "lexical match" in their reasoning.

The threshold is `REVIEW_MATCH_THRESHOLD`, chosen with `calibrate_threshold` on hand-written paraphrase
pairs (tests/judge/test_judge_rules.py: the pairs and the measured statistics). `ReviewChecker.describe()`
records the threshold and, when the checker was calibrated, its calibration statistics, for the run
manifest.

Sentence embeddings are cached per product (LRU keyed by product id and a digest of the review texts),
because evaluation judges the same recommended product for many tasks and models.
"""
from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from dataclasses import asdict, dataclass
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from ecab.core.process_wide import process_wide
from ecab.core.text import contains_phrase, normalize
from ecab.schema import Review

# Calibrated with calibrate_threshold on the 24 positive / 24 negative (opinion, review sentences) pairs of
# tests/judge/test_judge_rules.py, each scored against 16 extra sentences of generic review chatter, with
# all-MiniLM-L6-v2: best balanced accuracy 0.875 (TPR 0.875, TNR 0.875) at 0.4327; positives' max cosine
# ranges 0.30-0.74 (mean 0.55), negatives' 0.15-0.52 (mean 0.30). The test re-runs the calibration and
# checks this constant still reaches the best balanced accuracy. The embedding check leans to recall: a
# generic sentence ("Works as expected.") can reach 0.47 against a vague opinion ("works reliably").
REVIEW_MATCH_THRESHOLD = 0.43
SENTENCE_CACHE_PRODUCTS = 4096
OPINION_CACHE_SIZE = 4096
# all-MiniLM-L6-v2 reads at most 256 word pieces and one long run-on sentence dilutes a specific claim:
# sentences longer than this many words are cut into overlapping windows.
MAX_SENTENCE_WORDS = 40
WINDOW_STRIDE = 20

_HTML_BREAK = re.compile(r"<\s*br\s*/?\s*>|<\s*/?\s*p\s*>", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+|\s*;\s*")


def _windows(sentence: str) -> list[str]:
    words = sentence.split()
    if len(words) <= MAX_SENTENCE_WORDS:
        return [sentence]
    starts = range(0, max(len(words) - MAX_SENTENCE_WORDS, 0) + WINDOW_STRIDE, WINDOW_STRIDE)
    return [" ".join(words[s:s + MAX_SENTENCE_WORDS]) for s in starts]


def split_sentences(text: str) -> list[str]:
    """The sentences of one text (HTML line breaks honoured, fragments of < 3 characters dropped)."""
    text = _HTML_BREAK.sub("\n", text or "")
    sentences: list[str] = []
    for piece in _SENTENCE_END.split(text):
        piece = " ".join(piece.split())
        if len(piece) >= 3:
            sentences.extend(_windows(piece))
    return sentences


def review_sentences(reviews: Iterable[Review]) -> list[str]:
    """Every sentence of every review's title and text, in order, duplicates removed."""
    seen: dict[str, None] = {}
    for review in reviews:
        for sentence in split_sentences(review.title) + split_sentences(review.text):
            seen.setdefault(sentence, None)
    return list(seen)


def _unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (the embedder already normalises; this keeps cosine honest regardless)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


@dataclass(frozen=True)
class ReviewMatch:
    """The best review sentence for one opinion."""

    satisfied: bool
    score: float
    sentence: str
    lexical: bool
    n_sentences: int


@dataclass(frozen=True)
class ThresholdCalibration:
    """A threshold chosen to maximise balanced accuracy on labelled (opinion, sentences) pairs."""

    threshold: float
    balanced_accuracy: float
    true_positive_rate: float
    true_negative_rate: float
    n_positive: int
    n_negative: int
    positive_min: float
    positive_mean: float
    negative_max: float
    negative_mean: float
    margin: float  # width of the score gap the threshold sits in

    def as_dict(self) -> dict[str, Any]:
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in asdict(self).items()}


def _rates(pos: np.ndarray, neg: np.ndarray, threshold: float) -> tuple[float, float]:
    tpr = float(np.mean(pos >= threshold)) if len(pos) else 1.0
    tnr = float(np.mean(neg < threshold)) if len(neg) else 1.0
    return tpr, tnr


def choose_threshold(positive_scores: Sequence[float], negative_scores: Sequence[float]) -> ThresholdCalibration:
    """The cut between sorted scores with the best balanced accuracy; among ties, the widest gap, at its
    midpoint (so the threshold is as far as possible from every labelled example)."""
    pos, neg = np.asarray(positive_scores, dtype=float), np.asarray(negative_scores, dtype=float)
    if not len(pos) or not len(neg):
        raise ValueError("calibrate_threshold needs at least one positive and one negative pair")
    scores = np.unique(np.concatenate([pos, neg]))
    edges = np.concatenate([[scores[0] - 0.05], scores, [scores[-1] + 0.05]])
    best: tuple[float, float, float] | None = None  # (balanced accuracy, gap, threshold)
    for low, high in zip(edges[:-1], edges[1:]):
        threshold = float((low + high) / 2)
        tpr, tnr = _rates(pos, neg, threshold)
        key = ((tpr + tnr) / 2, float(high - low), threshold)
        if best is None or key[:2] > best[:2]:
            best = key
    balanced, gap, threshold = best
    tpr, tnr = _rates(pos, neg, threshold)
    return ThresholdCalibration(threshold=threshold, balanced_accuracy=balanced, true_positive_rate=tpr,
                                true_negative_rate=tnr, n_positive=len(pos), n_negative=len(neg),
                                positive_min=float(pos.min()), positive_mean=float(pos.mean()),
                                negative_max=float(neg.max()), negative_mean=float(neg.mean()), margin=gap)


def _default_embedder():
    """The light ONNX encoder when its graph is exported (no torch import: construction and judging start
    seconds sooner), else the full model. Both give the same vectors (checked when the graph is exported)."""
    from ecab.catalog.onnx_encoder import light_sentence_encoder

    light = light_sentence_encoder()
    if light is not None:
        return light
    from ecab.catalog.embed import get_embedder  # deferred: importing torch is slow and often unneeded
    return get_embedder()


class ReviewChecker:
    """Decides review_opinion rubrics; thread-safe; one per process is enough (see default_review_checker)."""

    def __init__(self, embedder: Any = None, threshold: float = REVIEW_MATCH_THRESHOLD,
                 cache_size: int = SENTENCE_CACHE_PRODUCTS):
        self._embedder = embedder
        self.threshold = float(threshold)
        self.calibration: ThresholdCalibration | None = None
        self._cache_size = cache_size
        self._sentences: OrderedDict[str, tuple[list[str], np.ndarray | None]] = OrderedDict()
        self._opinions: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.stats = {"checks": 0, "lexical_hits": 0, "sentence_cache_hits": 0, "sentence_cache_misses": 0}

    @property
    def embedder(self):
        if self._embedder is None:
            self._embedder = _default_embedder()
        return self._embedder

    def _count(self, name: str) -> None:
        with self._lock:
            self.stats[name] += 1

    # -- caches ---------------------------------------------------------------------------------------

    @staticmethod
    def _reviews_key(reviews: Sequence[Review], product_id: str | None) -> str:
        digest = hashlib.blake2b(digest_size=16)
        for review in reviews:
            digest.update(f"{review.review_id}\x1f{review.title}\x1f{review.text}\x1e".encode("utf-8"))
        return f"{product_id or ''}:{digest.hexdigest()}"

    def _cached_sentences(self, key: str, reviews: Sequence[Review]) -> tuple[list[str], np.ndarray | None]:
        with self._lock:
            entry = self._sentences.get(key)
            if entry is not None:
                self._sentences.move_to_end(key)
                self.stats["sentence_cache_hits"] += 1
                return entry
            self.stats["sentence_cache_misses"] += 1
        entry = (review_sentences(reviews), None)
        self._store(key, entry)
        return entry

    def _store(self, key: str, entry: tuple[list[str], np.ndarray | None]) -> None:
        with self._lock:
            self._sentences[key] = entry
            self._sentences.move_to_end(key)
            while len(self._sentences) > self._cache_size:
                self._sentences.popitem(last=False)

    def _sentence_vectors(self, key: str, sentences: list[str], vectors: np.ndarray | None) -> np.ndarray:
        if vectors is None:
            vectors = _unit_rows(self.embedder.encode(sentences))
            self._store(key, (sentences, vectors))
        return vectors

    def _opinion_vector(self, opinion: str) -> np.ndarray:
        with self._lock:
            hit = self._opinions.get(opinion)
            if hit is not None:
                self._opinions.move_to_end(opinion)
                return hit
        vector = _unit_rows(self.embedder.encode([opinion]))[0]
        with self._lock:
            self._opinions[opinion] = vector
            while len(self._opinions) > OPINION_CACHE_SIZE:
                self._opinions.popitem(last=False)
        return vector

    # -- decisions ------------------------------------------------------------------------------------

    def best_sentence(self, opinion: str, sentences: list[str], vectors: np.ndarray | None = None) -> tuple[float, str]:
        """(max cosine, sentence) of `opinion` against `sentences`; (0.0, "") when there is none."""
        if not sentences:
            return 0.0, ""
        if vectors is None:
            vectors = _unit_rows(self.embedder.encode(sentences))
        sims = vectors @ self._opinion_vector(opinion)
        best = int(np.argmax(sims))
        return float(sims[best]), sentences[best]

    def check(self, opinion: str, reviews: Sequence[Review], product_id: str | None = None) -> ReviewMatch:
        """Is `opinion` expressed by some sentence of `reviews` (the recommended product's reviews)?"""
        self._count("checks")
        key = self._reviews_key(reviews, product_id)
        sentences, vectors = self._cached_sentences(key, reviews)
        if not sentences:
            return ReviewMatch(False, 0.0, "", False, 0)
        wanted = normalize(opinion)
        lexical = next((s for s in sentences if contains_phrase(normalize(s), wanted)), None) if wanted else None
        if lexical is not None:
            self._count("lexical_hits")
            return ReviewMatch(True, 1.0, lexical, True, len(sentences))
        vectors = self._sentence_vectors(key, sentences, vectors)
        score, sentence = self.best_sentence(opinion, sentences, vectors)
        return ReviewMatch(score >= self.threshold, score, sentence, False, len(sentences))

    def calibrate(self, positives: Iterable[tuple[str, Sequence[str]]],
                  negatives: Iterable[tuple[str, Sequence[str]]]) -> ThresholdCalibration:
        """Set this checker's threshold from labelled pairs and remember the statistics."""
        self.calibration = calibrate_threshold(positives, negatives, checker=self)
        self.threshold = self.calibration.threshold
        return self.calibration

    def describe(self) -> dict[str, Any]:
        """What the run manifest records about review matching."""
        embedder = self._embedder
        return {
            "method": "embedding",
            "model": getattr(embedder, "model_name", None) if embedder is not None else "ecab.catalog.embed default",
            "threshold": round(self.threshold, 4),
            "default_threshold": REVIEW_MATCH_THRESHOLD,
            "lexical_precheck": True,
            "max_sentence_words": MAX_SENTENCE_WORDS,
            "calibration": self.calibration.as_dict() if self.calibration else None,
            "stats": dict(self.stats),
        }


def calibrate_threshold(positives: Iterable[tuple[str, Sequence[str]]], negatives: Iterable[tuple[str, Sequence[str]]],
                        *, checker: ReviewChecker | None = None) -> ThresholdCalibration:
    """The threshold maximising balanced accuracy on (opinion, sentences) pairs known to match (positives)
    or not (negatives). Scores are the max cosine over each pair's sentences, as `ReviewChecker.check`
    computes them (without the lexical shortcut)."""
    checker = checker or ReviewChecker()
    pos = [checker.best_sentence(opinion, list(sentences))[0] for opinion, sentences in positives]
    neg = [checker.best_sentence(opinion, list(sentences))[0] for opinion, sentences in negatives]
    return choose_threshold(pos, neg)


# The process-wide checker (shares the catalog's embedder and one sentence cache).
default_review_checker: Callable[[], ReviewChecker] = process_wide(ReviewChecker)

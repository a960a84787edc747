"""Stage 3b: keep only features that matter (issue 15; docs/architecture.md §4).

A requirement matters when the agent cannot skip it: some product other than the target satisfies every
other requirement of the task and fails that one (it is *load-bearing*, ecab/construct/load_bearing.py). After
extraction (and the voucher, the negatives and the review opinions), this stage audits the candidate's
features as rubrics over the target's main category, with the entity and budget rubrics the task will carry,
and drops the features that are not load-bearing one at a time (numeric floors first, negatives last), auditing
again after each drop (verdicts are memoised, so a re-audit is cheap): a dropped feature had no witness, so no
product starts to satisfy every rubric (the task stays exactly as unique), and other features can only gain
witnesses.

The intent's own features stay, load-bearing or not: review opinions (review_driven) and the rating and
rating-count floors (rating_quality); they go to the query, whose share of load-bearing rubrics the validator
checks. The candidate is skipped when fewer than `min_features` features are left that bear or are review
opinions (the partition counts opinions as features too), or, for negative_constraint, no load-bearing
negative. Review opinions are judged
here by the review judge's lexical check alone (a review sentence contains the opinion): a product it
passes truly passes, so a witness found here is one; embedding every neighbour's reviews for each candidate
would cost too much. The validator's final audit judges them fully (validate.check_validity). A review
opinion or budget rubric without a witness here has none there either (the full judge only passes more
products), which `Selection.idle_query` counts so that a query bound to fail the gate is not written.

The same rule for every catalog source: it reads products through the catalog interface only.
"""
from __future__ import annotations

from dataclasses import dataclass

from ecab.catalog.review_match import ReviewMatch, review_sentences
from ecab.construct.category_products import category_products
from ecab.construct.draft import Draft, Feature
from ecab.construct.intents import get_intent
from ecab.construct.load_bearing import VerdictMemo, audit_products, construction_memo
from ecab.construct.rubrics import choose_entity, entity_rubric, make_rubric
from ecab.core.rubric_checks import EntityMatcher
from ecab.core.text import contains_phrase, normalize
from ecab.schema import Review, Rubric

REQUIRED_FIELDS = {"rating_quality": ("average_rating", "rating_number")}


# When several features have no witness, which to drop first: the optional numeric floors and caps, then
# plain attributes, negatives last (the negative_constraint intent needs one); among equals the later one.
_DROP_ORDER = {"numeric_range": 0, "attribute_match": 1, "negative_attribute": 2}


class LexicalReviews:
    """The review judge's lexical pre-check alone (ecab/catalog/review_match.py): satisfied only when a sentence of
    the reviews contains the normalized opinion. Never satisfied where the full judge is not; it may miss
    a paraphrase the embeddings would accept."""

    threshold = 1.0

    def __init__(self):
        self._sentences: dict[tuple, list[tuple[str, str]]] = {}

    def check(self, opinion: str, reviews: list[Review], product_id: str | None = None) -> ReviewMatch:
        wanted = normalize(opinion)
        key = (product_id, len(reviews), reviews[0].review_id if reviews else None)
        sentences = self._sentences.get(key) if product_id is not None else None
        if sentences is None:
            sentences = [(s, normalize(s)) for s in review_sentences(reviews)]
            if product_id is not None:
                if len(self._sentences) > 4096:
                    self._sentences.clear()
                self._sentences[key] = sentences
        hit = next((s for s, n in sentences if contains_phrase(n, wanted)), None) if wanted else None
        return ReviewMatch(hit is not None, 1.0 if hit is not None else 0.0, hit or "", hit is not None,
                           len(sentences))


_LEXICAL = LexicalReviews()


class NotLoadBearing(ValueError):
    """The candidate's features cannot make a task whose requirements all matter."""


@dataclass
class Selection:
    features: list[Feature]
    dropped: list[str]           # fields of the dropped features, in drop order
    audits: int                  # audits run (1 + drops)
    idle_query: int = 0          # kept review opinions and the budget rubric without a witness here: the
                                 # validator's audit cannot find one either (the entity is not judged here)


def _protected(feature: Feature, intent: str) -> bool:
    return feature.type == "review_opinion" or feature.field in REQUIRED_FIELDS.get(intent, ())


def probe_type(feature: Feature) -> str:
    return "negative_attribute" if feature.negative else feature.type


_ENTITY_PRODUCTS: dict[tuple, list] = {}


def entity_products(catalog, product, entity) -> list:
    """The products of the target's main category whose title names the entity (the judge's entity test).
    Only they can witness another feature or come to satisfy every rubric (the entity rubric is never
    dropped), so the audits here need no other product. Cached per (catalog, category, entity)."""
    key = (str(getattr(catalog, "fingerprint", id(catalog))), product.main_category, entity.title_span,
           entity.canonical_entity, entity.query_surface)
    found = _ENTITY_PRODUCTS.get(key)
    if found is None:
        matcher = EntityMatcher(entity_rubric("entity", entity))
        found = [p for p in category_products(catalog, product, entity.canonical_entity)
                 if matcher.match(p.title or "") is not None]
        if len(_ENTITY_PRODUCTS) > 2048:
            _ENTITY_PRODUCTS.clear()
        _ENTITY_PRODUCTS[key] = found
    return found


def probe_rubrics(draft: Draft, features: list[Feature], knowledge) -> list[Rubric]:
    """The rubrics the features will become (ids f0.. in feature order), then the budget and entity ones."""
    rubrics = [make_rubric(f"f{i}", f, "query") for i, f in enumerate(features)]
    if draft.voucher is not None:
        rubrics.append(Rubric(id="budget", type="budget_match", field="budget",
                              expected_value=draft.voucher.budget, info_source="query"))
    draft.entity = draft.entity or choose_entity(draft.product, knowledge)
    rubrics.append(entity_rubric("entity", draft.entity))
    return rubrics


def select_load_bearing(draft: Draft, features: list[Feature], catalog, knowledge, *,
                        min_features: int = 8, memo: VerdictMemo | None = None) -> Selection:
    """The load-bearing subset of `features` (see the module docstring); raises NotLoadBearing."""
    intent = get_intent(draft.intent).id
    product = draft.product
    draft.entity = entity = draft.entity or choose_entity(product, knowledge)
    products = entity_products(catalog, product, entity)
    memo = memo or construction_memo(catalog)
    reviews = _LEXICAL

    def reviews_of(pid: str) -> list[Review]:
        return draft.reviews if pid == product.product_id and draft.reviews else catalog.get_reviews(pid)

    def run(features: list[Feature]):
        nonlocal audits
        audits += 1
        return audit_products(probe_rubrics(draft, features, knowledge), product, products,
                              voucher=draft.voucher, reviews_of=reviews_of, review_checker=reviews,
                              include_reviews=True, memo=memo)

    def idle_of(features: list[Feature], audit) -> list[int]:
        return [i for i, row in enumerate(audit.rubrics[:len(features)])
                if row.load_bearing is False and not _protected(features[i], intent)]

    kept, dropped, audits = list(features), [], 0
    audit = run(kept)
    while idle := idle_of(kept, audit):
        # Every idle feature at once, kept only if no product came to satisfy every rubric (one failing
        # two idle features only would); else one at a time.
        batch = [f for i, f in enumerate(kept) if i not in idle]
        trial = run(batch) if len(idle) > 1 else None
        if trial is not None and trial.match_all == audit.match_all:
            dropped += [kept[i].field for i in idle]
            kept, audit = batch, trial
            continue
        drop = min(idle, key=lambda i: (_DROP_ORDER.get(probe_type(kept[i]), 3), -i))
        dropped.append(kept[drop].field)
        del kept[drop]
        audit = run(kept)
    if intent == "negative_constraint" and not any(f.negative for f in kept):
        raise NotLoadBearing("no negative constraint is load-bearing")
    # Review opinions count as features, as in the partition's minimums, whether or not they bear.
    plain = [f for f in kept if f.type != "review_opinion"]
    idle = [f.field for f in plain if not _bearing(audit, kept, f)]
    if len(kept) - len(idle) < min_features:
        raise NotLoadBearing(f"only {len(kept) - len(idle)} load-bearing features (need {min_features}); "
                             f"dropped {', '.join(dropped) or 'none'}"
                             + (f"; {', '.join(idle)} required by {intent} but not load-bearing" if idle else ""))
    # Whatever is kept without a witness (the intent's own features, the budget) goes to the query.
    idle_query = sum(1 for row in audit.rubrics if row.load_bearing is False and row.type != "entity_match")
    return Selection(kept, dropped, audits, idle_query)


def _bearing(audit, kept: list[Feature], feature: Feature) -> bool:
    return audit.rubrics[kept.index(feature)].load_bearing is not False

"""Stage 3b: which features may be hidden (issues 15 and 27; docs/architecture.md §4, docs/decisions.md#adversaries).

A requirement matters when the agent cannot skip it: some product other than the target satisfies every
other requirement of the task and fails that one (it is *load-bearing*, ecab/construct/load_bearing.py; that
product is its WITNESS). After extraction (and the voucher, the negatives and the review opinions), this stage
audits the candidate's features as rubrics over the products naming the target's entity, with the entity and
budget rubrics the task will carry, and marks each feature witnessed or not. Only witnessed features may be
hidden (the partition sends the rest to the query), so every persona and clarification requirement matters.
A candidate is skipped when fewer than MIN_PERSONA + MIN_CLARIFICATION features are witnessed, or, for
negative_constraint, no negative is.

Nothing is dropped: a feature without a witness still narrows the query to the target's product line. (Issue
15 dropped such features so that the query's requirements would matter too; on the generator's old product
lines that left the target as the one listing with a witness for every requirement, and an attacker reading
no hidden information found it by its neighbourhood. Issue 27; the lines are now factorial,
ecab/catalog/synthetic/lines.py.)

Review opinions are judged here by the review judge's lexical check alone (a review sentence contains the
opinion): a product it passes truly passes, so a witness found here is one; embedding every neighbour's
reviews for each candidate would cost too much. The validator's final audit judges them fully
(validate.check_validity). A review opinion or budget rubric without a witness here has none there either
(the full judge only passes more products), which `Selection.idle_query` counts.

The same rule for every catalog source: it reads products through the catalog interface only.
"""
from __future__ import annotations

from dataclasses import dataclass

from ecab.catalog.review_match import ReviewMatch, review_sentences
from ecab.construct.category_products import category_products
from ecab.construct.draft import Draft, Feature
from ecab.construct.intents import get_intent
from ecab.construct.load_bearing import VerdictMemo, audit_products, construction_memo
from ecab.construct.partition import ALWAYS_QUERY_TYPES, MIN_CLARIFICATION, MIN_PERSONA
from ecab.construct.rubrics import choose_entity, entity_rubric, make_rubric
from ecab.core.rubric_checks import EntityMatcher
from ecab.core.text import contains_phrase, normalize
from ecab.schema import Review, Rubric


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
    features: list[Feature]      # every feature, each marked `witnessed`
    idle_query: int = 0          # rubrics without a witness here (they go to the query): the validator's
                                 # audit cannot find one either (the entity is not judged here)


_ENTITY_PRODUCTS: dict[tuple, list] = {}


def entity_products(catalog, product, entity) -> list:
    """The products of the target's main category whose title names the entity (the judge's entity test).
    Only they can witness another feature or come to satisfy every rubric (every task has the entity rubric),
    so the audits here need no other product. Cached per (catalog, category, entity)."""
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
                        min_features: int = 8, min_witnessed: int = MIN_PERSONA + MIN_CLARIFICATION,
                        memo: VerdictMemo | None = None) -> Selection:
    """`features`, each marked witnessed or not (see the module docstring); raises NotLoadBearing."""
    intent = get_intent(draft.intent).id
    product = draft.product
    draft.entity = entity = draft.entity or choose_entity(product, knowledge)
    products = entity_products(catalog, product, entity)
    memo = memo or construction_memo(catalog)

    def reviews_of(pid: str) -> list[Review]:
        return draft.reviews if pid == product.product_id and draft.reviews else catalog.get_reviews(pid)

    audit = audit_products(probe_rubrics(draft, features, knowledge), product, products,
                           voucher=draft.voucher, reviews_of=reviews_of, review_checker=_LEXICAL,
                           include_reviews=True, memo=memo)
    for feature, row in zip(features, audit.rubrics):
        feature.witnessed = row.load_bearing is not False
    hideable = [f for f in features if f.witnessed and f.type not in ALWAYS_QUERY_TYPES]
    if intent == "negative_constraint" and not any(f.negative and f.witnessed for f in features):
        raise NotLoadBearing("no negative constraint is load-bearing")
    if len(hideable) < min_witnessed:
        raise NotLoadBearing(f"only {len(hideable)} features have a witness (need {min_witnessed} to hide)")
    if len(features) < min_features:
        raise NotLoadBearing(f"only {len(features)} features (need {min_features})")
    # Whatever has no witness (the budget, unwitnessed features and opinions) goes to the query.
    idle_query = sum(1 for row in audit.rubrics if row.load_bearing is False and row.type != "entity_match")
    return Selection(list(features), idle_query)



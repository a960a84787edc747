"""Stage 5: the rubric plan, fixed in code (docs/original-harness.md §5.6, PAPER App. D.1).

Every rubric's id, type, field, expected_value and info_source is decided here; the verbalizer later
writes text around them and may not change them. Order: query -> persona -> clarification (r1..rN), then
the budget rubric (coupon_budget), then the single entity_match rubric.

Differences from the original, on purpose:
- every negative_attribute rubric, whatever its source, excludes concrete values (chosen in
  extract.choose_excluded_values); the original left persona/clarification negatives at `[]`;
- the implicit rubrics are chosen here, in code, not by the query writer;
- the entity phrase is chosen here from the title, not by the query writer, by one rule for every catalog
  source (the catalog's own title statistics, ecab/catalog/knowledge.py).
"""
from __future__ import annotations

import random
import re

from ecab.catalog.knowledge import CatalogKnowledge, title_head
from ecab.construct.draft import Draft, EntitySpec, Feature
from ecab.construct.intents import get_intent
from ecab.construct.partition import normalize_text
from ecab.construct.vouchers import describe_voucher
from ecab.core.rubric_types import QUERY_RUBRIC_KEYS, type_of
from ecab.core.seeds import rubric_rng
from ecab.fields import IMPLICIT_ELIGIBLE_FIELDS, WEAK_METADATA_FIELDS
from ecab.schema import Product, Rubric

QUERY_KEYS = list(QUERY_RUBRIC_KEYS)
ENTITY_KEYS = type_of("entity_match").query_keys()
HIDDEN_KEYS = ["id", "description", "type", "field", "expected_value", "info_source", "implicit_eligible",
               "must_hide_value", "query_hint"]

FIELD_HINTS = {
    "Brand": "Mention the exact brand name '{v}' as a hard requirement.",
    "Material": "Mention that it must be made of or made from '{v}'.",
    "Color": "Mention the exact color requirement '{v}'.",
    "Skin Type": "Mention the exact skin-type requirement '{v}'.",
    "Hair Type": "Mention the exact hair-type requirement '{v}'.",
    "Operating System": "Mention the operating system requirement '{v}'.",
    "Compatible Devices": "Mention that it must work with '{v}'.",
    "Compatible Phone Models": "Mention compatibility with '{v}'.",
    "Screen Size": "Mention the exact screen size '{v}'.",
    "Memory Storage Capacity": "Mention the storage capacity '{v}'.",
    "Form Factor": "Mention the exact form factor '{v}'.",
    "Connector Type": "Mention the exact connector type '{v}'.",
    "Connectivity Technology": "Mention the connectivity type '{v}'.",
    "Power Source": "Mention the power source '{v}'.",
    "Mounting Type": "Mention the mounting type '{v}'.",
    "Shape": "Mention the shape '{v}'.",
    "Pattern": "Mention the pattern '{v}'.",
    "Water Resistance Level": "Mention the water resistance level '{v}'.",
}
SINGLE_ITEM_VALUES = ("1", "1 count", "1 pack of 1", "1 item")

# The title heuristic for the entity phrase when the catalog's title statistics know no phrase of the title.
_WORD = re.compile(r"(?<![A-Za-z0-9])[A-Za-z][A-Za-z'\-]*(?![A-Za-z0-9])")   # whole words only
_FILLER_WORDS = {"pack", "pcs", "pieces", "piece", "set", "of", "and", "new", "the", "a", "an", "count", "lot",
                 "pc", "premium", "upgraded", "version"}


def query_hint(feature: Feature) -> str:
    """The one-line instruction for stating this feature: its rubric type's hint for the field or the type
    (ecab/core/rubric_types.py), else the original's per-field templates."""
    v = feature.value
    key = feature.detail_key or feature.field
    hint = type_of(rubric_type(feature)).field_hint(feature.field)
    if hint:
        return hint.format(v=v, key=key)
    if key in FIELD_HINTS:
        return FIELD_HINTS[key].format(v=v)
    if key == "Number of Items":
        text = str(v).strip().lower()
        if text in SINGLE_ITEM_VALUES:
            return "Say that it must be a single-item listing."
        if text[:1].isdigit():
            return "Mention an exact N-item requirement."
        return f"Mention the exact package-count requirement '{v}'."
    if key in WEAK_METADATA_FIELDS:
        return (f"Use the exact metadata phrase '{v}' in the query. Do not paraphrase it into a broader "
                f"subjective meaning for {key}.")
    return f"Mention the exact {key} requirement '{v}'."


def rubric_type(feature: Feature) -> str:
    return "negative_attribute" if feature.negative else feature.type


def rubric_description(feature: Feature) -> str:
    """Its rubric type's description template, else the feature's own rubric text."""
    template = type_of(rubric_type(feature)).description
    return template.format(v=feature.value, key=feature.detail_key) if template else feature.rubric_text


def is_implicit_eligible(feature: Feature, source: str) -> bool:
    return (source == "query" and type_of(rubric_type(feature)).implicit_eligible
            and (feature.detail_key or "") in IMPLICIT_ELIGIBLE_FIELDS)


def make_rubric(rid: str, feature: Feature, source: str) -> Rubric:
    rtype = rubric_type(feature)
    expected = feature.expected_value if feature.expected_value is not None else feature.value
    if type_of(rtype).value_kind == "excluded" and not (isinstance(expected, list) and expected):
        raise ValueError(f"{rid}: negative feature {feature.field} has no excluded values; run "
                         "extract.assign_exclusions before build_rubrics")
    description = rubric_description(feature)
    if source == "query":
        return Rubric(id=rid, type=rtype, field=feature.field, expected_value=expected, description=description,
                      info_source="query", extras={"query_surface": ""}, key_order=list(QUERY_KEYS))
    return Rubric(id=rid, type=rtype, field=feature.field, expected_value=expected, description=description,
                  info_source=source,
                  extras={"implicit_eligible": False, "must_hide_value": None, "query_hint": query_hint(feature)},
                  key_order=list(HIDDEN_KEYS))


# ---------------------------------------------------------------------------------------------------------
# The entity phrase
# ---------------------------------------------------------------------------------------------------------

def _heuristic_span(product: Product) -> tuple[int, int] | None:
    """The last 1-3 words of the title's head segment (before "for", "with", "-", ",", ...; bracketed tags
    left out), the usual place of the product noun in marketplace titles; brand words and pack-size filler
    are skipped. A (start, end) span of the title."""
    masked, end = title_head(product.title)
    brand = {w.lower() for w in (product.brand + " " + product.store).split()}
    words = [m for m in _WORD.finditer(masked, 0, end) if m.group(0).lower() not in brand | _FILLER_WORDS]
    if not words:
        return None
    chosen = words[-3:]
    # Only a contiguous run of the title is a valid span.
    while len(chosen) > 1 and masked[chosen[0].start():chosen[-1].end()].count(" ") != len(chosen) - 1:
        chosen = chosen[1:]
    return chosen[0].start(), chosen[-1].end()


def choose_entity(product: Product, knowledge: CatalogKnowledge | None = None) -> EntitySpec:
    """The product-type phrase of the title: the phrase of its head that the most brands of its category
    use (the catalog's own title statistics, `CatalogKnowledge.entity_of`: the same rule for every source),
    else the title heuristic (the last words of the head segment)."""
    guess = knowledge.entity_of(product) if knowledge is not None else None
    if guess is not None:
        return EntitySpec(query_surface=guess.phrase, canonical_entity=guess.phrase,
                          title_span=product.title[guess.start:guess.end])
    cut = _heuristic_span(product)
    span = product.title[cut[0]:cut[1]] if cut else product.title.strip()[:80]
    phrase = " ".join(span.split()).lower()
    return EntitySpec(query_surface=phrase, canonical_entity=phrase, title_span=span)


def entity_rubric(rid: str, entity: EntitySpec) -> Rubric:
    return Rubric(id=rid, type="entity_match", field="title", expected_value=entity.query_surface,
                  description=type_of("entity_match").description.format(v=entity.query_surface), info_source="query",
                  extras={"query_surface": entity.query_surface, "canonical_entity": entity.canonical_entity,
                          "title_span": entity.title_span},
                  key_order=list(ENTITY_KEYS))


# ---------------------------------------------------------------------------------------------------------
# The plan
# ---------------------------------------------------------------------------------------------------------

def _has_clue(feature: Feature) -> bool:
    """Whether the verbalizer's clue table can hide this value (preferred when choosing implicit rubrics)."""
    try:
        from ecab.construct import clues
    except ImportError:
        return True
    finder = getattr(clues, "clue_for", None)
    if finder is None:
        return True
    return finder(feature.field, str(feature.value), random.Random(0)) is not None


def choose_implicit(candidates: list[tuple[str, Feature]], k: int, rng: random.Random) -> list[str]:
    """k rubric ids to state implicitly, preferring values the clue table can paraphrase."""
    with_clue = [rid for rid, f in candidates if _has_clue(f)]
    without = [rid for rid, f in candidates if rid not in with_clue]
    rng.shuffle(with_clue)
    rng.shuffle(without)
    chosen = (with_clue + without)[:k]
    order = [rid for rid, _ in candidates]
    return sorted(chosen, key=order.index)


def can_hide(feature: Feature, query_features: list[Feature], entity_norm: str) -> bool:
    """False when the value is spelled anyway in the query: inside the entity phrase or inside another
    query feature's literal value (it would leak however well its own clue hides it)."""
    value_norm = normalize_text(feature.value)
    if not value_norm:
        return False
    if value_norm in entity_norm:
        return False
    return not any(other is not feature and type_of(other).value_kind != "range"
                   and value_norm in normalize_text(other.value) for other in query_features)


def build_rubrics(draft: Draft, rng: random.Random | None = None, knowledge: CatalogKnowledge | None = None) -> None:
    """Fill draft.rubrics, draft.implicit_rubric_ids and draft.entity from draft.partition (and voucher);
    `knowledge`: the catalog's (ecab.catalog.base.catalog_knowledge), for the entity phrase.

    Also leaves for the verbalizer, in draft.meta: "query_hints" {rubric id: hint}, "implicit_pool"
    (implicit-eligible query rubric ids) and "rubric_features" {rubric id: Feature}.
    """
    rng = rng or rubric_rng(draft.sample_id)
    intent = get_intent(draft.intent)
    draft.entity = draft.entity or choose_entity(draft.product, knowledge)
    entity_norm = normalize_text(draft.entity.query_surface)

    rubrics: list[Rubric] = []
    hints: dict[str, str] = {}
    by_id: dict[str, Feature] = {}
    pool: list[tuple[str, Feature]] = []
    for source in ("query", "persona", "clarification"):
        for feature in draft.partition.get(source, []):
            rid = f"r{len(rubrics) + 1}"
            rubrics.append(make_rubric(rid, feature, source))
            hints[rid] = query_hint(feature)
            by_id[rid] = feature
            if is_implicit_eligible(feature, source) and can_hide(feature, draft.partition["query"], entity_norm):
                pool.append((rid, feature))

    if intent.requires_voucher:
        if draft.voucher is None:
            raise ValueError(f"{draft.sample_id}: intent {intent.id} needs a voucher before build_rubrics")
        rid = f"r{len(rubrics) + 1}"
        rubrics.append(Rubric(id=rid, type="budget_match", field="budget", expected_value=draft.voucher.budget,
                              description=type_of("budget_match").description.format(v=draft.voucher.budget),
                              info_source="query", extras={"query_surface": ""}, key_order=list(QUERY_KEYS)))
        hints[rid] = f"State the voucher and the budget exactly: {describe_voucher(draft.voucher)}."
    rubrics.append(entity_rubric(f"r{len(rubrics) + 1}", draft.entity))

    draft.rubrics = rubrics
    draft.implicit_rubric_ids = choose_implicit(pool, min(intent.min_implicit, len(pool)), rng)
    draft.meta["query_hints"] = hints
    draft.meta["implicit_pool"] = [rid for rid, _ in pool]
    draft.meta["rubric_features"] = by_id

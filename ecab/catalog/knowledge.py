"""What construction may know about a catalog: computed from the catalog's own rows, the same way for
every source (synthetic, amazon, productdb, targets).

Construction needs two things beyond a product's own record (docs/original-harness.md §5.4, §5.6):

- **value pools**: for a negative constraint, the concrete alternative values of a field that other
  products carry. Counted per (main_category, detail key) over every row, and per (main_category, entity
  phrase, detail key) so that an excluded value is one of the same kind of thing ("Wallet" vs "Bumper" for
  a phone case, never a laptop's form factor);
- **entity phrases**: the product-type phrase of a title ("Phone Case" in "Tekshield Phone Case, for
  iPhone 15, Black"). Every title's head segment (before ",", "(", " for ", " with ", " - ", ...) is cut
  into 1-3 word phrases, leaving out brand and store words, pack-size filler, units, digits and
  phrases that are, or end in, one of the product's own detail values (a color is not a product type); a phrase scores by the number of distinct
  brands of its main category whose title heads carry it, weighted by its length (a two-word type
  phrase beats the single word it contains). A title's entity is its best-scoring phrase; phrases carried
  by a single brand are not kept, so a catalog too small to say anything falls back to the title
  heuristic in construction.

Nothing here looks at how a row was made: a generated product and an Amazon one are read alike. The store
(`Catalog.knowledge()`) and construction's in-memory snapshot compute it once per catalog;
`ecab.catalog.base.catalog_knowledge` is the one entry point.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Callable

from ecab.fields import MULTI_OPTION_FIELDS, NEGATIVE_ATTRIBUTE_FIELDS, lookup_detail, present_fields
from ecab.schema import Product

# Title segmentation: the head segment ends at the first of these (marketplace titles put the product
# noun before the "for ...", "with ...", ", Black" tail).
TITLE_CUT = re.compile(r"\s(?:-|–|—|\||for|with|by|in|compatible)\s|[,(\[:;]", re.IGNORECASE)
BRACKETED = re.compile(r"\[[^\]]*\]|\([^)]*\)|\{[^}]*\}")
WORD = re.compile(r"(?<![A-Za-z0-9])[A-Za-z][A-Za-z'\-]*(?![A-Za-z0-9])")   # whole words: not "IPX" of "IPX7"
FILLER_WORDS = frozenset({
    "pack", "pcs", "pieces", "piece", "set", "of", "and", "new", "the", "a", "an", "count", "lot", "pc",
    "premium", "upgraded", "version", "fl", "oz", "ml", "inch", "inches", "in", "ft", "feet", "cm", "mm", "lb",
    "lbs", "mah", "gb", "tb", "mb", "w", "v", "k", "x", "to", "or", "on", "from", "at", "as", "plus"})
PHRASE_WEIGHTS = {1: 1.0, 2: 3.0, 3: 4.0}
MAX_PHRASE_WORDS = 3
MIN_PHRASE_BRANDS = 2            # a phrase only one brand uses says nothing about product types
MAX_OPTION_WORDS, MAX_OPTION_CHARS = 4, 40
_OPTION_SPLIT = re.compile(r"\s*[,/|]\s*")
_SORTED_NEGATIVE_FIELDS = tuple(sorted(NEGATIVE_ATTRIBUTE_FIELDS))

Pool = list[tuple[str, int]]


@dataclass(frozen=True)
class TitlePhrase:
    phrase: str        # lower-cased words of the title, single-spaced
    start: int         # character span in the title
    end: int
    words: int


def title_head(title: str) -> tuple[str, int]:
    """(title with bracketed tags blanked out, positions kept; where its head segment ends)."""
    masked = BRACKETED.sub(lambda m: " " * len(m.group(0)), title or "")
    cut = TITLE_CUT.search(masked)
    return masked, (cut.start() if cut else len(masked))


def _own_values(product: Product) -> set[str]:
    values: set[str] = set()
    for value in (product.details or {}).values():
        if isinstance(value, str):
            values.update(_OPTION_SPLIT.split(value.lower()))
    return values


def title_phrases(product: Product) -> list[TitlePhrase]:
    """The 1-3 word phrases of the title's head that could name the product type (see the module doc)."""
    masked, end = title_head(product.title or "")
    skip = {w.lower() for w in f"{product.brand} {product.store or ''}".split()} | FILLER_WORDS
    own = _own_values(product)
    words = [(m.start(), m.end(), m.group(0).lower()) for m in WORD.finditer(masked, 0, end)]
    out: list[TitlePhrase] = []
    for i, (start, _, first) in enumerate(words):
        if first in skip:
            continue
        phrase = ""
        for n in range(1, MAX_PHRASE_WORDS + 1):
            if i + n > len(words):
                break
            w_start, w_end, low = words[i + n - 1]
            if low in skip or (n > 1 and (w_start != words[i + n - 2][1] + 1 or masked[w_start - 1] != " ")):
                break    # a skipped word ends every longer phrase here; only a space-separated run counts
            phrase = low if n == 1 else f"{phrase} {low}"
            # Not a phrase that is, or ends in, one of the listing's own values ("USB Hub Black").
            if phrase not in own and low not in own:
                out.append(TitlePhrase(phrase, start, w_end, n))
    return out


def split_options(value: Any, key: str) -> list[str]:
    """The single options a detail value offers ("Nylon, Silicone" -> both for a multi-option field),
    short ones only (a sentence is not an alternative value)."""
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, (int, float)):
        value = f"{value:g}"
    if not isinstance(value, str):
        return []
    text = " ".join(value.split())
    parts = [p for p in _OPTION_SPLIT.split(text) if p] if key in MULTI_OPTION_FIELDS else [text]
    return [p for p in parts if p and len(p.split()) <= MAX_OPTION_WORDS and len(p) <= MAX_OPTION_CHARS]


def _finish(counts: Mapping[Any, Mapping[str, int]]) -> dict[Any, Pool]:
    return {k: sorted(v.items(), key=lambda kv: (-kv[1], kv[0].lower(), kv[0])) for k, v in counts.items()}


@dataclass
class CatalogKnowledge:
    """Value pools and title-phrase statistics of one catalog (see the module docstring)."""

    phrase_brands: dict[str, dict[str, int]] = field(default_factory=dict)   # category -> phrase -> brands
    value_pools: dict[tuple[str, str], Pool] = field(default_factory=dict)   # (category, key) -> pool
    entity_pools: dict[tuple[str, str, str], Pool] = field(default_factory=dict)  # (category, entity, key)

    # -------------------------------------------------------------------------------------- building

    @classmethod
    def from_products(cls, products: Sequence[Product] | Callable[[], Iterable[Product]]) -> "CatalogKnowledge":
        """From every row of a catalog: a sequence, or a zero-argument callable returning a fresh iterable
        (two passes are made: title phrases first, then the pools keyed by each product's entity)."""
        again = (lambda: products) if not callable(products) else products
        keep = not callable(products)      # a sequence: keep each row's phrases and options for pass 2
        seen: list[tuple[list[TitlePhrase], list]] = []
        brands: dict[str, dict[str, set[str]]] = {}
        value_counts: dict[tuple[str, str], dict[str, int]] = {}
        for product in again():
            category = product.main_category or ""
            who = (product.brand or product.store or "").strip().lower()
            phrases, negatives = title_phrases(product), _negative_options(product)
            if keep:
                seen.append((phrases, negatives))
            if who:
                per = brands.setdefault(category, {})
                for p in {tp.phrase for tp in phrases}:
                    per.setdefault(p, set()).add(who)
            for key, options in negatives:
                bucket = value_counts.setdefault((category, key), {})
                for option in options:
                    bucket[option] = bucket.get(option, 0) + 1
        knowledge = cls(
            phrase_brands={c: {p: len(s) for p, s in per.items() if len(s) >= MIN_PHRASE_BRANDS}
                           for c, per in brands.items()},
            value_pools=_finish(value_counts))
        entity_counts: dict[tuple[str, str, str], dict[str, int]] = {}
        for n, product in enumerate(again()):
            phrases, negatives = seen[n] if keep else (title_phrases(product), _negative_options(product))
            entity = knowledge._best(product.main_category or "", phrases)
            if entity is None:
                continue
            category = product.main_category or ""
            for key, options in negatives:
                bucket = entity_counts.setdefault((category, entity.phrase, key), {})
                for option in options:
                    bucket[option] = bucket.get(option, 0) + 1
        knowledge.entity_pools = _finish(entity_counts)
        return knowledge

    def for_category(self, category: str) -> "CatalogKnowledge":
        """Only what one main category needs (what a construction worker is sent)."""
        return CatalogKnowledge(
            phrase_brands={category: self.phrase_brands.get(category, {})},
            value_pools={k: v for k, v in self.value_pools.items() if k[0] == category},
            entity_pools={k: v for k, v in self.entity_pools.items() if k[0] == category})

    # -------------------------------------------------------------------------------------- reading

    def entity_of(self, product: Product) -> TitlePhrase | None:
        """The title's best-scoring type phrase (a later, then longer, phrase wins a tie); None when no
        phrase of the title's head is shared by at least two brands of its category."""
        return self._best(product.main_category or "", title_phrases(product))

    def _best(self, category: str, phrases: list[TitlePhrase]) -> TitlePhrase | None:
        table = self.phrase_brands.get(category, {})
        best, best_key = None, None
        for tp in phrases:
            brands = table.get(tp.phrase)
            if not brands:
                continue
            key = (brands * PHRASE_WEIGHTS[tp.words], tp.end, tp.words)
            if best_key is None or key > best_key:
                best, best_key = tp, key
        return best

    def values(self, category: str, key: str, entity: str | None = None) -> list[str]:
        """The values of `key` in a category, most frequent first; with `entity`, those of the products
        sharing that entity phrase (empty when none)."""
        pool = (self.entity_pools.get((category, entity, key), []) if entity is not None
                else self.value_pools.get((category, key), []))
        return [value for value, _count in pool]


def _negative_options(product: Product) -> list[tuple[str, list[str]]]:
    present = present_fields(product.details)
    out = []
    for key in _SORTED_NEGATIVE_FIELDS:
        if key in present:
            options = split_options(lookup_detail(product.details, key), key)
            if options:
                out.append((key, options))
    return out

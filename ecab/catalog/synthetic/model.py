"""The generator's intermediate records: a family of listings (plain near-duplicates or a product line) and
its members, drawn once per family and read by every listing of it."""
from __future__ import annotations

from dataclasses import dataclass

from ecab.catalog.synthetic.product_type import ProductType


@dataclass
class Member:
    """One listing of a family: its detail values and how its numbers relate to the line's anchor.

    kind: "simple" (a family of plain near-duplicates: own numbers), "anchor" (the line's reference
    listing), "variant" (another value of the primary axis: color, size, pack count...), "leaf" (the
    anchor with one other spec changed: `key`), "clone" (the same item under another brand: white
    label), "dup" (the same item listed again by another seller: `aspect` says what differs - price,
    rating, count or title). Every listing has its own numbers and reviews; those of a line's variants,
    leaves and clone stay within the anchor's price, rating and rating-count brackets, a dup's leaves
    them on exactly its `aspect`. A `drifted` listing carries the line's other weight and dimensions.
    """

    kind: str
    values: dict[str, str]
    store: str
    manufacturer: str
    key: str | None = None
    aspect: str | None = None
    drifted: bool = False


@dataclass
class Family:
    """A family of listings of one type, drawn once: what its members share (brand, store, plan, opinion
    order, the base of their numbers) and the members themselves."""

    index: int
    ptype: ProductType
    brand: str
    store: str
    manufacturer: str
    main_category: str
    base: dict[str, str]                  # canonical key -> value shared by the members
    primary: str
    members: list[Member]
    anchor: int | None                    # position of the line's anchor in `members` (None: simple family)
    anchor_numbers: tuple[float | None, float, int] | None   # (price, average rating, rating count)
    layout: list[tuple[str, str]]         # (emitted key, source): source is a canonical key, "x:<extra>" or "#noise"
    extras: dict[str, str]
    title_segments: list[str]
    title_joiner: str
    feature_plan: list[str]               # selling points in family order
    feature_header: str
    keywords: list[str]
    description_style: int
    price_base: float
    price_ending: float
    quality: float
    popularity: float
    first_day: int
    model_prefix: str
    dims: str
    weight: str
    pos_order: list[str]
    neg_order: list[str]
    drift_dims: str | None = None         # a line's other weight and dimensions (its drifted members')
    drift_weight: str | None = None

    @property
    def size(self) -> int:
        return len(self.members)

"""The generator's intermediate records: a family of listings (plain near-duplicates or a product line) and
its members, drawn once per family and read by every listing of it."""
from __future__ import annotations

from dataclasses import dataclass

from ecab.catalog.synthetic.product_type import ProductType


@dataclass
class Member:
    """One listing of a family: its detail values. kind: "simple" (a family of plain near-duplicates, with
    its own numbers) or "cube" (one configuration of a product line, lines.py: its numbers are drawn within
    the line's brackets, numbers.py)."""

    kind: str
    values: dict[str, str]
    store: str
    manufacturer: str


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
    # A product line's (price, average rating, rating count) centre (None: a plain family) and cube keys
    line_centre: tuple[float | None, float, int] | None
    cube_keys: tuple[str, ...]
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

    @property
    def is_line(self) -> bool:
        return self.line_centre is not None

    @property
    def size(self) -> int:
        return len(self.members)

"""Catalog records: a product in Amazon Reviews 2023 metadata shape and one of its reviews."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from ecab.schema.record import Record, field_error, is_number


@dataclass
class Product(Record):
    """A catalog product in Amazon Reviews 2023 metadata shape (`product_id` = parent_asin)."""

    REQUIRED: ClassVar[tuple[str, ...]] = ("product_id",)
    # The keys of a task's `target_product` (docs/original-harness.md §5.12), in order.
    TARGET_KEYS: ClassVar[tuple[str, ...]] = ("product_id", "title", "main_category", "store", "average_rating",
                                              "rating_number", "price", "features", "description", "details")

    product_id: str = ""
    title: str = ""
    main_category: str = ""
    store: str = ""
    average_rating: float | None = None
    rating_number: int | None = None
    price: float | None = None
    features: list[str] = field(default_factory=list)
    description: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def _validate(self, where: str) -> None:
        prefix = f"{where}." if where else ""
        if not isinstance(self.product_id, str) or not self.product_id:
            raise field_error(prefix + "product_id", "must be a non-empty string")
        if not isinstance(self.details, dict):
            raise field_error(prefix + "details", "must be an object")
        for key in ("price", "average_rating"):
            value = getattr(self, key)
            if value is not None and not is_number(value):
                raise field_error(prefix + key, f"must be a number or null, got {value!r}")

    @property
    def brand(self) -> str:
        brand = self.details.get("Brand")
        return brand if isinstance(brand, str) else ""

    def target_view(self) -> dict[str, Any]:
        """The ten keys a task's `target_product` carries."""
        data = self.to_dict()
        return {k: data.get(k) for k in self.TARGET_KEYS}


@dataclass
class Review(Record):
    """One product review, as the original `reviews` table keeps it (docs/original-harness.md §1.3)."""

    REQUIRED: ClassVar[tuple[str, ...]] = ("product_id",)

    review_id: int | str | None = None
    product_id: str = ""
    rating: float | None = None
    title: str = ""
    text: str = ""
    helpful_vote: int = 0
    verified_purchase: bool = False
    timestamp: int | None = None

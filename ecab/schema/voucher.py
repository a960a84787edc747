"""A coupon_budget task's voucher (simple, tiered or stacked) and the price it leaves for any product."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ecab.schema.record import Record, field_error, is_number, parse_list


@dataclass
class VoucherTier(Record):
    tier: int = 1
    threshold: float = 0.0
    discount_type: str = "fixed"
    face_value: float | None = None
    discount: float | None = None
    cap: float | None = None


@dataclass
class StackedCoupon(Record):
    coupon_index: int = 0
    voucher_type: str = ""
    discount_type: str = "fixed"
    threshold: float = 0.0
    face_value: float | None = None
    discount: float | None = None
    cap: float | None = None
    actual_discount: float | None = None


def _discount(price: float, discount_type: str, face_value, discount, cap) -> float:
    """What one fixed or percentage coupon takes off `price` (threshold already met)."""
    if discount_type == "fixed":
        return float(face_value or 0.0)
    off = price * float(discount or 0.0)
    return min(off, float(cap)) if cap is not None else off


@dataclass
class Voucher(Record):
    """A coupon_budget voucher: simple (fixed/percentage), tiered or stacked (docs/original-harness.md §5.7)."""

    OMIT_IF_NONE: ClassVar[tuple[str, ...]] = ("tiers", "active_tier", "coupons")

    voucher_type: str = ""
    threshold: float | None = None
    discount_type: str = "fixed"
    face_value: float | None = None
    discount: float | None = None
    cap: float | None = None
    tiers: list[VoucherTier] | None = None
    active_tier: int | None = None
    coupons: list[StackedCoupon] | None = None
    budget: float = 0.0
    total_original_price: float | None = None
    price_after_voucher: float | None = None

    @classmethod
    def _parse_field(cls, key, value, where):
        if key == "tiers" and value is not None:
            return parse_list(value, VoucherTier, where)
        if key == "coupons" and value is not None:
            return parse_list(value, StackedCoupon, where)
        return value

    def _validate(self, where: str) -> None:
        prefix = f"{where}." if where else ""
        if not is_number(self.budget):
            raise field_error(prefix + "budget", f"must be a number, got {self.budget!r}")
        if self.kind == "tiered" and not self.tiers:
            raise field_error(prefix + "tiers", "a tiered voucher needs its tiers")
        if self.kind == "stacked" and not self.coupons:
            raise field_error(prefix + "coupons", "a stacked voucher needs its coupons")

    @property
    def kind(self) -> str:
        """simple | tiered | stacked."""
        if self.discount_type == "tiered":
            return "tiered"
        if self.discount_type == "stacked" or self.voucher_type == "stacked":
            return "stacked"
        return "simple"

    def apply(self, price: float) -> float:
        """The price of a product of list price `price` after this voucher, rounded to cents.

        Unlike the original (which only knew the target's pre-computed `price_after_voucher`), this applies
        the voucher rules to any product: a coupon applies when the price reaches its threshold; for a
        tiered voucher the highest tier whose threshold is met applies; stacked coupons apply in order,
        the second to the intermediate price. A discount never takes the price below zero.
        """
        final = float(price)
        if self.kind == "simple":
            if final >= float(self.threshold or 0.0):
                final -= _discount(final, self.discount_type, self.face_value, self.discount, self.cap)
        elif self.kind == "tiered":
            met = [t for t in self.tiers or [] if final >= float(t.threshold)]
            if met:
                best = max(met, key=lambda t: float(t.threshold))
                final -= _discount(final, best.discount_type, best.face_value, best.discount, best.cap)
        else:
            for coupon in sorted(self.coupons or [], key=lambda c: c.coupon_index):
                if final >= float(coupon.threshold):
                    final -= _discount(final, coupon.discount_type, coupon.face_value, coupon.discount, coupon.cap)
        return round(max(final, 0.0), 2)

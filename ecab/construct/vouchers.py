"""Stage 3a: the coupon_budget voucher (docs/original-harness.md §5.7): simple 0.50, tiered 0.25, stacked 0.25.

Money is rounded to cents before the voucher is assembled, and `price_after_voucher` is then computed by
`Voucher.apply(price)` itself, so the stored final price and the judge's arithmetic can never disagree.

Deliberate difference from the original: the budget is drawn as price_after_voucher x U(1.0, 1.08) as
before, but capped one cent below the list price, so the voucher is always needed to fit the budget
(otherwise the budget rubric would be a plain price cap).
"""
from __future__ import annotations

import random

from ecab.schema import StackedCoupon, Voucher, VoucherTier

SCENARIO_WEIGHTS = (("simple", 0.50), ("tiered", 0.25), ("stacked", 0.25))
SIMPLE_VOUCHER_TYPES = ("platform", "shop", "brand")
STACKED_FIRST_TYPES = ("platform", "brand")
STACKED_MAX_SHARE = 0.40     # the two stacked discounts together never exceed 40% of the price
STACKED_FALLBACK_SHARE = 0.04


class VoucherError(ValueError):
    """No sensible voucher exists for this price (the candidate is skipped)."""


def cents(x: float) -> float:
    return round(float(x), 2)


def _pick_scenario(rng: random.Random) -> str:
    r, acc = rng.random(), 0.0
    for name, weight in SCENARIO_WEIGHTS:
        acc += weight
        if r < acc:
            return name
    return SCENARIO_WEIGHTS[-1][0]


def _simple(price: float, rng: random.Random) -> Voucher:
    voucher_type = rng.choice(SIMPLE_VOUCHER_TYPES)
    discount_type = rng.choice(("fixed", "percentage"))
    threshold = cents(price * rng.uniform(0.4, 0.8))
    if discount_type == "fixed":
        return Voucher(voucher_type=voucher_type, threshold=threshold, discount_type="fixed",
                       face_value=cents(price * rng.uniform(0.05, 0.25)), discount=None, cap=None)
    return Voucher(voucher_type=voucher_type, threshold=threshold, discount_type="percentage", face_value=None,
                   discount=cents(rng.uniform(0.05, 0.20)), cap=cents(price * rng.uniform(0.1, 0.3)))


def _tier(rng: random.Random, tier: int, price: float, threshold_range, fixed_range, pct_range,
          cap_range) -> VoucherTier:
    threshold = cents(price * rng.uniform(*threshold_range))
    if rng.random() < 0.5:
        return VoucherTier(tier=tier, threshold=threshold, discount_type="fixed",
                           face_value=cents(price * rng.uniform(*fixed_range)), discount=None, cap=None)
    return VoucherTier(tier=tier, threshold=threshold, discount_type="percentage", face_value=None,
                       discount=cents(rng.uniform(*pct_range)), cap=cents(price * rng.uniform(*cap_range)))


def _tiered(price: float, rng: random.Random) -> Voucher:
    voucher_type = rng.choice(SIMPLE_VOUCHER_TYPES)
    # Tier 1 always triggers (threshold below the price); tier 2 never does (threshold above it).
    tier1 = _tier(rng, 1, price, (0.40, 0.70), (0.04, 0.10), (0.05, 0.12), (0.08, 0.18))
    tier2 = _tier(rng, 2, price, (1.10, 1.50), (0.15, 0.25), (0.15, 0.25), (0.25, 0.40))
    return Voucher(voucher_type=voucher_type, threshold=tier1.threshold, discount_type="tiered", face_value=None,
                   discount=None, cap=None, tiers=[tier1, tier2], active_tier=1)


def _stacked(price: float, rng: random.Random) -> Voucher:
    first = StackedCoupon(coupon_index=0, voucher_type=rng.choice(STACKED_FIRST_TYPES), discount_type="percentage",
                          threshold=cents(price * rng.uniform(0.30, 0.60)), face_value=None,
                          discount=cents(rng.uniform(0.05, 0.15)), cap=cents(price * rng.uniform(0.08, 0.20)))
    first.actual_discount = cents(min(price * first.discount, first.cap))
    second = StackedCoupon(coupon_index=1, voucher_type="shop", discount_type="fixed",
                           threshold=cents(price * rng.uniform(0.20, 0.50)),
                           face_value=cents(price * rng.uniform(0.03, 0.12)), discount=None, cap=None)
    if first.actual_discount + second.face_value > STACKED_MAX_SHARE * price:
        second.face_value = cents(price * STACKED_FALLBACK_SHARE)
    second.actual_discount = second.face_value
    # The original's key order for stacked coupons: actual_discount last; face/discount/cap as generated.
    return Voucher(voucher_type="stacked", threshold=first.threshold, discount_type="stacked", face_value=None,
                   discount=None, cap=None, coupons=[first, second])


def _budget(price: float, final: float, rng: random.Random) -> float:
    budget = max(cents(final * rng.uniform(1.0, 1.08)), final)
    if final < cents(price - 0.01):
        budget = min(budget, cents(price - 0.01))
    return budget


def make_voucher(price: float, rng: random.Random) -> Voucher:
    """A voucher for a target of list price `price` whose budget the target fits only after the voucher."""
    if price is None or not price > 0:
        raise VoucherError(f"a voucher needs a positive price, got {price!r}")
    price = cents(price)
    builder = {"simple": _simple, "tiered": _tiered, "stacked": _stacked}[_pick_scenario(rng)]
    voucher = builder(price, rng)
    final = voucher.apply(price)
    if final <= 0:
        raise VoucherError(f"the voucher would make a ${price} product free")
    voucher.total_original_price = price
    voucher.price_after_voucher = final
    voucher.budget = _budget(price, final, rng)
    return voucher


def describe_voucher(voucher: Voucher) -> str:
    """Every number of the voucher in one sentence (the budget rubric's query hint, docs/original-harness.md §5.6)."""
    def coupon(kind, face, pct, cap, threshold, who=""):
        who = f"{who} " if who else ""
        if kind == "fixed":
            return f"a ${face:.2f} {who}coupon on orders over ${threshold:.2f}"
        capped = f" capped at ${cap:.2f}" if cap is not None else ""
        return f"a {round(pct * 100):g}% {who}coupon on orders over ${threshold:.2f}{capped}"

    if voucher.kind == "tiered":
        t1, t2 = voucher.tiers[0], voucher.tiers[1]
        text = (f"a tiered {voucher.voucher_type} voucher: tier 1 is "
                f"{coupon(t1.discount_type, t1.face_value, t1.discount, t1.cap, t1.threshold)}, tier 2 is "
                f"{coupon(t2.discount_type, t2.face_value, t2.discount, t2.cap, t2.threshold)}; tier 1 applies")
    elif voucher.kind == "stacked":
        c0, c1 = voucher.coupons[0], voucher.coupons[1]
        text = (f"two stacked coupons applied in order: first "
                f"{coupon(c0.discount_type, c0.face_value, c0.discount, c0.cap, c0.threshold, c0.voucher_type)}, "
                f"then {coupon(c1.discount_type, c1.face_value, c1.discount, c1.cap, c1.threshold, c1.voucher_type)}"
                " on the reduced price")
    else:
        text = coupon(voucher.discount_type, voucher.face_value, voucher.discount, voucher.cap, voucher.threshold,
                      voucher.voucher_type)
    return f"{text}; the final total must stay within ${voucher.budget:.2f}"

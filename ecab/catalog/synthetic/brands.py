"""Brands, stores and manufacturers: a few curated brands per type, many made-up ones per source category,
and the store and manufacturer a brand sells under (fixed per seed and brand)."""
from __future__ import annotations

import random

from ecab.catalog.synthetic.product_type import ProductType
from ecab.catalog.synthetic.seeding import rng_for
from ecab.catalog.synthetic.tables.names import BRAND_CONSONANTS, BRAND_SUFFIXES, BRAND_SYLLABLES

GENERATED_BRANDS_PER_CATEGORY = 1500


def generated_brand(seed: int, source: str, k: int) -> str:
    """The k-th made-up brand of a source category: "Velkora" or an all-caps "BZKRE" style seller name."""
    rng = rng_for(seed, "brand", source, k)
    if rng.random() < 0.35:
        letters = [rng.choice(BRAND_CONSONANTS) for _ in range(rng.randint(4, 7))]
        letters[rng.randrange(1, len(letters))] = rng.choice("AEIOU")
        return "".join(letters)
    word = "".join(rng.choice(BRAND_SYLLABLES) for _ in range(rng.randint(2, 3))) + rng.choice(BRAND_SUFFIXES)
    return word.capitalize()


def pick_brand(seed: int, rng: random.Random, ptype: ProductType) -> str:
    """A curated brand of the type (shared across types of a category) or one of many generated ones,
    so big catalogs get many stores while small ones still repeat brands."""
    roll = rng.random()
    if roll < 0.02:
        return "Generic"
    if roll < 0.4:
        return rng.choice(ptype.brands)
    return generated_brand(seed, ptype.source_category, rng.randrange(GENERATED_BRANDS_PER_CATEGORY))


def store_for(seed: int, brand: str) -> str:
    """The store a brand usually sells under: fixed per (seed, brand) so a store carries many products."""
    rng = rng_for(seed, "store", brand)
    roll = rng.random()
    if roll < 0.7:
        return brand
    return rng.choice((f"{brand} Store", f"{brand} Official", f"{brand}-US", f"{brand} Direct", brand.upper()))


def manufacturer_for(seed: int, brand: str, source: str) -> str:
    rng = rng_for(seed, "maker", brand)
    roll = rng.random()
    if roll < 0.6:
        return brand
    if roll < 0.75:
        return brand.upper() if rng.random() < 0.5 else brand.lower()
    if source != "All_Beauty" and roll < 0.9:
        return f"Shenzhen {brand} Technology Co.,Ltd"
    return f"{brand} Inc"


def other_brand(seed: int, rng: random.Random, ptype: ProductType, brand: str) -> str:
    for _ in range(8):
        other = pick_brand(seed, rng, ptype)
        if other.lower() != brand.lower() and other != "Generic":
            return other
    return generated_brand(seed, ptype.source_category, rng.randrange(GENERATED_BRANDS_PER_CATEGORY)) + "x"

"""Session fixtures shared by the test files: the embedder (loaded once) and small built catalogs.

Building a catalog costs seconds (embedding), so each one is built once per session in a tmp dir.
"""
from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from ecab.catalog.base import CatalogBatch
from ecab.schema import Product, Review

SHARED_DIR = Path(__file__).resolve().parents[2] / "shared"
SMALL_CATALOG_PRODUCTS = 400   # synthetic products in `small_catalog` (plus the probes below)
SMALL_CATALOG_SEED = 7


def _probe(pid: str, title: str, store: str, price: float | None, rating: float, **details) -> Product:
    return Product.from_dict({
        "product_id": pid, "title": title, "main_category": "Probe Category", "store": store,
        "average_rating": rating, "rating_number": 42, "price": price,
        "features": [f"feature of {title}"], "description": [], "details": {"Brand": store, **details},
    })


def _review(rid: int, pid: str, rating: float, title: str, text: str) -> Review:
    return Review.from_dict({"review_id": rid, "product_id": pid, "rating": rating, "title": title, "text": text,
                             "helpful_vote": rid % 3, "verified_purchase": True, "timestamp": 1700000000 + rid})


# Hand-made products with known titles, mixed into the small catalog so tests can probe exact semantics.
PROBE_PRODUCTS = [
    _probe("PROBE-USBC", "Braidex USB-C Charger Cable 6ft Braided", "Braidex", 12.99, 4.6,
           **{"Connector Type": "USB Type C"}),
    _probe("PROBE-USBSPLIT", "Braidex Wall Charger USB Port with Type C Adapter", "Braidex", 18.50, 4.2),
    _probe("PROBE-CASE", "Slimfold Phone Case for Pixel 8 Matte Black", "Slimfold", 8.99, 4.0,
           Color="Black"),
    _probe("PROBE-CASES", "Slimfold Clear Phone Cases Bundle 3 Pack", "Slimfold", 14.99, 3.9),
    _probe("PROBE-SKILLET", "Forgewell Cast Iron Skillet 12 inch Pre-Seasoned", "Forgewell", 34.00, 4.8,
           Material="Cast Iron"),
    _probe("PROBE-CAFE", "Crème Brûlée Café Mug — 12 oz Stoneware", "Forgewell", None, 4.4),
]
PROBE_REVIEWS = [
    _review(900001, "PROBE-USBC", 5, "Fast charging", "Charges my laptop quickly, great braided cable."),
    _review(900002, "PROBE-USBC", 2, "Frayed", "The cable frayed after two weeks of use."),
    _review(900003, "PROBE-USBC", 4, "Works", "Works fine with my phone and tablet."),
    _review(900004, "PROBE-CASE", 4, "Nice case", "My old charging cable frayed but this case is great."),
    _review(900005, "PROBE-CASE", 5, "Slim", "Fits the phone perfectly and feels thin."),
]


def small_catalog_batches() -> list[CatalogBatch]:
    """The small catalog's source: synthetic products then the probes (a list, so it can be replayed)."""
    from ecab.catalog.synthetic import iter_synthetic

    synthetic = list(iter_synthetic(SMALL_CATALOG_PRODUCTS, SMALL_CATALOG_SEED, 200))
    return synthetic + [CatalogBatch(list(PROBE_PRODUCTS), list(PROBE_REVIEWS))]


@pytest.fixture(scope="session")
def embedder():
    from ecab.catalog.embed import get_embedder

    return get_embedder()


@pytest.fixture(scope="session")
def catalog_batches() -> list[CatalogBatch]:
    return small_catalog_batches()


def _build(tmp_path_factory, name: str, batches, embedder, shards: int):
    from ecab.catalog.store import LanceCatalog, build_catalog

    out = tmp_path_factory.mktemp("catalogs") / name
    build_catalog(iter(batches), out, shards=shards, embedder=embedder, fingerprint=f"test-{name}",
                  progress=False)
    return LanceCatalog.open(out, embedder=embedder)


@pytest.fixture(scope="session")
def small_catalog(tmp_path_factory, catalog_batches, embedder):
    """~400 synthetic products + the probes, one shard, default mode hybrid."""
    return _build(tmp_path_factory, "small", catalog_batches, embedder, shards=1)


@pytest.fixture(scope="session")
def small_catalog_sharded(tmp_path_factory, catalog_batches, embedder):
    """The same products as `small_catalog`, split over two shards."""
    return _build(tmp_path_factory, "small-2shards", catalog_batches, embedder, shards=2)


def all_products(catalog) -> list[Product]:
    return list(itertools.chain.from_iterable(catalog.iter_products(256)))

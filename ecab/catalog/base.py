"""The catalog contract every stage reads through (tools, construction, judge, runners).

`CatalogReader` is what the catalog facade (facade.py) offers, sharded or not, its shards local or behind Ray
actors. Sources (synthetic/, amazon.py) produce `CatalogBatch`es that a catalog is built from (writer.py).

What construction may know about a catalog beyond one product's own record (value pools, title phrases)
comes from `catalog_knowledge(reader)` only: computed from the catalog's rows, the same for every source
(ecab/catalog/knowledge.py). Construction never asks a source how it made a product.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Iterator, Protocol, runtime_checkable

from ecab.schema import Product, Review

if TYPE_CHECKING:
    from ecab.catalog.knowledge import CatalogKnowledge


@dataclass
class CatalogBatch:
    """A slice of a catalog source: some products and the reviews of those products."""

    products: list[Product] = field(default_factory=list)
    reviews: list[Review] = field(default_factory=list)


@dataclass(frozen=True)   # frozen: cached search pages share their hits (cache.SearchPageCache)
class SearchHit:
    product_id: str
    title: str
    score: float = 0.0


@dataclass
class SearchPage:
    """One page of results; `total` is the true number of matches under the mode's matching rule."""

    hits: list[SearchHit]
    total: int


@runtime_checkable
class CatalogReader(Protocol):
    fingerprint: str

    def count(self) -> int: ...

    def get_product(self, product_id: str) -> Product | None: ...

    def get_products(self, product_ids: list[str]) -> list[Product]:
        """In input order; unknown ids dropped."""

    def get_reviews(self, product_id: str, limit: int = 20) -> list[Review]:
        """The product's reviews in stored order."""

    def search_reviews(self, product_id: str, query: str, limit: int = 5, *,
                       mode: str | None = None) -> list[Review]:
        """Best-matching reviews of that one product only (`mode` as in `search`; None: the default)."""

    def search(self, query: str, *, limit: int = 20, offset: int = 0, mode: str | None = None,
               where: str | None = None) -> SearchPage:
        """mode: "hybrid" (default), "fts", "vector" or "original" (title-only AND, docs/original-harness.md §1.4)."""

    def store_products(self, store: str, *, limit: int = 20, offset: int = 0) -> SearchPage:
        """Exact, case-sensitive store match, stable order, true total."""

    def iter_products(self, batch_size: int = 1024) -> Iterator[list[Product]]: ...


def catalog_knowledge(catalog) -> "CatalogKnowledge":
    """What construction may know about `catalog` (ecab/catalog/knowledge.py): the reader's own
    `knowledge()` when it offers one (computed once from its rows), else computed here from
    `iter_products`. Either way only the catalog's rows go in, whatever source built it."""
    own = getattr(catalog, "knowledge", None)
    if callable(own):
        return own()
    from ecab.catalog.knowledge import CatalogKnowledge

    return CatalogKnowledge.from_products(lambda: (p for batch in catalog.iter_products() for p in batch))


def product_batches(products: Iterable[Product], batch_size: int, reviews_of) -> Iterator[CatalogBatch]:
    """Group products into batches of `batch_size`, each with `reviews_of(ids)` attached."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    batch: list[Product] = []
    for product in products:
        batch.append(product)
        if len(batch) == batch_size:
            yield CatalogBatch(products=batch, reviews=reviews_of([p.product_id for p in batch]))
            batch = []
    if batch:
        yield CatalogBatch(products=batch, reviews=reviews_of([p.product_id for p in batch]))


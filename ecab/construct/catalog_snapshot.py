"""A small catalog's products in memory, served as a CatalogReader (docs/decisions.md#construction-workers)."""
from __future__ import annotations

import copy
import pickle
from pathlib import Path
from typing import Callable, Iterator

from ecab.catalog.base import CatalogReader, SearchPage
from ecab.catalog.knowledge import CatalogKnowledge
from ecab.schema import Product, Review


class SnapshotCatalog:
    """A small catalog's products held in memory, as a CatalogReader with the same fingerprint.

    Construction reads products many times (the target, then whole categories for uniqueness); serving
    them from memory spares LanceDB and, in a spawned worker, spares even importing it. Reviews and search
    go to the real catalog, opened on first use: only review-driven candidates need it.
    Products are handed out as copies, so a stage that edits its draft's product cannot change the
    catalog seen by later candidates.
    """

    def __init__(self, products: list[Product], fingerprint: str, *, base: CatalogReader | None = None,
                 opener: Callable[[], CatalogReader] | None = None):
        self.fingerprint = fingerprint
        self._products = products
        self._by_id = {p.product_id: p for p in products}
        self._base, self._opener = base, opener
        self._knowledge: CatalogKnowledge | None = None

    @property
    def base(self) -> CatalogReader:
        if self._base is None:
            if self._opener is None:
                raise RuntimeError("the in-memory catalog snapshot needs the real catalog (reviews or search) "
                                   "but has no way to open it: pass opener=... to construct()")
            self._base = self._opener()
        return self._base

    def count(self) -> int:
        return len(self._products)

    def get_product(self, product_id: str) -> Product | None:
        product = self._by_id.get(product_id)
        return copy.deepcopy(product) if product is not None else None

    def get_products(self, product_ids: list[str]) -> list[Product]:
        return [copy.deepcopy(self._by_id[pid]) for pid in product_ids if pid in self._by_id]

    def iter_products(self, batch_size: int = 1024) -> Iterator[list[Product]]:
        for start in range(0, len(self._products), batch_size):
            yield self._products[start:start + batch_size]

    def knowledge(self) -> CatalogKnowledge:
        """What construction may know about the catalog (ecab.catalog.base.catalog_knowledge), from the
        snapshot's rows."""
        if self._knowledge is None:
            self._knowledge = CatalogKnowledge.from_products(self._products)
        return self._knowledge

    def get_reviews(self, product_id: str, limit: int = 20) -> list[Review]:
        return self.base.get_reviews(product_id, limit=limit)

    def search_reviews(self, product_id: str, query: str, limit: int = 5) -> list[Review]:
        return self.base.search_reviews(product_id, query, limit=limit)

    def search(self, query: str, **kwargs) -> SearchPage:
        return self.base.search(query, **kwargs)

    def store_products(self, store: str, **kwargs) -> SearchPage:
        return self.base.store_products(store, **kwargs)

    def dump(self, path: Path) -> Path:
        """Pickle the products once, for workers to load instead of re-reading LanceDB."""
        with open(path, "wb") as fh:
            pickle.dump({"fingerprint": self.fingerprint, "products": self._products}, fh,
                        protocol=pickle.HIGHEST_PROTOCOL)
        return path

    @classmethod
    def load(cls, path: str | Path, *, opener: Callable[[], CatalogReader] | None = None) -> "SnapshotCatalog":
        with open(path, "rb") as fh:
            data = pickle.load(fh)
        return cls(data["products"], data["fingerprint"], opener=opener)

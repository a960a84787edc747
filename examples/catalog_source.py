"""A catalog source of your own: a function yielding the catalog in batches (docs/extending.md §5).

conf/catalog/<name>.yaml in your config folder:  {defaults: [synthetic, _self_], source: python,
target: examples.catalog_source:products, options: {path: /data/shop.jsonl, version: 1}, products: null}
The file holds one product per line (the Product keys: product_id, title, details, price, average_rating, ...)
with an optional "reviews" list of Review objects.
"""
from __future__ import annotations

import json
from typing import Iterator

import ecab


def products(cfg) -> Iterator[ecab.CatalogBatch]:
    """`cfg` is the typed catalog section: `cfg.options` holds your keys, `cfg.products` the size asked for
    (None: all), `cfg.batch_size` the batch size ecab builds with."""
    limit = cfg.products
    batch = ecab.CatalogBatch()
    with open(cfg.options["path"], encoding="utf-8") as lines:
        for n, line in enumerate(lines):
            if limit is not None and n >= limit:
                break
            row = json.loads(line)
            reviews = row.pop("reviews", [])
            batch.products.append(ecab.Product.from_dict(row))
            batch.reviews.extend(ecab.Review.from_dict(r) for r in reviews)
            if len(batch.products) == cfg.batch_size:
                yield batch
                batch = ecab.CatalogBatch()
    if batch.products:
        yield batch

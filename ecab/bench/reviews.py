"""`python -m ecab.bench.reviews`: what review search costs an episode, with review vectors embedded lazily (as
ecab does) against what building them all into the catalog would cost (docs/decisions.md#review-vectors).

A benchmark, not a test. On the configured catalog (built or reused from the cache, e.g. `catalog.products=1000000`)
it times, each on its own random products so that every timed call is cold:

    rows       get_reviews: a product's reviews fetched by the product_id index (what a precomputed vector
               column would also cost to read: the vectors sit in the same rows)
    lazy       search_reviews, mode hybrid, first call for a product: the rows, embedding every review of the
               product, the keyword leg and the fusion
    cached     the same calls again: embeddings cached by the shard

and the embedder's throughput on review texts, from which it projects what embedding every review at build time
costs on this machine (CPU hours, disk).

    python -m ecab.bench.reviews [--products 200] [overrides...]
"""
from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path

from ecab.bench.search import _percentile
from ecab.catalog.embedding_model import DIM
from ecab.catalog.facade import Catalog
from ecab.catalog.layout import review_search_text

QUERIES = ("battery life", "easy to clean", "smell", "fits well", "broke after a month", "sturdy", "quality")


def sample_products(catalog: Catalog, n: int, seed: int = 0) -> list[str]:
    """`n` product ids spread over the catalog (streamed: a 1M catalog is not held as objects). Whether a
    product has reviews is not checked: that would fetch, and so cache, the rows the measurements time."""
    rng = random.Random(f"bench-reviews-{seed}")
    keep = min(1.0, 2.0 * n / max(1, catalog.count()))
    picked = []
    for batch in catalog.iter_products(4096):
        picked += [p.product_id for p in batch if rng.random() < keep]
        if len(picked) >= n:
            break
    rng.shuffle(picked)
    return picked[:n]


def timed_ms(calls) -> list[float]:
    latencies = []
    for call in calls:
        started = time.perf_counter()
        call()
        latencies.append((time.perf_counter() - started) * 1000)
    return latencies


def summary(name: str, latencies: list[float]) -> str:
    return (f"{name:<8} {statistics.median(latencies):>8.2f} {_percentile(latencies, 0.95):>8.2f} "
            f"{statistics.fmean(latencies):>8.2f}")


def review_embedding_rate(catalog: Catalog, product_ids: list[str]) -> tuple[float, int]:
    """(review texts embedded per second, texts timed): the catalog's own embedder, one process."""
    texts = [review_search_text(r) for pid in product_ids for r in catalog.get_reviews(pid, limit=1000)]
    embedder = catalog.shards[0].embedder   # the shard client's own (LocalShardClient.embedder)
    embedder.encode(texts[:32])   # loaded and warm
    started = time.perf_counter()
    embedder.encode(texts)
    return len(texts) / (time.perf_counter() - started), len(texts)


def main(argv: list[str] | None = None) -> None:
    from ecab.catalog.build import ensure_catalog
    from ecab.config import ConfigError, die, load_config, parse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--products", type=int, default=200, help="products per measurement")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. catalog.products=1000000")
    args = parser.parse_args(argv)
    try:
        cfg = parse(load_config(args.overrides))
    except ConfigError as exc:
        die(str(exc))
    catalog = ensure_catalog(cfg.catalog, Path(cfg.cache_dir), progress=True)
    if catalog.path is None:
        die("the review benchmark opens the catalog in this process (runner=local)")
    products, reviews = catalog.meta["counts"]["products"], catalog.meta["counts"]["reviews"]
    ids = sample_products(catalog, 3 * args.products)
    if len(ids) < 3:
        die("the catalog has too few products to measure")
    rows_ids, lazy_ids, rate_ids = ids[0::3], ids[1::3], ids[2::3]
    rng = random.Random("bench-reviews-queries")
    queries = {pid: rng.choice(QUERIES) for pid in lazy_ids}

    rows = timed_ms(lambda pid=pid: catalog.get_reviews(pid, limit=1000) for pid in rows_ids)
    lazy = timed_ms(lambda pid=pid: catalog.search_reviews(pid, queries[pid], 5, mode="hybrid") for pid in lazy_ids)
    cached = timed_ms(lambda pid=pid: catalog.search_reviews(pid, queries[pid], 5, mode="hybrid") for pid in lazy_ids)
    per_product = statistics.fmean(len(catalog.get_reviews(pid, limit=1000)) for pid in lazy_ids)
    rate, timed = review_embedding_rate(catalog, rate_ids)

    print(f"== {products:,} products, {reviews:,} reviews ({reviews / max(1, products):.1f} per product; "
          f"{per_product:.1f} per sampled product); {len(lazy_ids)} products per measurement, cold")
    print(f"{'call':<8} {'p50 ms':>8} {'p95 ms':>8} {'mean ms':>8}")
    for name, latencies in (("rows", rows), ("lazy", lazy), ("cached", cached)):
        print(summary(name, latencies))
    extra = statistics.fmean(lazy) - statistics.fmean(cached)
    print(f"lazy embedding adds {extra:.1f} ms to a product's first review search (mean); later searches of the "
          f"same product pay {statistics.fmean(cached):.1f} ms")
    build_cpu_h = reviews / rate / 3600
    print(f"embedder: {rate:,.0f} review texts/s ({timed:,} timed, this process). Precomputing every review "
          f"vector at build time: {build_cpu_h:,.1f} h of this machine, {reviews * DIM * 4 / 2**30:,.1f} GiB of "
          f"float32 vectors, to save {extra:.1f} ms on each product's first review search")


if __name__ == "__main__":
    main()

"""`python -m ecab.catalog build|info|search "<query>" [overrides]`

    python -m ecab.catalog build catalog.products=20000
    python -m ecab.catalog info catalog=amazon catalog.path=data/amazon_raw
    python -m ecab.catalog search "usb c charger for iphone" tools.search=original
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

USAGE = __doc__.strip()
COMMANDS = ("build", "info", "search")


def _human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.1f} GB"


def _parse(argv: list[str]) -> tuple[str, str | None, list[str]]:
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        sys.exit(0 if argv else 2)
    command, rest = argv[0], argv[1:]
    if command not in COMMANDS:
        raise ValueError(f"unknown command {command!r}; choose one of: {', '.join(COMMANDS)}")
    query = None
    if command == "search":
        if not rest or "=" in rest[0]:
            raise ValueError('search needs a query: python -m ecab.catalog search "<query>" [overrides]')
        query, rest = rest[0], rest[1:]
    return command, query, rest


def _print_info(catalog) -> None:
    meta = catalog.meta
    print(f"fingerprint  {catalog.fingerprint}")
    print(f"path         {catalog.path}")
    print(f"products     {meta['counts']['products']}")
    print(f"reviews      {meta['counts']['reviews']}")
    print(f"shards       {meta['shards']}")
    print(f"embedding    {meta['embedding_model']} ({meta['embedding_dim']})")
    print(f"built        {meta['built_at']} in {meta['build_seconds']} s")
    print(f"disk         {_human_bytes(catalog.disk_bytes())}")
    skipped = {k: v for k, v in meta.get("skipped", {}).items() if v}
    if skipped:
        print(f"skipped      {skipped}")


def _print_search(catalog, query: str, mode: str, limit: int = 20) -> None:
    catalog.search(query, limit=1, mode=mode)   # warm-up: embedder load and index caches
    started = time.perf_counter()
    page = catalog.search(query, limit=limit, mode=mode)
    elapsed = (time.perf_counter() - started) * 1000
    print(f"{mode} search {query!r}: {page.total} total, {elapsed:.1f} ms")
    products = {p.product_id: p for p in catalog.get_products([h.product_id for h in page.hits])}
    for rank, hit in enumerate(page.hits, 1):
        product = products.get(hit.product_id)
        price = f"{product.price:.2f}" if product and product.price is not None else "-"
        rating = f"{product.average_rating:.1f}" if product and product.average_rating is not None else "-"
        print(f"{rank:>3}. {hit.product_id:<12} {price:>9} {rating:>4}  {hit.title[:90]}")


def main(argv: list[str] | None = None) -> int:
    from ecab.config import ConfigError, die, load_config, parse

    try:
        command, query, overrides = _parse(list(sys.argv[1:] if argv is None else argv))
        cfg = parse(load_config(overrides))
        from ecab.catalog.build import catalog_dir, ensure_catalog

        mode = str(cfg.tools.search)
        if command == "build" and (catalog_dir(cfg.catalog, cfg.cache_dir) / "meta.json").exists():
            print("already built (cached by fingerprint)")
        catalog = ensure_catalog(cfg.catalog, Path(cfg.cache_dir), mode=mode, progress=True)
    except (ConfigError, ValueError, FileNotFoundError) as exc:
        die(str(exc))
    if command in ("build", "info"):
        _print_info(catalog)
    else:
        _print_search(catalog, query, mode)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`python -m ecab.catalog build|info|list|search "<query>" [overrides]`

    python -m ecab.catalog build catalog.products=20000      build the configured catalog (cached by fingerprint)
    python -m ecab.catalog info catalog.products=20000       describe the catalog of these overrides
    python -m ecab.catalog list                              every catalog in the cache, the newest marked
    python -m ecab.catalog search "usb c charger for iphone" tools.search=original

A catalog is named by its config: `info` and `search` take the same overrides `build` took (without any they
mean the default config's catalog, and `info` says so). `info` describes a built catalog and never builds one;
`build` and `search` build it first when it is not in the cache. `list` reads `<cache_dir>/catalogs/`.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

USAGE = __doc__.strip()
COMMANDS = ("build", "info", "list", "search")
HELP_FLAGS = ("-h", "--help")
LIST_HINT = "every cached catalog: python -m ecab.catalog list"


def _human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.1f} GB"


def _disk_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _parse(argv: list[str]) -> tuple[str, str | None, list[str]]:
    """(command, the search query or None, overrides); --help anywhere prints the usage and exits 0."""
    if any(a in HELP_FLAGS for a in argv):
        print(USAGE)
        sys.exit(0)
    if not argv:
        raise ValueError(f"a command is needed: {', '.join(COMMANDS)} (python -m ecab.catalog --help)")
    command, rest = argv[0], argv[1:]
    if command not in COMMANDS:
        raise ValueError(f"unknown command {command!r}; choose one of: {', '.join(COMMANDS)}")
    query = None
    if command == "search":
        if not rest or "=" in rest[0]:
            raise ValueError('search needs a query: python -m ecab.catalog search "<query>" [overrides]')
        query, rest = rest[0], rest[1:]
    return command, query, rest


def config_line(cat) -> str:
    """The catalog config in the words of its overrides: `catalog=synthetic products=5000 seed=0`."""
    parts = [f"catalog={cat.source}"]
    if cat.products is not None:
        parts.append(f"products={cat.products}")
    parts.append(f"seed={cat.seed}")
    if cat.path:
        parts.append(f"path={cat.path}")
    if cat.shards != 1:
        parts.append(f"shards={cat.shards}")
    return " ".join(parts)


def _print_info(meta: dict, path: Path) -> None:
    print(f"fingerprint  {meta['fingerprint']}")
    print(f"path         {path}")
    print(f"products     {meta['counts']['products']}")
    print(f"reviews      {meta['counts']['reviews']}")
    print(f"shards       {meta['shards']}")
    print(f"embedding    {meta['embedding_model']} ({meta['embedding_dim']})")
    print(f"built        {meta['built_at']} in {meta['build_seconds']} s")
    print(f"disk         {_human_bytes(_disk_bytes(path))}")
    skipped = {k: v for k, v in meta.get("skipped", {}).items() if v}
    if skipped:
        print(f"skipped      {skipped}")


def info(cfg, overrides: list[str]) -> None:
    """Describe the configured catalog, or one error line when it is not built (info never builds)."""
    from ecab.catalog.build import catalog_dir
    from ecab.catalog.layout import META_FILE, read_meta
    from ecab.config import die

    path = catalog_dir(cfg.catalog, cfg.cache_dir)
    if not any(o.lstrip("+~").startswith("catalog") for o in overrides):
        # after `build catalog.products=300`, a bare `info` is not that catalog: say which one it describes
        print(f"the default config's catalog ({config_line(cfg.catalog)}); another one: its overrides "
              f"(python -m ecab.catalog info catalog.products=...); {LIST_HINT}\n")
    if not (path / META_FILE).exists():
        build = " ".join(["python -m ecab.catalog build", *overrides])
        die(f"catalog {path.name[:12]} ({config_line(cfg.catalog)}) is not built in {path.parent} (build it: "
            f"{build}); {LIST_HINT}")
    _print_info(read_meta(path), path)


def cached_catalogs(cache_dir: Path) -> list[dict]:
    """Every built catalog under `<cache_dir>/catalogs/`, newest first: fingerprint, source, products, bytes on
    disk, built at, path. A folder without a readable meta.json (a build under way or interrupted) is left out."""
    rows = []
    for meta_path in sorted((Path(cache_dir).expanduser() / "catalogs").glob("*/meta.json")):
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
        source = (meta.get("source") or {}).get("config") or {}
        rows.append({"fingerprint": meta.get("fingerprint", meta_path.parent.name),
                     "source": source.get("source", "?"),
                     "products": (meta.get("counts") or {}).get("products"),
                     "bytes": _disk_bytes(meta_path.parent), "built_at": meta.get("built_at") or "",
                     "path": meta_path.parent})
    return sorted(rows, key=lambda r: r["built_at"], reverse=True)


def print_list(cache_dir: Path) -> None:
    rows = cached_catalogs(cache_dir)
    where = Path(cache_dir).expanduser() / "catalogs"
    if not rows:
        print(f"no catalog built in {where} yet: python -m ecab.catalog build [overrides]")
        return
    print(f"{len(rows)} catalog(s) in {where}, newest first (* = the most recently built):")
    print(f"  {'fingerprint':<12}  {'source':<10} {'products':>9} {'size':>9}  {'built at':<20}  path")
    for i, row in enumerate(rows):
        products = row["products"] if row["products"] is not None else "?"
        print(f"{'*' if i == 0 else ' '} {row['fingerprint'][:12]:<12}  {row['source']:<10} {products:>9} "
              f"{_human_bytes(row['bytes']):>9}  {row['built_at']:<20}  {row['path']}")


def _print_search(catalog, query: str, mode: str, limit: int = 20) -> None:
    catalog.search(query, limit=1, mode=mode)   # warm-up: embedder load and index caches
    started = time.perf_counter()
    page = catalog.search(query, limit=limit, mode=mode)
    elapsed = (time.perf_counter() - started) * 1000
    print(f"catalog {catalog.fingerprint[:12]} ({catalog.count()} products, {catalog.path})")
    print(f"{mode} search {query!r}: {page.total} total, {elapsed:.1f} ms")
    products = {p.product_id: p for p in catalog.get_products([h.product_id for h in page.hits])}
    print(f"{'rank':>4} {'product_id':<12} {'price':>9} {'rating':>6}  title")
    for rank, hit in enumerate(page.hits, 1):
        product = products.get(hit.product_id)
        price = f"{product.price:.2f}" if product and product.price is not None else "-"
        rating = f"{product.average_rating:.1f}" if product and product.average_rating is not None else "-"
        print(f"{rank:>3}. {hit.product_id:<12} {price:>9} {rating:>6}  {hit.title[:90]}")


def main(argv: list[str] | None = None) -> int:
    from ecab.config import ConfigError, die, load_config, parse

    try:
        command, query, overrides = _parse(list(sys.argv[1:] if argv is None else argv))
        cfg = parse(load_config(overrides))
        if command == "list":
            print_list(Path(cfg.cache_dir))
            return 0
        if command == "info":
            info(cfg, overrides)
            return 0
        from ecab.catalog.build import catalog_dir, ensure_catalog

        mode = str(cfg.tools.search)
        if command == "build" and (catalog_dir(cfg.catalog, cfg.cache_dir) / "meta.json").exists():
            print("already built (cached by fingerprint)")
        catalog = ensure_catalog(cfg.catalog, Path(cfg.cache_dir), mode=mode, progress=True)
    except (ConfigError, ValueError, FileNotFoundError) as exc:
        die(str(exc))
    if command == "build":
        _print_info(catalog.meta, Path(catalog.path))
    else:
        _print_search(catalog, query, mode)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Catalog sources: where a catalog's products come from, one registry (`CATALOG_SOURCES`) named by
`catalog.source`.

A source is a function `fn(catalog_config) -> Iterator[CatalogBatch]` (catalog_config: the typed
`ecab.config.CatalogConfig`). ecab's own sources (synthetic, amazon, productdb, targets) are registered here
exactly as a user's are (`register_catalog_source`, also exported as `ecab.register_catalog_source`); a config
names a user's function without registering it by `source: python` and `target: package.module:function`, and
gives it its own keys in `catalog.options`. Adding a source touches one module plus its conf/catalog YAML.

The catalog fingerprint (ecab/catalog/build.py) covers the common keys (source, size, seed, shards), the
source's `inputs(cfg)` entries (its files' signatures, its own knobs) and its `version`; `catalog.target` and
`catalog.options` only when set, so ecab's own sources keep their fingerprints.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from ecab.catalog.base import CatalogBatch
from ecab.config import CatalogConfig, ConfigError, TargetsCatalogConfig
from ecab.core.plugins import Registry, import_target

PYTHON_SOURCE = "python"     # catalog.source=python: catalog.target names the user's function by import path

SourceFn = Callable[[CatalogConfig], Iterator[CatalogBatch]]


class CatalogConfigError(ConfigError):
    """A catalog config that cannot be built; the message names the key."""


@dataclass(frozen=True)
class CatalogSource:
    """One registered source: its batches, and what of its config and inputs the fingerprint covers."""

    name: str
    iterate: SourceFn
    inputs: Callable[[CatalogConfig], dict[str, Any]] | None = None   # fingerprint entries beyond the common ones
    version: Callable[[], str] | str = "1"                            # bump (or derive) when its output changes
    sized: bool = True            # catalog.products is the number of products built (the progress bar's total)

    def source_version(self) -> str:
        return self.version() if callable(self.version) else str(self.version)


CATALOG_SOURCES: Registry[CatalogSource] = Registry("catalog source", "catalog.source")


def register_catalog_source(name: str, fn: SourceFn | None = None, *, inputs: Callable[[CatalogConfig], dict] | None = None,
                            version: Callable[[], str] | str = "1", sized: bool = True, replace: bool = False) -> Any:
    """Register `fn(catalog_config) -> Iterator[CatalogBatch]` as catalog source `name` (then
    `catalog.source=<name>` builds from it). `inputs(cfg)`: extra fingerprint entries (e.g. the signature of the
    files it reads); `version`: a string or a function, part of the fingerprint. Usable as a decorator."""
    def add(f: SourceFn) -> SourceFn:
        CATALOG_SOURCES.register(name, CatalogSource(name, f, inputs, version, sized), replace=replace)
        return f

    return add if fn is None else add(fn)


def catalog_source(cfg: CatalogConfig) -> CatalogSource:
    """The registered source `catalog.source` names; one CatalogConfigError line naming the choices."""
    try:
        return CATALOG_SOURCES.get(cfg.source)
    except ConfigError as exc:
        raise CatalogConfigError(str(exc)) from None


# ------------------------------------------------------------------------------------------------ helpers

def require(cfg: CatalogConfig, key: str) -> Any:
    value = getattr(cfg, key, None)
    if value is None or value == "???":
        raise CatalogConfigError(f"catalog.{key} is required for catalog.source={cfg.source} "
                                 f"(set catalog.{key}=...)")
    return value


def existing(cfg: CatalogConfig, key: str) -> Path:
    path = Path(require(cfg, key)).expanduser()
    if not path.exists():
        raise CatalogConfigError(f"catalog.{key}: {path}: no such file or directory")
    return path


def files_signature(paths: list[Path]) -> list[list]:
    """Name, size and mtime of each input file: a changed file changes the fingerprint."""
    signature = []
    for path in sorted(paths):
        stat = path.stat()
        signature.append([path.name, stat.st_size, int(stat.st_mtime)])
    return signature


def first_products(batches: Iterator[CatalogBatch], limit: int | None) -> Iterator[CatalogBatch]:
    """Cap a real source at `limit` products (None: all), keeping the reviews of the kept ones."""
    if limit is None:
        yield from batches
        return
    remaining = int(limit)
    for batch in batches:
        if remaining <= 0:
            return
        if len(batch.products) > remaining:
            kept = batch.products[:remaining]
            ids = {p.product_id for p in kept}
            batch = CatalogBatch(kept, [r for r in batch.reviews if r.product_id in ids])
        remaining -= len(batch.products)
        yield batch


def _generator_digest(package: Path) -> str:
    """sha256 over every module of the generator package (its data tables included): each file's path inside
    the package, then its bytes, in path order."""
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py"), key=lambda p: p.relative_to(package).as_posix()):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def generator_version() -> str:
    """The synthetic generator's version and a digest of its source (synthetic, and targets' distractors): any
    change to any module of the generator builds the catalog anew, bumped or not."""
    from ecab.catalog import synthetic

    digest = _generator_digest(Path(synthetic.__file__).parent)
    return f"{getattr(synthetic, 'SYNTHETIC_VERSION', '0')}+{digest}"


# ----------------------------------------------------------------------------------------------- built-ins

def iter_synthetic_source(cfg: CatalogConfig) -> Iterator[CatalogBatch]:
    from ecab.catalog.synthetic import iter_synthetic

    return iter_synthetic(int(require(cfg, "products")), cfg.seed, cfg.batch_size)


def amazon_inputs(cfg: CatalogConfig) -> tuple[list[Path], list[Path]]:
    from ecab.catalog.amazon import resolve_inputs

    path = Path(require(cfg, "path")).expanduser()
    if not path.exists():
        from ecab.data import fetch_amazon_command
        raise CatalogConfigError(f"catalog.path: {path}: no such file or directory (the paper's four categories "
                                 f"are fetched there by: {fetch_amazon_command(path)})")
    meta, reviews = resolve_inputs(path)
    if cfg.reviews_path:
        extra = Path(cfg.reviews_path).expanduser()
        if not extra.exists():
            raise CatalogConfigError(f"catalog.reviews_path: {extra}: no such file or directory")
        reviews = sorted(extra.glob("*.jsonl")) if extra.is_dir() else [extra]
    return meta, reviews


def _review_knobs(cfg: CatalogConfig) -> dict[str, Any]:
    return {"max_reviews": cfg.max_reviews, "review_seed": cfg.review_seed}


def _amazon_fingerprint(cfg: CatalogConfig) -> dict[str, Any]:
    meta, reviews = amazon_inputs(cfg)
    return {"inputs": {"meta": files_signature(meta), "reviews": files_signature(reviews)}, **_review_knobs(cfg)}


def iter_amazon_source(cfg: CatalogConfig) -> Iterator[CatalogBatch]:
    from ecab.catalog.amazon import iter_amazon

    meta, reviews = amazon_inputs(cfg)
    batches = iter_amazon(meta, reviews, max_reviews=cfg.max_reviews, seed=cfg.review_seed,
                          batch_size=cfg.batch_size)
    return first_products(batches, cfg.products)


def iter_productdb_source(cfg: CatalogConfig) -> Iterator[CatalogBatch]:
    from ecab.catalog.product_db import iter_product_db

    return first_products(iter_product_db(existing(cfg, "path"), batch_size=cfg.batch_size), cfg.products)


def _productdb_fingerprint(cfg: CatalogConfig) -> dict[str, Any]:
    return {"inputs": files_signature([existing(cfg, "path")]), **_review_knobs(cfg)}


def siblings(cfg: CatalogConfig) -> tuple[int, int]:
    """catalog=targets: (listings per cube vertex failing one query rubric, the factorial over the hidden rubrics
    on (> 0) or off); conf/catalog/targets.yaml's values (ecab/catalog/siblings/cube.py)."""
    if not isinstance(cfg, TargetsCatalogConfig):
        raise CatalogConfigError("catalog.source=targets needs conf/catalog/targets.yaml's schema (schema_targets)")
    return cfg.siblings, cfg.query_only_siblings


def _targets_fingerprint(cfg: CatalogConfig) -> dict[str, Any]:
    from ecab.catalog.siblings.make import SIBLINGS_VERSION

    per_rubric, query_only = siblings(cfg)
    return {"inputs": files_signature([existing(cfg, "path")]),
            "siblings": {"per_rubric": per_rubric, "query_only": query_only, "version": SIBLINGS_VERSION}}


def iter_targets_source(cfg: CatalogConfig) -> Iterator[CatalogBatch]:
    from ecab.catalog.targets import iter_targets

    per_rubric, query_only = siblings(cfg)
    return iter_targets(existing(cfg, "path"), n_distractors=int(cfg.products or 0), seed=cfg.seed,
                        batch_size=cfg.batch_size, siblings=per_rubric, query_only_siblings=query_only, report=print)


def iter_python_source(cfg: CatalogConfig) -> Iterator[CatalogBatch]:
    """catalog.source=python: the user's function at catalog.target, called with the catalog config."""
    if not cfg.target:
        raise CatalogConfigError("catalog.source=python needs catalog.target: the import path of your source "
                                 "function (package.module:function)")
    fn = import_target(cfg.target, key="catalog.target")
    if not callable(fn):
        raise CatalogConfigError(f"catalog.target {cfg.target!r} is not callable")
    return iter(fn(cfg))


register_catalog_source("synthetic", iter_synthetic_source, version=generator_version)
register_catalog_source("amazon", iter_amazon_source, inputs=_amazon_fingerprint)
register_catalog_source("productdb", iter_productdb_source, inputs=_productdb_fingerprint)
register_catalog_source("targets", iter_targets_source, inputs=_targets_fingerprint, version=generator_version,
                        sized=False)
register_catalog_source(PYTHON_SOURCE, iter_python_source)

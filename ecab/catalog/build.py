"""Resolve a catalog config to a source, fingerprint it, and build it once into the cache.

`ensure_catalog(cfg.catalog, cache_dir)` is what every stage calls: the first call builds
`<cache_dir>/catalogs/<fingerprint>/`, later calls (any process) open that directory read-only.
The fingerprint covers everything that changes the catalog's content, so a changed config builds anew
and an unchanged one never rebuilds.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Iterator, Mapping

from ecab.catalog.base import CatalogBatch
from ecab.catalog.embedding_model import MODEL_NAME
from ecab.catalog.facade import Catalog
from ecab.catalog.layout import META_FILE
from ecab.catalog.writer import build_catalog
from ecab.config import ConfigError

SOURCES = ("synthetic", "amazon", "productdb", "targets")
BUILDERS = ("local", "ray")   # how a catalog is built; never what it holds (not in the fingerprint)
# Bump when the store layout or the derived columns change: old cached catalogs are then rebuilt.
STORE_VERSION = "2"   # 2: IVF_FLAT title vector index (was IVF_HNSW_SQ)
DEFAULT_BATCH_SIZE = 1000


class CatalogConfigError(ConfigError):
    """A catalog config that cannot be built; the message names the key."""


def _get(cfg: Any, key: str, default: Any = None) -> Any:
    if isinstance(cfg, Mapping):
        value = cfg.get(key, default)
    else:
        value = getattr(cfg, key, default)
    return default if value is None else value


def _plain(cfg: Any) -> dict[str, Any]:
    """The catalog config as a plain dict (OmegaConf or dict)."""
    try:
        from omegaconf import DictConfig, OmegaConf

        if isinstance(cfg, DictConfig):
            return OmegaConf.to_container(cfg, resolve=True)  # type: ignore[return-value]
    except ImportError:  # pragma: no cover - omegaconf is a dependency
        pass
    return dict(cfg)


def _require(cfg: Any, key: str) -> Any:
    value = _get(cfg, key)
    if value is None or value == "???":
        raise CatalogConfigError(f"catalog.{key} is required for catalog.source={_get(cfg, 'source')} "
                                 f"(set catalog.{key}=...)")
    return value


def _source(cfg: Any) -> str:
    source = _get(cfg, "source", "synthetic")
    if source not in SOURCES:
        raise CatalogConfigError(f"catalog.source: unknown source {source!r}; choose one of: {', '.join(SOURCES)}")
    return source


def _int_at_least(cfg: Any, key: str, default: int, minimum: int) -> int:
    value = _get(cfg, key, default)
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise CatalogConfigError(f"catalog.{key}: expected an integer, got {value!r}") from None
    if number < minimum:
        raise CatalogConfigError(f"catalog.{key}: must be >= {minimum}, got {number}")
    return number


def _positive_int(cfg: Any, key: str, default: int) -> int:
    return _int_at_least(cfg, key, default, 1)


def _files_signature(paths: list[Path]) -> list[list]:
    """Name, size and mtime of each input file: a changed file changes the fingerprint."""
    signature = []
    for path in sorted(paths):
        stat = path.stat()
        signature.append([path.name, stat.st_size, int(stat.st_mtime)])
    return signature


def _amazon_inputs(cfg: Any) -> tuple[list[Path], list[Path]]:
    from ecab.catalog.amazon import resolve_inputs

    path = Path(_require(cfg, "path")).expanduser()
    if not path.exists():
        from ecab.data import fetch_amazon_command
        raise CatalogConfigError(f"catalog.path: {path}: no such file or directory (the paper's four categories "
                                 f"are fetched there by: {fetch_amazon_command(path)})")
    meta, reviews = resolve_inputs(path)
    reviews_path = _get(cfg, "reviews_path")
    if reviews_path:
        extra = Path(reviews_path).expanduser()
        if not extra.exists():
            raise CatalogConfigError(f"catalog.reviews_path: {extra}: no such file or directory")
        reviews = sorted(extra.glob("*.jsonl")) if extra.is_dir() else [extra]
    return meta, reviews


def _generator_digest(package: Path) -> str:
    """sha256 over every module of the generator package (its data tables included): each file's path inside
    the package, then its bytes, in path order."""
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py"), key=lambda p: p.relative_to(package).as_posix()):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _source_version(source: str) -> str:
    """The generator's version and a digest of its source for sources that generate products (synthetic,
    and targets' distractors): any change to any module of the generator builds the catalog anew, bumped
    or not."""
    if source in ("synthetic", "targets"):
        from ecab.catalog import synthetic

        digest = _generator_digest(Path(synthetic.__file__).parent)
        return f"{getattr(synthetic, 'SYNTHETIC_VERSION', '0')}+{digest}"
    return "1"


def fingerprint_inputs(cfg: Any) -> dict[str, Any]:
    """Everything the fingerprint covers, as a JSON-able dict (also recorded in meta.json)."""
    source = _source(cfg)
    spec: dict[str, Any] = {
        "store_version": STORE_VERSION,
        "source": source,
        "source_version": _source_version(source),
        "embedding_model": MODEL_NAME,
        "shards": _positive_int(cfg, "shards", 1),
        "size": _get(cfg, "products"),
        "seed": _get(cfg, "seed", 0),
    }
    if source == "amazon":
        meta, reviews = _amazon_inputs(cfg)
        spec["inputs"] = {"meta": _files_signature(meta), "reviews": _files_signature(reviews)}
    elif source in ("productdb", "targets"):
        spec["inputs"] = _files_signature([_existing(cfg, "path")])
    if source in ("amazon", "productdb"):
        spec["max_reviews"] = _get(cfg, "max_reviews", 20)
        spec["review_seed"] = _get(cfg, "review_seed", 42)
    if source == "targets":
        from ecab.catalog.siblings.make import SIBLINGS_VERSION

        per_rubric, query_only = _siblings(cfg)
        spec["siblings"] = {"per_rubric": per_rubric, "query_only": query_only, "version": SIBLINGS_VERSION}
    return spec


def _siblings(cfg: Any) -> tuple[int, int]:
    """catalog=targets: (listings per cube vertex failing one query rubric, the factorial over the hidden rubrics
    on (> 0) or off); the defaults are conf/catalog/targets.yaml's (ecab/catalog/siblings/cube.py)."""
    return _int_at_least(cfg, "siblings", 1, 0), _int_at_least(cfg, "query_only_siblings", 1, 0)


def catalog_fingerprint(cfg: Any) -> str:
    """sha256 over source, size, seed, source version, embedding model, shards and the input files."""
    spec = json.dumps(fingerprint_inputs(cfg), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(spec.encode("utf-8")).hexdigest()


def _existing(cfg: Any, key: str) -> Path:
    path = Path(_require(cfg, key)).expanduser()
    if not path.exists():
        raise CatalogConfigError(f"catalog.{key}: {path}: no such file or directory")
    return path


def iter_source(cfg: Any) -> Iterator[CatalogBatch]:
    """The configured source's batches (sources are imported lazily: each pulls its own dependencies)."""
    source = _source(cfg)
    batch_size = _positive_int(cfg, "batch_size", DEFAULT_BATCH_SIZE)
    size = _get(cfg, "products")
    seed = int(_get(cfg, "seed", 0))
    if source == "synthetic":
        from ecab.catalog.synthetic import iter_synthetic

        return iter_synthetic(_positive_int(cfg, "products", 5000), seed, batch_size)
    if source == "amazon":
        from ecab.catalog.amazon import iter_amazon

        meta, reviews = _amazon_inputs(cfg)
        batches = iter_amazon(meta, reviews, max_reviews=int(_get(cfg, "max_reviews", 20)),
                              seed=int(_get(cfg, "review_seed", 42)), batch_size=batch_size)
        return _first_products(batches, size)
    if source == "productdb":
        from ecab.catalog.product_db import iter_product_db

        return _first_products(iter_product_db(_existing(cfg, "path"), batch_size=batch_size), size)
    from ecab.catalog.targets import iter_targets

    per_rubric, query_only = _siblings(cfg)
    return iter_targets(_existing(cfg, "path"), n_distractors=int(size or 0), seed=seed, batch_size=batch_size,
                        siblings=per_rubric, query_only_siblings=query_only, report=print)


def _first_products(batches: Iterator[CatalogBatch], limit: Any) -> Iterator[CatalogBatch]:
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


def _expected_products(cfg: Any) -> int | None:
    """For the progress bar only."""
    size = _get(cfg, "products")
    if size is None:
        return None
    return int(size) if _source(cfg) != "targets" else None


def _builder(cfg: Any) -> str:
    builder = _get(cfg, "builder", "local")
    if builder not in BUILDERS:
        raise CatalogConfigError(f"catalog.builder: unknown builder {builder!r}; choose one of: {', '.join(BUILDERS)}")
    return builder


def ray_build_options(cfg: Any):
    """catalog.builder=ray's settings: catalog.ray_address, embed_workers, embed_cpus, embed_device."""
    from ecab.catalog.ray_build import DEVICES, RayBuildOptions

    device = _get(cfg, "embed_device", "cpu")
    if device not in DEVICES:
        raise CatalogConfigError(f"catalog.embed_device: unknown device {device!r}; choose one of: {', '.join(DEVICES)}")
    cpus = _get(cfg, "embed_cpus", 1.0)
    if isinstance(cpus, bool) or not isinstance(cpus, (int, float)) or cpus < 0:
        raise CatalogConfigError(f"catalog.embed_cpus: expected a number >= 0, got {cpus!r}")
    address = _get(cfg, "ray_address")
    return RayBuildOptions(address=str(address) if address else None, embed_workers=_positive_int(cfg, "embed_workers", 2),
                           embed_cpus=float(cpus), embed_device=device)


def catalog_dir(cfg: Any, cache_dir: str | os.PathLike) -> Path:
    return Path(cache_dir).expanduser() / "catalogs" / catalog_fingerprint(cfg)


def ensure_catalog(cfg: Any, cache_dir: str | os.PathLike, *, mode: str = "hybrid", embedder=None,
                   progress: bool = True) -> Catalog:
    """Open the catalog for `cfg` (the `catalog` config group), building it first if it is not cached."""
    fingerprint = catalog_fingerprint(cfg)
    out = Path(cache_dir).expanduser() / "catalogs" / fingerprint
    # The process's ecab cache, also for the exported query encoder (ecab.catalog.onnx_encoder); as an
    # environment variable it reaches the sandbox and local Ray workers too.
    os.environ["ECAB_CACHE_DIR"] = str(Path(cache_dir).expanduser())
    builder = _builder(cfg)
    if not (out / META_FILE).exists() and builder == "ray":
        from ecab.catalog.ray_build import build_catalog_on_ray

        plain = _plain(cfg)
        build_catalog_on_ray(functools.partial(iter_source, plain), out, shards=_positive_int(cfg, "shards", 1),
                             fingerprint=fingerprint, options=ray_build_options(cfg), progress=progress,
                             total_products=_expected_products(cfg),
                             source={"config": plain, "fingerprint_inputs": fingerprint_inputs(cfg)})
    if not (out / META_FILE).exists():
        if embedder is None:
            from ecab.catalog.embed import get_embedder

            embedder = get_embedder()
        try:
            build_catalog(iter_source(cfg), out, shards=_positive_int(cfg, "shards", 1), embedder=embedder,
                          fingerprint=fingerprint, progress=progress, total_products=_expected_products(cfg),
                          source={"config": _plain(cfg), "fingerprint_inputs": fingerprint_inputs(cfg)})
        except (FileExistsError, OSError):
            # Another process finished the same build first: its catalog is identical, use it.
            if not (out / META_FILE).exists():
                raise
    return Catalog.open(out, mode=mode, embedder=embedder)

"""Resolve a catalog config to a source, fingerprint it, and build it once into the cache.

`ensure_catalog(cfg.catalog, cache_dir)` is what every stage calls: the first call builds
`<cache_dir>/catalogs/<fingerprint>/`, later calls (any process) open that directory read-only.
The fingerprint covers everything that changes the catalog's content, so a changed config builds anew
and an unchanged one never rebuilds. Sources are a registry (ecab/catalog/sources.py).
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Iterator, Mapping, Union

from ecab.catalog.base import CatalogBatch
from ecab.catalog.embedding_model import MODEL_NAME
from ecab.catalog.facade import Catalog
from ecab.catalog.first_run import catalog_part, encoder_part, first_run_notice
from ecab.catalog.layout import META_FILE
from ecab.catalog.onnx_encoder import encoder_exported
from ecab.catalog.sources import CatalogConfigError, catalog_source, register_catalog_source
from ecab.catalog.writer import build_catalog
from ecab.config import CatalogConfig, ConfigError, group_options, section
from ecab.core.worker_start import refuse_in_starting_worker

__all__ = ["CatalogConfigError", "register_catalog_source", "catalog_config", "catalog_dir", "catalog_fingerprint", "ensure_catalog",
           "fingerprint_inputs", "iter_source", "ray_build_options"]

# The typed section, or a mapping of it (a test's, a script's: typed by catalog_config, the values it leaves out
# from conf/catalog/<source>.yaml).
CatalogLike = Union[CatalogConfig, Mapping[str, Any]]

BUILDERS = ("local", "ray")   # how a catalog is built; never what it holds (not in the fingerprint)
# Bump when the store layout or the derived columns change: old cached catalogs are then rebuilt.
STORE_VERSION = "2"   # 2: IVF_FLAT title vector index (was IVF_HNSW_SQ)


def catalog_config(cfg: CatalogLike) -> CatalogConfig:
    """The typed catalog section. A CatalogConfig is returned as it is; a mapping (a test's, a script's) gets the
    values it leaves out from conf/catalog/<its source>.yaml (synthetic's for a source without a YAML)."""
    if isinstance(cfg, CatalogConfig):
        return cfg
    source = cfg.get("source") if hasattr(cfg, "get") else None
    option = source if isinstance(source, str) and source in group_options("catalog") else "synthetic"
    try:
        typed = section(CatalogConfig, cfg, defaults=[f"catalog={option}"])
    except ConfigError as exc:
        raise CatalogConfigError(str(exc)) from None
    catalog_source(typed)   # an unknown source is one line naming the choices
    return typed


def _record(cfg: CatalogConfig) -> dict[str, Any]:
    """The catalog config as recorded in meta.json (target and options only when set)."""
    record = dataclasses.asdict(cfg)
    for key, unset in (("target", None), ("options", {})):
        if record.get(key) == unset:
            record.pop(key, None)
    return record


def fingerprint_inputs(cfg: CatalogLike) -> dict[str, Any]:
    """Everything the fingerprint covers, as a JSON-able dict (also recorded in meta.json)."""
    cfg = catalog_config(cfg)
    source = catalog_source(cfg)
    spec: dict[str, Any] = {
        "store_version": STORE_VERSION,
        "source": cfg.source,
        "source_version": source.source_version(),
        "embedding_model": MODEL_NAME,
        "shards": cfg.shards,
        "size": cfg.products,
        "seed": cfg.seed,
    }
    if source.inputs is not None:
        spec.update(source.inputs(cfg))
    if cfg.target:                  # only when set: ecab's own sources keep their fingerprints
        spec["target"] = cfg.target
    if cfg.options:
        spec["options"] = cfg.options
    return spec


def catalog_fingerprint(cfg: CatalogLike) -> str:
    """sha256 over source, size, seed, source version, embedding model, shards and the input files."""
    spec = json.dumps(fingerprint_inputs(cfg), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(spec.encode("utf-8")).hexdigest()


def iter_source(cfg: CatalogLike) -> Iterator[CatalogBatch]:
    """The configured source's batches (sources are imported lazily: each pulls its own dependencies)."""
    cfg = catalog_config(cfg)
    return catalog_source(cfg).iterate(cfg)


def _expected_products(cfg: CatalogConfig) -> int | None:
    """For the progress bar only."""
    if cfg.products is None or not catalog_source(cfg).sized:
        return None
    return int(cfg.products)


def ray_build_options(cfg: CatalogLike):
    """catalog.builder=ray's settings: catalog.ray_address, embed_workers, embed_cpus, embed_device."""
    from ecab.catalog.ray_build import DEVICES, RayBuildOptions

    cfg = catalog_config(cfg)
    if cfg.embed_device not in DEVICES:
        raise CatalogConfigError(f"catalog.embed_device: unknown device {cfg.embed_device!r}; "
                                 f"choose one of: {', '.join(DEVICES)}")
    return RayBuildOptions(address=str(cfg.ray_address) if cfg.ray_address else None,
                           embed_workers=cfg.embed_workers, embed_cpus=float(cfg.embed_cpus),
                           embed_device=cfg.embed_device)


def catalog_dir(cfg: CatalogLike, cache_dir: str | os.PathLike) -> Path:
    return Path(cache_dir).expanduser() / "catalogs" / catalog_fingerprint(cfg)


def missing_parts(cfg: CatalogConfig, out: Path, embedder) -> list[str]:
    """What this ensure_catalog will build, for the first-run notice: the catalog, and the ONNX query encoder
    when no embedder is passed in and this cache lacks its export (searches export it on first use)."""
    parts = [] if (out / META_FILE).exists() else [catalog_part(cfg.source, _expected_products(cfg))]
    if embedder is None and not encoder_exported():
        parts.append(encoder_part())
    return parts


def ensure_catalog(cfg: CatalogLike, cache_dir: str | os.PathLike, *, mode: str = "hybrid", embedder=None,
                   progress: bool = True) -> Catalog:
    """Open the catalog for `cfg` (the typed `catalog` section; a mapping is typed first), building it first if
    it is not cached."""
    refuse_in_starting_worker("building or opening the catalog")   # else: waits on its parent's lock
    cfg = catalog_config(cfg)
    fingerprint = catalog_fingerprint(cfg)
    out = Path(cache_dir).expanduser() / "catalogs" / fingerprint
    # The process's ecab cache, also for the exported query encoder (ecab.catalog.onnx_encoder); as an
    # environment variable it reaches the sandbox and local Ray workers too.
    os.environ["ECAB_CACHE_DIR"] = str(Path(cache_dir).expanduser())
    source = {"config": _record(cfg), "fingerprint_inputs": fingerprint_inputs(cfg)}
    if not (out / META_FILE).exists() or (embedder is None and not encoder_exported()):
        first_run_notice(missing_parts(cfg, out, embedder), out.parent.parent)
    if not (out / META_FILE).exists() and cfg.builder == "ray":
        from ecab.catalog.ray_build import build_catalog_on_ray

        build_catalog_on_ray(functools.partial(iter_source, cfg), out, shards=cfg.shards,
                             fingerprint=fingerprint, options=ray_build_options(cfg), progress=progress,
                             total_products=_expected_products(cfg), source=source)
    if not (out / META_FILE).exists():
        if embedder is None:
            from ecab.catalog.embed import get_embedder

            embedder = get_embedder()
        try:
            build_catalog(iter_source(cfg), out, shards=cfg.shards, embedder=embedder,
                          fingerprint=fingerprint, progress=progress, total_products=_expected_products(cfg),
                          source=source)
        except (FileExistsError, OSError):
            # Another process finished the same build first: its catalog is identical, use it.
            if not (out / META_FILE).exists():
                raise
    return Catalog.open(out, mode=mode, embedder=embedder)

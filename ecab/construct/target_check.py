"""Refuse a benchmark file whose targets the catalog does not hold (issue 29).

A task whose target is not in the catalog can never be answered exactly, and every other product is judged
against rubrics written for another catalog: the run would finish with ~0% accuracy that measures nothing. So
`benchmark=file` checks, before any episode runs (before the run folder is created), that every task's target
is in the catalog, and names the catalog that holds them (`catalog=targets` builds one from the file).
`benchmark.allow_missing_targets=true` runs anyway.
"""
from __future__ import annotations

from typing import Sequence

from ecab.config import ConfigError, EcabConfig
from ecab.schema import Task

LOOKUP_BATCH = 1000   # ids per bulk lookup (one query per shard each)


def missing_targets(tasks: Sequence[Task], catalog) -> list[Task]:
    """The tasks whose target product id the catalog does not hold (a task without one counts as missing)."""
    ids = sorted({t.target_product.product_id for t in tasks if t.target_product.product_id})
    found: set[str] = set()
    for start in range(0, len(ids), LOOKUP_BATCH):
        found.update(p.product_id for p in catalog.get_products(ids[start:start + LOOKUP_BATCH]))
    return [t for t in tasks if t.target_product.product_id not in found]


def check_targets(cfg: EcabConfig, tasks: Sequence[Task], catalog) -> None:
    """ConfigError (one line) when a benchmark file's targets are missing from the catalog, unless
    benchmark.allow_missing_targets."""
    if cfg.benchmark.source != "file" or not tasks:
        return
    missing = missing_targets(tasks, catalog)
    if not missing:
        return
    where = f"catalog={cfg.catalog.source} ({catalog.count()} products, {str(catalog.fingerprint)[:12]})"
    if cfg.benchmark.allow_missing_targets:
        # run anyway, as asked, but never silently: those tasks can only be right by satisfying every rubric
        print(f"warning: {len(missing)} of {len(tasks)} tasks' targets are missing from {where}; running anyway "
              "(benchmark.allow_missing_targets=true): those tasks have no exact match")
        return
    fix = ("catalog=targets builds a catalog from the file's targets" if cfg.catalog.source != "targets" else
           f"catalog=targets builds its catalog from catalog.path={cfg.catalog.path}, which is not this file")
    raise ConfigError(
        f"benchmark.path={cfg.benchmark.path}: {len(missing)} of {len(tasks)} tasks' targets are missing from "
        f"{where} (first: {missing[0].id} -> {missing[0].target_product.product_id or 'no target id'}); "
        f"use catalog=targets ({fix}), or benchmark.allow_missing_targets=true to run anyway")

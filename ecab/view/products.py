"""The recommended products' records, to show beside each task's target.

A trajectory keeps only the recommended product's id. Its record comes from the run's catalog when that is
still on this machine (config.yaml's cache_dir and the manifest's catalog fingerprint name it, or
`--catalog` does), else from what the agent itself saw (a get_product_details result naming that id in the
episode's tool results), else it is shown as "not available".
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from ecab.schema import Product, Trajectory

PRODUCT_KEYS = ("product_id", "title", "main_category", "store", "average_rating", "rating_number", "price",
                "features", "description", "details")


def display_value(value: Any) -> Any:
    """A detail value as the comparison table shows it in one cell: a nested mapping (Amazon's "Best Sellers
    Rank": {category: rank}) as "key: value; ..." and a list of them item by item, so the page never prints
    a JavaScript object as "[object Object]". Strings, numbers and flat lists stay as they are."""
    if isinstance(value, dict):
        return "; ".join(f"{k}: {_cell(v)}" for k, v in value.items())
    if isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        return [_cell(v) for v in value]
    return value


def _cell(value: Any) -> str:
    shown = display_value(value)
    return ", ".join(map(str, shown)) if isinstance(shown, list) else str(shown)


def product_view(product: Product | dict[str, Any]) -> dict[str, Any]:
    data = product.to_dict() if isinstance(product, Product) else product
    view = {k: data.get(k) for k in PRODUCT_KEYS if data.get(k) not in (None, "", [], {})}
    if isinstance(view.get("details"), dict):
        view["details"] = {k: display_value(v) for k, v in view["details"].items()}
    return view


def catalog_path(run_config: dict[str, Any], manifest: dict[str, Any]) -> Path | None:
    """The run's built catalog directory, when it is still in the cache the run used."""
    fingerprint, cache_dir = manifest.get("catalog_fingerprint"), run_config.get("cache_dir")
    if not isinstance(fingerprint, str) or not isinstance(cache_dir, str):
        return None
    path = Path(cache_dir).expanduser() / "catalogs" / fingerprint
    return path if (path / "meta.json").is_file() else None


def from_catalog(path: Path | None, product_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """{id: product view} for the ids the catalog at `path` holds; {} when there is no catalog to open."""
    ids = sorted({pid for pid in product_ids if pid})
    if path is None or not ids:
        return {}
    from ecab.catalog.facade import Catalog   # opened read-only; lookups need no embedder
    catalog = Catalog.open(path)
    return {p.product_id: product_view(p) for p in catalog.get_products(ids)}


def from_tool_results(traj: Trajectory, product_id: str) -> dict[str, Any] | None:
    """The record the agent was shown for `product_id` (a get_product_details result), if any."""
    for message in reversed(traj.trajectory or []):
        if message.get("role") != "tool" or product_id not in str(message.get("content") or ""):
            continue
        try:
            content = json.loads(message["content"])
        except (TypeError, ValueError):
            continue
        record = content.get("product") if isinstance(content, dict) else None
        record = record if isinstance(record, dict) else content
        if isinstance(record, dict) and record.get("product_id") == product_id and record.get("title"):
            return product_view(record)
    return None

"""`python -m ecab.construct [overrides]`: build a benchmark from the configured catalog.

    python -m ecab.construct construct.n_per_intent=5 construct.intents=[product_search,review_driven]
    python -m ecab.construct construct.out=out/bench construct.workers=1

Writes benchmark.jsonl, rejected.jsonl, rejections.md and construct.json to `construct.out` (default: the
cached default-benchmark folder under `cache_dir/benchmarks/<fingerprint>`), prints the rejection table
and the throughput.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from ecab.config import ConfigError, die, load_config


def open_catalog(cfg, progress: bool = True):
    """The configured catalog (the `catalog` group), built into the cache on first use, opened read-only."""
    from ecab.catalog.build import ensure_catalog

    return ensure_catalog(cfg.catalog, Path(str(cfg.cache_dir)), progress=progress)


def main(argv: list[str] | None = None) -> int:
    from ecab.construct.pipeline import REPORT_FILE, Settings, construct, ensure_benchmark, rejection_table, throughput_line

    overrides = list(sys.argv[1:] if argv is None else argv)
    try:
        cfg = load_config(overrides)
    except ConfigError as exc:
        die(str(exc))
    progress = bool(cfg.get("run", {}).get("progress", True))
    try:   # construct settings first (an LLM verbalizer's model and API key), before any catalog work
        Settings.from_cfg(cfg)
    except (ConfigError, ValueError) as exc:
        die(str(exc))
    catalog = open_catalog(cfg, progress)
    if cfg.construct.get("out"):
        result = construct(cfg, catalog, progress=progress)
        print(rejection_table(result))
        print(throughput_line(result.timing()) + f" -> {result.out_dir}")
        return 0
    path = ensure_benchmark(cfg, catalog, Path(cfg.cache_dir), progress=progress)
    table = path.parent / "rejections.md"
    if table.exists():
        print(table.read_text(encoding="utf-8"))
    report = path.parent / REPORT_FILE
    timing = json.loads(report.read_text(encoding="utf-8")).get("timing") if report.exists() else None
    if timing:
        print("built with " + throughput_line(timing))
    print(f"benchmark: {path}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (ValueError, FileNotFoundError) as exc:
        die(str(exc))

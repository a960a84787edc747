"""The benchmark folder construction writes (docs/architecture.md §4): its files and their writers.

- benchmark.jsonl: the accepted tasks (status ok, the released 18-key format);
- rejected.jsonl: the rejected candidates' records (status final_validation_failed or a runtime error, with
  the validator's issues);
- rejections.md: the reason table (like the paper's Table 12, reasons.py), the skips, per-intent rates and
  the validity audit's section;
- construct.json: counts per intent, the skipped candidates, the audit's summary and the timing (the only
  part of the folder that differs between identical builds);
- audit.jsonl: the validity audit's per-task rows (validity.task_set_audit reads them back for a run);
- fingerprint.json: what a cached build was built from (benchmark_cache.py).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ecab.construct.reasons import REJECTION_REASONS, RUNTIME_REASONS, SKIP_REASONS
from ecab.schema import write_jsonl

if TYPE_CHECKING:   # annotations only: readers of the folder (validity.py) need its names, not the builder
    from ecab.construct.result import ConstructResult

BENCHMARK_FILE = "benchmark.jsonl"
REJECTED_FILE = "rejected.jsonl"
REJECTIONS_TABLE = "rejections.md"
REPORT_FILE = "construct.json"
AUDIT_FILE = "audit.jsonl"
FINGERPRINT_FILE = "fingerprint.json"


def acceptance_rate(counts: dict[str, int]) -> float:
    """Accepted over generated candidates (those that reached validation), as the paper's 662/921."""
    generated = counts["accepted"] + counts["rejected"]
    return counts["accepted"] / generated if generated else 0.0


def rejection_table(result: ConstructResult) -> str:
    """Markdown: rejection reasons with counts (paper Table 12), pre-validation skips, per-intent rates."""
    total_rej = sum(result.rejection_counts.values())
    generated = len(result.tasks) + total_rej
    descriptions = {**RUNTIME_REASONS, **REJECTION_REASONS}
    lines = ["# Construction rejections", "",
             f"{total_rej} of {generated} generated candidates rejected by validation "
             f"({len(result.tasks)} accepted).", "",
             "| reason | description | count | share |", "|---|---|---:|---:|"]
    for reason, count in sorted(result.rejection_counts.items(), key=lambda kv: (-kv[1], kv[0])):
        share = count / total_rej if total_rej else 0.0
        lines.append(f"| {reason} | {descriptions.get(reason, '')} | {count} | {share:.1%} |")
    if not result.rejection_counts:
        lines.append("| (none) | | 0 | |")
    lines += ["", "## Skipped before validation (no draft could be built)", "",
              "| reason | description | count |", "|---|---|---:|"]
    for reason, count in sorted(result.skip_counts.items(), key=lambda kv: (-kv[1], kv[0])):
        lines.append(f"| {reason} | {SKIP_REASONS.get(reason, '')} | {count} |")
    if not result.skip_counts:
        lines.append("| (none) | | 0 |")
    lines += ["", "## By intent", "",
              "| intent | pool | candidates | accepted | rejected | skipped | acceptance |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    for intent, c in result.per_intent.items():
        lines.append(f"| {intent} | {c['pool']} | {c['candidates']} | {c['accepted']} | {c['rejected']} | "
                     f"{c['skipped']} | {acceptance_rate(c):.1%} |")
    if result.audit is not None:
        lines += ["", result.audit.section()]
    return "\n".join(lines) + "\n"


def write_outputs(result: ConstructResult, out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    write_jsonl(out_dir / BENCHMARK_FILE, result.tasks)
    write_jsonl(out_dir / REJECTED_FILE, result.rejected)
    (out_dir / REJECTIONS_TABLE).write_text(rejection_table(result), encoding="utf-8")
    # timing is the only part of the folder that differs between identical builds
    report = {"timing": result.timing(), "per_intent": result.per_intent, "rejections": dict(sorted(result.rejection_counts.items())),
              "skips": dict(sorted(result.skip_counts.items())), "skipped": result.skipped}
    if result.audit is not None:
        report["timing"]["audit"] = result.audit.timing()
        report["audit"] = result.audit.summary()
        result.audit.write_rows(out_dir / AUDIT_FILE)
    (out_dir / REPORT_FILE).write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    result.out_dir = out_dir


def write_fingerprint(out_dir: Path, record: dict[str, Any]) -> None:
    (out_dir / FINGERPRINT_FILE).write_text(json.dumps(record, indent=2) + "\n")

"""What a construction run produced: accepted tasks, rejected and skipped candidates, counts and timing."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ecab.construct.schedule import IntentProgress
from ecab.schema import Task


@dataclass
class ConstructResult:
    tasks: list[Task]
    rejected: list[dict]          # sample records with status final_validation_failed / *_runtime_error
    skipped: list[dict]
    per_intent: dict[str, dict[str, int]]
    rejection_counts: Counter
    skip_counts: Counter
    elapsed_s: float
    out_dir: Path | None = None
    workers: int = 1
    built_by: dict[str, int] = field(default_factory=dict)   # candidates built by the parent / the workers
    audit: Any = None             # validity.AuditReport of the accepted tasks (issue 15)

    @property
    def tasks_per_second(self) -> float:
        return len(self.tasks) / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def timing(self) -> dict[str, Any]:
        return {"tasks": len(self.tasks), "elapsed_s": round(self.elapsed_s, 3),
                "tasks_per_second": round(self.tasks_per_second, 3), "workers": self.workers,
                "built_by": dict(sorted(self.built_by.items()))}


def throughput_line(timing: dict[str, Any]) -> str:
    """'200 tasks in 7.9s (25.3 tasks/s, workers=2: parent built 130 candidates, workers 81)'."""
    built = timing.get("built_by") or {}
    split = f": parent built {built.get('parent', 0)} candidates, workers {built.get('workers', 0)}" \
        if timing.get("workers", 1) > 1 else ""
    return (f"{timing['tasks']} tasks in {timing['elapsed_s']:.1f}s ({timing['tasks_per_second']:.2f} tasks/s, "
            f"workers={timing.get('workers', 1)}{split})")


def collect(progress: dict[str, IntentProgress], elapsed: float) -> ConstructResult:
    """The result of every intent's decided candidates (IntentProgress.decided), intent by intent."""
    tasks, rejected, skipped = [], [], []
    per_intent: dict[str, dict[str, int]] = {}
    rejection_counts, skip_counts = Counter(), Counter()
    for intent, p in progress.items():
        decided = p.decided()
        counts = Counter(r["status"] for r in decided)
        per_intent[intent] = {"pool": len(p.candidates), "candidates": len(decided), "accepted": counts["ok"],
                              "rejected": counts["rejected"], "skipped": counts["skipped"]}
        for r in decided:
            if r["status"] == "ok":
                tasks.append(Task.from_dict(r["record"]))
            elif r["status"] == "rejected":
                rejected.append(r["record"])   # plain records: a runtime-error draft may be incomplete
                rejection_counts[r["reason"]] += 1
            else:
                skipped.append({k: r[k] for k in ("intent", "index", "product_id", "reason", "detail")})
                skip_counts[r["reason"]] += 1
    return ConstructResult(tasks, rejected, skipped, per_intent, rejection_counts, skip_counts, elapsed)

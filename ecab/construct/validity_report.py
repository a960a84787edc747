"""The validity audit's report: a task set's load-bearing shares by intent and overall (issue 15).

`aggregate` turns per-task rows (load_bearing.TaskAudit) into a summary: by intent and overall, the products
matching the query / query+persona / all rubrics, the load-bearing share per source and per rubric type, the
share of tasks the query alone singles out, the structural picks' accuracy and the adversaries' figures
(adversary/report.py: the blind dual-path floor, every form cue; issue 27); `headline_of` and `markdown_of`
print it. `AuditReport` is what validity.audit_tasks returns.
"""
from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from ecab.construct.adversary.report import summarize as adversary_summary
from ecab.construct.draft import SOURCES
from ecab.construct.load_bearing import HIDDEN_SOURCES, TaskAudit

REVIEWS_LEFT_OUT = "left out (include_reviews=False)"


# ---------------------------------------------------------------------------------------------------------
# The report
# ---------------------------------------------------------------------------------------------------------

def _share(values: Sequence[bool]) -> float | None:
    return sum(values) / len(values) if values else None


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def _group(rows: Sequence[TaskAudit]) -> dict[str, Any]:
    rubrics = [r for t in rows for r in t.rubrics]
    by_source = {}
    for source in SOURCES:
        decided = [r.load_bearing for r in rubrics if r.info_source == source and r.load_bearing is not None]
        by_source[source] = {"rubrics": len(decided), "load_bearing": sum(decided), "share": _share(decided)}
    by_type = {}
    for kind in sorted({r.type for r in rubrics}):
        decided = [r.load_bearing for r in rubrics if r.type == kind and r.load_bearing is not None]
        by_type[kind] = {"rubrics": len(decided), "load_bearing": sum(decided), "share": _share(decided)}
    hidden = [r.load_bearing for r in rubrics if r.info_source in HIDDEN_SOURCES and r.load_bearing is not None]
    med = (lambda xs: statistics.median(xs) if xs else None)  # noqa: E731
    return {
        "tasks": len(rows),
        "candidates_median": med([t.candidates for t in rows]),
        "match_query_median": med([t.match_query for t in rows]),
        "match_query_persona_median": med([t.match_query_persona for t in rows]),
        "match_all_median": med([t.match_all for t in rows]),
        "match_query_mean": (sum(t.match_query for t in rows) / len(rows)) if rows else None,
        "query_singles_out": _share([t.query_singles_out for t in rows]),
        "unique": _share([t.match_all <= (1 if t.target_in_catalog else 0) for t in rows]),
        "target_satisfies_all": _share([t.target_satisfies_all for t in rows]),
        "load_bearing": by_source,
        "load_bearing_hidden": _share(hidden),
        "load_bearing_by_type": by_type,
        "rubrics_not_audited": sum(1 for r in rubrics if r.load_bearing is None),
        "structural_picks": {"query_match": _mean([t.pick_query_match for t in rows]),
                             "typical": _mean([t.pick_typical for t in rows]),
                             "central": _mean([t.pick_central for t in rows])},
        "adversary": adversary_summary([t.adversary for t in rows]),
    }


def aggregate(rows: Sequence[TaskAudit], *, include_reviews: bool = True, reviews_note: str | None = None
              ) -> dict[str, Any]:
    """Overall and per-intent figures from per-task rows."""
    intents: dict[str, list[TaskAudit]] = {}
    for t in rows:
        intents.setdefault(t.intent, []).append(t)
    return {"overall": _group(rows), "by_intent": {k: _group(v) for k, v in intents.items()},
            "review_opinion": "included" if include_reviews else (reviews_note or REVIEWS_LEFT_OUT)}


def pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def num(x: float | None) -> str:
    if x is None:
        return "n/a"
    return str(int(x)) if float(x).is_integer() else f"{x:.1f}"


def headline_of(summary: dict[str, Any]) -> str:
    """One line: how hard the world is, from a summary's overall group."""
    o = summary["overall"]
    lb = o["load_bearing"]
    return (f"{o['tasks']} tasks: the query alone singles out the target in {pct(o['query_singles_out'])}; "
            f"load-bearing rubrics: query {pct(lb['query']['share'])}, persona {pct(lb['persona']['share'])}, "
            f"clarification {pct(lb['clarification']['share'])}; median products matching the query "
            f"{num(o['match_query_median'])} (review_opinion {summary.get('review_opinion', 'included')})"
            + _picks_phrase(o) + _adversary_phrase(o))


def _picks_phrase(group: dict[str, Any]) -> str:
    picks = group.get("structural_picks") or {}
    if picks.get("typical") is None:
        return ""
    return (f"; a script picking among the query's matches scores {pct(picks['query_match'])} at random, "
            f"{pct(picks['typical'])} on the most typical, {pct(picks['central'])} on the most central")


def _adversary_phrase(group: dict[str, Any]) -> str:
    adv = group.get("adversary")
    if not adv:
        return ""
    best = adv.get("best_cue")
    cue = (f"; the best form cue ({best['cue']}) {pct(best['accuracy'])}"
           + (f", {best['x_chance']:.2f}x chance" if best.get("x_chance") is not None else "")) if best else ""
    return (f"; counted by dual path, a blind pick among them is correct in {pct(adv['floor'])} "
            f"({adv['tasks_multi_correct']} tasks with several correct products){cue}")


def markdown_of(summary: dict[str, Any], baselines: dict[str, dict[str, Any]] | None = None) -> str:
    """The audit table: by intent and overall; with baselines, their accuracy per intent."""
    baselines = baselines or {}
    names = list(baselines)
    head = ["intent", "tasks", "products", "match query", "match q+persona", "match all", "query singles out",
            "LB query", "LB persona", "LB clarification", "pick random", "pick typical", "pick central",
            "floor (dual path)", "best cue", *[f"{n} acc." for n in names]]
    lines = ["| " + " | ".join(head) + " |",
             "|" + "|".join("---" if i == 0 else "---:" for i in range(len(head))) + "|"]
    groups = [*summary["by_intent"].items(), ("**overall**", summary["overall"])]
    for name, g in groups:
        key = "overall" if name == "**overall**" else name
        acc = [pct(((baselines[n].get("by_intent") or {}).get(key) if key != "overall"
                    else baselines[n].get("overall"))) for n in names]
        lb = g["load_bearing"]
        lines.append("| " + " | ".join(str(c) for c in [
            name, g["tasks"], num(g["candidates_median"]), num(g["match_query_median"]),
            num(g["match_query_persona_median"]), num(g["match_all_median"]), pct(g["query_singles_out"]),
            pct(lb["query"]["share"]),
            pct(lb["persona"]["share"]), pct(lb["clarification"]["share"]),
            *[pct((g.get("structural_picks") or {}).get(k)) for k in ("query_match", "typical", "central")],
            pct((g.get("adversary") or {}).get("floor")), _best_cue_cell(g), *acc]) + " |")
    o = summary["overall"]
    lines += ["", "Load-bearing by rubric type (overall):", "",
              "| rubric type | rubrics | load-bearing | share |", "|---|---:|---:|---:|"]
    lines += [f"| {k} | {v['rubrics']} | {v['load_bearing']} | {pct(v['share'])} |"
              for k, v in o["load_bearing_by_type"].items()]
    lines += ["", f"products / match columns: medians over the tasks (products of the target's main category). "
                  f"Target satisfies every audited rubric in {pct(o['target_satisfies_all'])} of tasks; "
                  f"only the target satisfies every rubric in {pct(o['unique'])}. "
                  f"review_opinion: {summary.get('review_opinion', 'included')}"
              + (f"; {o['rubrics_not_audited']} rubrics not audited" if o["rubrics_not_audited"] else "") + ". "
              "pick columns: expected accuracy of a script that picks among the products matching the query's "
              "rubrics at random, the most typical one or the most central one, counting the exact target only "
              "(module docstring); floor (dual path): a blind pick among them counting any product satisfying "
              "every audited rubric, best cue: the best form cue's accuracy (adversary/, issue 27)."]
    return "\n".join(lines) + "\n"


def _best_cue_cell(group: dict[str, Any]) -> str:
    best = (group.get("adversary") or {}).get("best_cue")
    return f"{pct(best['accuracy'])} {best['cue']}" if best else "n/a"


@dataclass
class AuditReport:
    tasks: list[TaskAudit]
    include_reviews: bool = True
    seconds: float = 0.0
    checks: int = 0
    review_checks: int = 0
    reviews_note: str | None = None      # why review_opinion rubrics were left out, when they were
    views: list | None = None            # the attacker's views (adversary.TaskView), audit_tasks(keep_views=True)

    def summary(self) -> dict[str, Any]:
        return aggregate(self.tasks, include_reviews=self.include_reviews, reviews_note=self.reviews_note)

    def headline(self) -> str:
        return headline_of(self.summary())

    def markdown(self, baselines: dict[str, dict[str, Any]] | None = None) -> str:
        return markdown_of(self.summary(), baselines)

    def rows(self) -> list[dict[str, Any]]:
        return [t.to_dict() for t in self.tasks]

    def timing(self) -> dict[str, Any]:
        return {"seconds": round(self.seconds, 3), "checks": self.checks, "review_checks": self.review_checks}

    def section(self) -> str:
        """The construction report's section (rejections.md): deterministic, no timings."""
        return "## Validity audit\n\n" + self.headline() + "\n\n" + self.markdown()

    def write_rows(self, path: str | Path) -> None:
        """One TaskAudit per line (the benchmark folder's AUDIT_FILE)."""
        with open(path, "w", encoding="utf-8") as fh:
            for row in self.rows():
                fh.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")


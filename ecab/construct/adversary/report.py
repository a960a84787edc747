"""The adversaries' figures for a task set: the blind floor, every cue, the learned attacker, the baselines, and
the verdict against issue 27's criteria.

`summarize(records)` aggregates the per-task records (cues.cue_row, as TaskAudit.adversary carries them);
`attack_table` prints one table for a world; `verdict` checks the criteria; `attack_record` is the JSON.
"""
from __future__ import annotations

from typing import Any, Sequence

from ecab.construct.adversary.cues import CUES, DIRECTIONS, cue_key

# Issue 27's criteria.
ATTACKER_MARGIN = 0.05        # an attacker (query-only agent, learned) scores at most the floor + 5 points
GENERATED_FLOOR_MAX = 0.10    # the blind dual-path floor in the generated world
CUE_MAX_RATIO = 2.0           # no cue above twice chance (the floor)
HIDDEN_GAP_MIN = 0.15         # heuristic - query-only
ORACLE_MIN = 1.0


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def chance_tail(floors: Sequence[float], hits: float) -> float:
    """P(X >= hits) for X the number of tasks a label-blind pick gets right, each task independently with its
    floor's probability (Poisson-binomial; exact DP). A cue's expected hits over ties vary less than such a
    count, so this p-value is on the conservative side. One-sided, per cue: not corrected for the many cues
    tried (the summary gives a Bonferroni bound for the best one)."""
    dist = [1.0]
    for f in floors:
        nxt = [0.0] * (len(dist) + 1)
        for k, p in enumerate(dist):
            nxt[k] += p * (1 - f)
            nxt[k + 1] += p * f
        dist = nxt
    start = max(0, int(-(-round(hits, 6) // 1)))       # ceil, tolerant of rounding
    return min(1.0, sum(dist[start:]))


def summarize(records: Sequence[dict[str, Any] | None]) -> dict[str, Any] | None:
    """Means over the tasks that have a record: the floor, every cue (per direction) with its chance p-value
    (chance_tail), the best cue; None when no task has one (rows from before the adversaries existed)."""
    rows = [r for r in records if r]
    if not rows:
        return None
    floor = _mean([r["floor"] for r in rows])
    keys = sorted({k for r in rows for k in r.get("cues", {})})
    cues = {k: _mean([r["cues"][k] for r in rows if k in r.get("cues", {})]) for k in keys}
    p_values = {k: round(chance_tail([r["floor"] for r in rows if k in r.get("cues", {})],
                                     sum(r["cues"][k] for r in rows if k in r.get("cues", {}))), 6)
                for k in keys}
    best = max(keys, key=lambda k: (cues[k], k)) if keys else None
    return {
        "tasks": len(rows),
        "floor": floor,
        "tasks_multi_correct": sum(1 for r in rows if r["correct"] > 1),
        "tasks_no_candidate": sum(1 for r in rows if r["candidates"] == 0),
        "tasks_target_not_candidate": sum(1 for r in rows if not r.get("target_candidate", True)),
        "candidates_mean": _mean([r["candidates"] for r in rows]),
        "correct_mean": _mean([r["correct"] for r in rows]),
        "searched": all(r.get("searched", False) for r in rows),
        "cues": cues,
        "cue_p": p_values,
        "best_cue": ({"cue": best, "accuracy": cues[best], "x_chance": _ratio(cues[best], floor),
                      "p": p_values[best], "p_bonferroni": min(1.0, p_values[best] * len(keys))}
                     if best is not None else None),
    }


def headline_part(summary: dict[str, Any] | None) -> dict[str, Any] | None:
    """What every run's task-set headline carries: the floor, how many tasks have several correct candidates
    and the best cue (not every cue: that table is `python -m ecab.construct audit --baselines`)."""
    if not summary:
        return None
    return {k: summary[k] for k in ("tasks", "floor", "tasks_multi_correct", "best_cue")}


def _ratio(x: float | None, floor: float | None) -> float | None:
    if x is None or not floor:
        return None
    return x / floor


def _p(p: float | None) -> str:
    return "" if p is None else ("<0.001" if p < 0.001 else f"{p:.3f}")


def pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def times(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}x"


def best_direction(cues: dict[str, float | None], name: str) -> tuple[str | None, float | None]:
    got = [(cues.get(cue_key(name, d)), d) for d in DIRECTIONS if cues.get(cue_key(name, d)) is not None]
    if not got:
        return None, None
    acc, d = max(got)
    return d, acc


def verdict(summary: dict[str, Any] | None, learned: dict[str, Any] | None,
            baselines: dict[str, dict[str, Any]] | None, *, generated: bool) -> list[dict[str, Any]]:
    """Issue 27's criteria: [{"criterion", "ok": True/False/None (not measured), "detail"}]."""
    out: list[dict[str, Any]] = []
    floor = summary["floor"] if summary else None
    base = {k: (v or {}).get("overall") for k, v in (baselines or {}).items()}

    def check(name: str, ok: bool | None, detail: str) -> None:
        out.append({"criterion": name, "ok": ok, "detail": detail})

    bound = None if floor is None else floor + ATTACKER_MARGIN
    acc = (learned or {}).get("accuracy")
    check("learned attacker <= floor + 5 points",
          None if acc is None or bound is None else acc <= bound + 1e-9,
          f"learned {pct(acc)} vs floor {pct(floor)} + 5")
    qo = base.get("query-only")
    check("query-only agent <= floor + 5 points", None if qo is None or bound is None else qo <= bound + 1e-9,
          f"query-only {pct(qo)} vs floor {pct(floor)} + 5")
    check("floor <= 10% (generated world)",
          (floor <= GENERATED_FLOOR_MAX + 1e-9) if (generated and floor is not None) else None,
          f"floor {pct(floor)}" + ("" if generated else " (released tasks: not required)"))
    best = (summary or {}).get("best_cue")
    ratio = best.get("x_chance") if best else None
    check("no cue > 2x chance", None if ratio is None else ratio <= CUE_MAX_RATIO + 1e-9,
          f"best cue {best['cue']} {pct(best['accuracy'])} = {times(ratio)} chance, p {_p(best.get('p'))}, "
          f"Bonferroni {_p(best.get('p_bonferroni'))}" if best else "no cue")
    heur = base.get("heuristic")
    check("heuristic - query-only >= 15 points",
          None if heur is None or qo is None else heur - qo >= HIDDEN_GAP_MIN - 1e-9,
          f"heuristic {pct(heur)} - query-only {pct(qo)}")
    oracle = base.get("oracle")
    check("oracle 100%", None if oracle is None else oracle >= ORACLE_MIN - 1e-9, f"oracle {pct(oracle)}")
    return out


def verdict_line(checks: Sequence[dict[str, Any]]) -> str:
    mark = {True: "PASS", False: "FAIL", None: "n/a"}
    failed = sum(1 for c in checks if c["ok"] is False)
    unmeasured = sum(1 for c in checks if c["ok"] is None)
    head = ("verdict: FAIL" if failed else "verdict: pass" if not unmeasured else "verdict: pass so far")
    return head + " (" + "; ".join(f"{c['criterion']}: {mark[c['ok']]} [{c['detail']}]" for c in checks) + ")"


def attack_table(summary: dict[str, Any] | None, learned: dict[str, Any] | None = None,
                 baselines: dict[str, dict[str, Any]] | None = None, *, world: str = "",
                 generated: bool = False, catalog: str | None = None) -> str:
    """One table for the world: floor, every cue (both directions, the better one x chance), the learned
    attacker, the run baselines (flagged when run on another catalog than `catalog`, the audit's
    fingerprint); then the verdict line."""
    if not summary:
        return "adversaries: not computed for these rows\n"
    floor = summary["floor"]
    lines = [f"## Adversaries{': ' + world if world else ''}", "",
             f"{summary['tasks']} tasks; candidates (products matching every query rubric) per task: mean "
             f"{summary['candidates_mean']:.1f}, correct by dual path {summary['correct_mean']:.2f}; "
             f"{summary['tasks_multi_correct']} tasks have more than one correct candidate, "
             f"{summary['tasks_no_candidate']} none, in {summary['tasks_target_not_candidate']} the target is "
             f"not a candidate" + ("" if summary.get("searched") else "; search ranks not computed") + ".", "",
             "| attacker | what it picks | accuracy (max) | accuracy (min) | best x chance | p |",
             "|---|---|---:|---:|---:|---:|",
             f"| **blind floor** | a uniform pick among the candidates, any correct one counts | {pct(floor)} | | "
             "1.00x | |"]
    cues = summary["cues"]
    p_values = summary.get("cue_p") or {}
    for cue in CUES:
        mx, mn = cues.get(cue_key(cue, "max")), cues.get(cue_key(cue, "min"))
        if mx is None and mn is None:
            continue
        d, acc = best_direction(cues, cue.name)
        p = p_values.get(cue_key(cue, d)) if d else None
        lines.append(f"| {cue.name} | {cue.label} | {pct(mx)} | {pct(mn)} | {times(_ratio(acc, floor))} | "
                     f"{_p(p)} |")
    if learned:
        m = learned["models"]
        detail = ", ".join(f"{k} {pct(v['accuracy'])}" for k, v in m.items())
        lines.append(f"| **learned attacker** | 2-fold by task ({detail}; {learned['features']} columns) | "
                     f"{pct(learned['accuracy'])} | | {times(_ratio(learned['accuracy'], floor))} | |")
    for name, b in (baselines or {}).items():
        acc = (b or {}).get("overall")
        what = (b or {}).get("error") or "run by the normal runner and judge"
        ran_on = (b or {}).get("catalog")
        if catalog and ran_on and ran_on != catalog:
            what += f" **on catalog {ran_on[:12]}, not the audit's {catalog[:12]}** (catalog code changed)"
        lines.append(f"| model={name} | {what} | {pct(acc)} | | {times(_ratio(acc, floor))} | |")
    best = summary.get("best_cue")
    lines += ["", "accuracy: expected top-1 with ties at random, counted by the dual-path rule (the target, or "
                  "any product satisfying every audited rubric); x chance: the better direction over the floor; "
                  "p: the chance a label-blind pick does as well (one-sided, per cue, uncorrected"
              + (f"; the best cue's Bonferroni bound over {len(cues)} cue directions: "
                 f"{_p(best.get('p_bonferroni'))}" if best and best.get("p_bonferroni") is not None else "")
              + "). The learned attacker's features: learned.py; the cues': features.py.",
              "", verdict_line(verdict(summary, learned, baselines, generated=generated))]
    return "\n".join(lines) + "\n"


def attack_record(summary: dict[str, Any] | None, learned: dict[str, Any] | None,
                  baselines: dict[str, dict[str, Any]] | None, *, world: dict[str, Any],
                  generated: bool) -> dict[str, Any]:
    """The JSON the CLI writes (--json PATH)."""
    return {"world": world, "adversaries": summary, "learned": learned, "baselines": baselines,
            "verdict": verdict(summary, learned, baselines, generated=generated)}

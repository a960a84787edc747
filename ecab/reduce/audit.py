"""Judge audit: where the judge may have been wrong, and how two judges of the same run agree.

- judge_misjudged: the exact target was recommended yet some rubric was judged unsatisfied. The target
  satisfies every rubric by construction, so each case is a judge (or rubric) error to look at.
- non_exact_but_correct: another product was accepted on its rubrics. Listed (task, predicted, target) so
  a person can check that the judge was right to accept it (the paper re-examined these by hand).
- Agreement: when a run holds `verdicts.<judge>.jsonl` for two or more judges (e.g. rules and llm), each
  pair's verdicts are matched by (episode unit, rubric id) and compared per rubric type with Cohen's kappa.
  Verdicts that could not be scored, runtime-error judgements and "no valid product" verdicts (decided
  without looking at any product, so both judges agree by construction) are left out.
"""
from __future__ import annotations

import itertools
from typing import Any, Iterable, Sequence

from ecab.core.unit import unit_key
from ecab.reduce.episodes import Episode, evaluated_episodes
from ecab.schema import Judgement, Task

NO_PRODUCT_METHOD = "no_product"
REASON_CHARS = 300


# ---------------------------------------------------------------------------------------------------------
# One judge
# ---------------------------------------------------------------------------------------------------------

def _case(e: Episode) -> dict[str, Any]:
    return {"task_id": e.task.id, "trial": e.traj.unit.get("trial", 0), "intent_category": e.task.intent_category,
            "predicted_product_id": e.traj.predicted_product_id, "target_product_id": e.task.target_product.product_id}


def judge_audit(episodes: Sequence[Episode]) -> dict[str, Any]:
    evaluated = evaluated_episodes(episodes)
    misjudged = [{**_case(e), "failed_rubrics": [r.rubric_id for r in e.rubrics if r.satisfied is False]}
                 for e in evaluated if e.exact and e.judgement.all_satisfied is False]
    accepted = [_case(e) for e in evaluated if not e.exact and e.all_satisfied]
    return {"judge_misjudged_count": len(misjudged), "judge_misjudged": misjudged,
            "non_exact_but_correct_count": len(accepted), "non_exact_but_correct": accepted}


# ---------------------------------------------------------------------------------------------------------
# Two judges
# ---------------------------------------------------------------------------------------------------------

def cohen_kappa(both_true: int, a_only: int, b_only: int, both_false: int) -> float | None:
    """Cohen's kappa of a 2x2 table (a_only: judge A said satisfied, B did not).

    None when it is undefined: no items, or chance agreement is 1 (both judges gave one and the same label
    to everything, so there is no variation to agree on beyond chance).
    """
    n = both_true + a_only + b_only + both_false
    if n == 0:
        return None
    observed = (both_true + both_false) / n
    a_true, b_true = (both_true + a_only) / n, (both_true + b_only) / n
    chance = a_true * b_true + (1 - a_true) * (1 - b_true)
    if chance >= 1.0:
        return None
    return round((observed - chance) / (1 - chance), 4)


def _scorable(judgements: Iterable[Judgement], tasks: dict[str, Task]) -> dict[tuple, tuple[str, Any]]:
    """{(unit, rubric_id): (rubric type, verdict)} of the verdicts both judges could disagree on."""
    out = {}
    for j in judgements:
        if j.runtime_error:
            continue
        key = unit_key(j.unit, j.id)
        task = tasks.get(key[0])
        for v in j.verdicts:
            if v.satisfied is None or v.method == NO_PRODUCT_METHOD:
                continue
            rubric = next((r for r in task.rubrics if r.id == v.rubric_id), None) if task else None
            out[(key, v.rubric_id)] = (rubric.type if rubric else (v.type or "unknown"), v)
    return out


def _tally(pairs: Sequence[tuple[bool, bool]]) -> dict[str, Any]:
    cells = {"both_satisfied": sum(a and b for a, b in pairs), "only_first": sum(a and not b for a, b in pairs),
             "only_second": sum(b and not a for a, b in pairs),
             "both_unsatisfied": sum(not a and not b for a, b in pairs)}
    n = len(pairs)
    agree = cells["both_satisfied"] + cells["both_unsatisfied"]
    return {"n": n, "agreement": round(agree / n, 4) if n else None,
            "kappa": cohen_kappa(*cells.values()), **cells}


def pair_agreement(name_a: str, judgements_a: Iterable[Judgement], name_b: str,
                   judgements_b: Iterable[Judgement], tasks: dict[str, Task]) -> dict[str, Any]:
    a, b = _scorable(judgements_a, tasks), _scorable(judgements_b, tasks)
    shared = sorted(set(a) & set(b), key=repr)
    by_type: dict[str, list[tuple[bool, bool]]] = {}
    disagreements = []
    for key in shared:
        rtype, va = a[key]
        vb = b[key][1]
        by_type.setdefault(rtype, []).append((bool(va.satisfied), bool(vb.satisfied)))
        if bool(va.satisfied) != bool(vb.satisfied):
            (task_id, _, _, _, trial), rubric_id = key
            disagreements.append({
                "task_id": task_id, "trial": trial, "rubric_id": rubric_id, "type": rtype,
                name_a: bool(va.satisfied), name_b: bool(vb.satisfied),
                f"{name_a}_reason": (va.reasoning or va.evidence)[:REASON_CHARS],
                f"{name_b}_reason": (vb.reasoning or vb.evidence)[:REASON_CHARS]})
    all_pairs = [p for pairs in by_type.values() for p in pairs]
    return {"judges": [name_a, name_b], "overall": _tally(all_pairs),
            "by_type": {t: _tally(by_type[t]) for t in sorted(by_type)},
            "only_in_first": len(set(a) - set(b)), "only_in_second": len(set(b) - set(a)),
            "disagreements": disagreements}


def judge_agreement(judgements_by_judge: dict[str, list[Judgement]], tasks: dict[str, Task]) -> list[dict[str, Any]]:
    """Agreement of every pair of judges (names sorted, so rules/llm always come out as llm vs rules)."""
    names = sorted(judgements_by_judge)
    return [pair_agreement(a, judgements_by_judge[a], b, judgements_by_judge[b], tasks)
            for a, b in itertools.combinations(names, 2)]

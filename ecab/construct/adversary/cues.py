"""Form cues: one score per candidate, the attacker recommends the best (issue 27).

A cue is a form feature (features.py) read in one direction: `max` recommends the candidate with the highest
value, `min` the lowest. Its accuracy on a task is the EXPECTED top-1 hit with ties broken uniformly at random,
counted by the dual-path rule: the share of correct candidates among the tied best (a candidate without the
value, NaN, is never preferred). Every cue is scored in both directions; the report shows both and calls the
better one the cue's figure (an attacker would pick the direction that wins, so does the audit).

Written to win: the list below is what an adversary tried on the worlds of issue 27, plus the obvious
neighbours. `cue_row(view)` is the per-task record the audit rows carry (TaskAudit.adversary).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

from ecab.construct.adversary.features import features
from ecab.construct.adversary.view import TaskView

DIRECTIONS = ("max", "min")


@dataclass(frozen=True)
class Cue:
    name: str
    feature: str
    label: str          # what `max` means; `min` is its opposite


CUES: tuple[Cue, ...] = (
    Cue("drift_minority@set", "minority_2v@set", "minority value on the most two-valued keys (candidates)"),
    Cue("drift_minority@family", "minority_2v@family", "minority value on the most two-valued keys (family)"),
    Cue("drift_minority_mid@set", "minority_2v_mid@set",
        "minority value on the most two-valued keys whose minority holds 15-35% (candidates)"),
    Cue("drift_minority_mid@family", "minority_2v_mid@family",
        "minority value on the most two-valued keys whose minority holds 15-35% (family)"),
    Cue("typical@set", "modal_keys@set", "most common value on the most keys (candidates)"),
    Cue("typical@family", "modal_keys@family", "most common value on the most keys (family)"),
    Cue("value_share@set", "value_share_mean@set", "highest mean share of its values (candidates)"),
    Cue("value_share@family", "value_share_mean@family", "highest mean share of its values (family)"),
    Cue("rare_keys@set", "rare_keys@set", "least common value on the most keys (candidates)"),
    Cue("rare_keys@family", "rare_keys@family", "least common value on the most keys (family)"),
    Cue("unique_keys@set", "unique_keys@set", "a value no other candidate holds on the most keys"),
    Cue("value_share_max@set", "value_share_max@set", "its most widely shared value the most widely shared"),
    Cue("central@set", "central@set", "most listings within one value (candidates)"),
    Cue("central@family", "central@family", "most listings within one value (family)"),
    Cue("consensus@set", "consensus@set", "minority on two-valued keys, majority on the others (candidates)"),
    Cue("consensus@family", "consensus@family", "minority on two-valued keys, majority on the others (family)"),
    Cue("consensus_drift@family", "consensus_drift@family",
        "minority on drift-like two-valued keys, majority on rare-value ones and the others (family)"),
    Cue("price_odd_ending", "price_odd_ending", "price ending outside .99/.95/.49/.69/.29/.89"),
    Cue("price_cents@set", "price_cents_share@set", "most common price cents (min: rarest) among candidates"),
    Cue("price_cents@family", "price_cents_share@family", "most common price cents (min: rarest) in family"),
    Cue("price", "price", "highest price"),
    Cue("title_copies@set", "title_copies@set", "title shared with the most candidates"),
    Cue("title_copies@family", "title_copies@family", "title shared with the most family listings"),
    Cue("title_similarity@set", "title_overlap@set", "title most similar to the other candidates'"),
    Cue("title_similarity@family", "title_overlap@family", "title most similar to the family's"),
    Cue("query_overlap", "query_overlap", "title sharing the most query words"),
    Cue("store@set", "store_share@set", "most common store among candidates"),
    Cue("store@family", "store_share@family", "most common store in the family"),
    Cue("id_prefix@set", "id_prefix@set", "id sharing the longest prefixes with the candidates'"),
    Cue("id_prefix@family", "id_prefix@family", "id sharing the longest prefixes with the family's"),
    Cue("search_rank", "search_rank", "last search hit (min: the first hit)"),
    Cue("rating_number", "rating_number", "most ratings"),
    Cue("average_rating", "average_rating", "highest rating"),
    Cue("review_count", "review_count", "most reviews"),
    Cue("date_first_available", "date_first_available", "newest (min: oldest) date first available"),
    Cue("twin_conflicts", "twin_conflicts", "most near-duplicate keys with different values (min: fewest)"),
    Cue("detail_keys", "detail_keys", "most detail keys"),
    Cue("catalog_order", "scan_order", "last in catalog order (min: first; get_store_products shows it)"),
)


def cue_key(cue: Cue | str, direction: str) -> str:
    return f"{cue.name if isinstance(cue, Cue) else cue}:{direction}"


def expected_hit(scores: Sequence[float], correct: Sequence[bool], direction: str = "max") -> float:
    """The expected dual-path hit of picking the best score (ties at random; NaN never preferred unless all are)."""
    if not scores:
        return 0.0
    sign = 1.0 if direction == "max" else -1.0
    vals = [-math.inf if (s is None or math.isnan(s)) else sign * s for s in scores]
    best = max(vals)
    tied = [i for i, v in enumerate(vals) if v == best]
    return sum(1 for i in tied if correct[i]) / len(tied)


def cue_hits(view: TaskView, feats: dict[str, list[float]] | None = None) -> dict[str, float]:
    """{"<cue>:<direction>": expected hit} for every cue whose feature the view has (every cue 0.0 when the
    view has no candidate: no pick can be right)."""
    correct = view.correct
    if not correct:
        return {cue_key(cue, d): 0.0 for cue in CUES for d in DIRECTIONS}
    feats = features(view) if feats is None else feats
    out = {}
    for cue in CUES:
        values = feats.get(cue.feature)
        if values is None:
            continue
        for d in DIRECTIONS:
            out[cue_key(cue, d)] = round(expected_hit(values, correct, d), 6)
    return out


def cue_row(view: TaskView) -> dict[str, Any]:
    """The per-task adversary record (TaskAudit.adversary): candidates, correct ones, whether the target is
    one, the blind dual-path floor and every cue's expected hit."""
    correct = view.correct
    return {"candidates": len(correct), "correct": sum(correct),
            "target_candidate": any(c.is_target for c in view.candidates),
            "floor": round(view.floor(), 6), "searched": view.searched,
            "cues": cue_hits(view)}

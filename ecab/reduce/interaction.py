"""How the agent worked: clarification (slots revealed, questions that revealed nothing), interaction
(calls per tool, search depth, where the first ask_user fell), accuracy given profile reads and questions,
and what the agent did about the reviews of a product whose review requirements failed."""
from __future__ import annotations

from collections import Counter
from typing import Any, Sequence

from ecab.reduce.episodes import Episode, evaluated_episodes, scored_episodes
from ecab.reduce.rates import median, rate, round4

SEARCH_TOOL = "search_products"
ASK_TOOL = "ask_user"
REVIEW_TOOL = "get_review_content"
REVIEW_FAILURE_KINDS = ("no_valid_recommendation", "retrieved_recommended_reviews", "searched_no_matching_text",
                        "never_searched")
FIRST_ASK_BINS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)


# ---------------------------------------------------------------------------------------------------------
# Clarification
# ---------------------------------------------------------------------------------------------------------

def slot_count(e: Episode) -> int:
    return len(e.task.clarification_script.clarification_slots)


def _ask_steps(e: Episode) -> list:
    return [s for s in e.traj.steps if s.tool == ASK_TOOL]


def revealed_slots(e: Episode) -> set[str]:
    return set(e.traj.revealed_slots) | {s.revealed_slot for s in e.traj.steps if s.revealed_slot is not None}


def clarification_section(episodes: Sequence[Episode]) -> dict[str, Any]:
    evaluated = evaluated_episodes(episodes)
    slots_by_task = {e.task.id: slot_count(e) for e in evaluated}
    available = sum(slot_count(e) for e in evaluated)
    revealed = sum(len(revealed_slots(e)) for e in evaluated)
    questions = [s for e in evaluated for s in _ask_steps(e) if not s.is_error]
    return {
        "total_clarification_slots": available,
        "slots_per_task": rate(sum(slots_by_task.values()), len(slots_by_task)),
        "slots_revealed": revealed,
        "slots_revealed_per_episode": rate(revealed, len(evaluated)),
        "reveal_rate": rate(revealed, available),
        "questions_asked": len(questions),
        "questions_revealed_nothing": sum(1 for s in questions if s.revealed_slot is None),
    }


# ---------------------------------------------------------------------------------------------------------
# Interaction
# ---------------------------------------------------------------------------------------------------------

def first_ask_position(e: Episode) -> float | None:
    """Where the first ask_user fell among the episode's calls: 0 = first call, 1 = last call."""
    asks = [s.call_index for s in _ask_steps(e) if s.call_index > 0]
    if not asks:
        return None
    total = max(e.traj.total_tool_calls, max(asks))
    return (min(asks) - 1) / (total - 1) if total > 1 else 0.0


def search_depth(evaluated: Sequence[Episode]) -> dict[str, Any]:
    """Searches per episode and how deep into the result pages they went (page 0 is the first page)."""
    n = len(evaluated)
    searches = [[s for s in e.traj.steps if s.tool == SEARCH_TOOL] for e in evaluated]
    pages = [[_page_of(s) for s in ss] for ss in searches]
    queries = [{str(s.arguments.get("query", "")).strip().lower() for s in ss if isinstance(s.arguments, dict)}
               for ss in searches]
    searched = [p for p in pages if p]
    return {
        "searches_mean": rate(sum(map(len, searches)), n),
        "distinct_queries_mean": rate(sum(map(len, queries)), n),
        "next_page_calls_mean": rate(sum(sum(1 for x in p if x > 0) for p in pages), n),
        "result_pages_deepest_mean": rate(sum(max(p) + 1 for p in searched), len(searched)),
    }


def _page_of(step) -> int:
    page = step.arguments.get("page", 0) if isinstance(step.arguments, dict) else 0
    try:
        return max(0, int(page or 0))
    except (TypeError, ValueError):
        return 0


def first_ask_bins(evaluated: Sequence[Episode]) -> list[dict[str, Any]]:
    """Accuracy by where the first ask_user fell (5 bins of width 0.2, then the episodes that never asked)."""
    rows = []
    for low, high in zip(FIRST_ASK_BINS, FIRST_ASK_BINS[1:]):
        last = high == FIRST_ASK_BINS[-1]
        members = [e for e in evaluated if (p := first_ask_position(e)) is not None
                   and low <= p and (p <= high if last else p < high)]
        rows.append({"bin": f"{low:.1f}-{high:.1f}", **_accuracy_of(members)})
    rows.append({"bin": "never asked", **_accuracy_of([e for e in evaluated if first_ask_position(e) is None])})
    return rows


UNKNOWN_TOOL = "(unknown tools)"   # one row for every name a model invented (a small local model invents many)


def tool_label(step) -> str:
    """The row a step counts in: its tool, or UNKNOWN_TOOL when the name was no tool of the episode (the
    toolbox answered "Unknown tool: <name>"), so invented names do not each become a row of the tables."""
    if step.tool is not None and step.is_error and str(step.error or "").startswith("Unknown tool:"):
        return UNKNOWN_TOOL
    return step.tool or ""     # callers count only steps that made a call


def interaction_section(episodes: Sequence[Episode]) -> dict[str, Any]:
    """The paper's Table 8 row (interaction behaviour) and the per-episode data behind Figure 4."""
    evaluated = evaluated_episodes(episodes)
    n = len(evaluated)
    calls = Counter(tool_label(s) for e in evaluated for s in e.traj.steps if s.tool is not None)
    positions = [p for e in evaluated if (p := first_ask_position(e)) is not None]
    depth = search_depth(evaluated)
    return {
        "calls_per_tool_mean": {tool: rate(calls[tool], n) for tool in sorted(calls)},
        "searches_mean": depth["searches_mean"],
        "search_depth": depth,
        "ask_user_episode_rate": rate(sum(e.traj.ask_user_calls > 0 for e in evaluated), n),
        "first_ask_user_position_mean": round4(sum(positions) / len(positions)) if positions else None,
        "first_ask_user_position_median": round4(median(positions)) if positions else None,
        "profile_read_rate": rate(sum(e.traj.get_profile_calls > 0 for e in evaluated), n),
        "finish_rate": rate(sum(e.traj.finished for e in evaluated), n),
        "first_ask_vs_accuracy": first_ask_bins(evaluated),
    }


def _accuracy_of(members: Sequence[Episode]) -> dict[str, Any]:
    base = scored_episodes(members)
    return {"episodes": len(members), "scored": len(base),
            "accuracy": rate(sum(e.correct for e in base), len(base)) if base else None}


def accuracy_given(episodes: Sequence[Episode]) -> dict[str, Any]:
    """Accuracy conditioned on reading the profile and on asking the user (correlation, not cause)."""
    evaluated = evaluated_episodes(episodes)
    read = [e.traj.get_profile_calls > 0 for e in evaluated]
    asked = [e.traj.ask_user_calls > 0 for e in evaluated]
    return {
        "profile_read": _accuracy_of([e for e, r in zip(evaluated, read) if r]),
        "profile_not_read": _accuracy_of([e for e, r in zip(evaluated, read) if not r]),
        "asked_user": _accuracy_of([e for e, a in zip(evaluated, asked) if a]),
        "did_not_ask": _accuracy_of([e for e, a in zip(evaluated, asked) if not a]),
    }


# ---------------------------------------------------------------------------------------------------------
# Review evidence
# ---------------------------------------------------------------------------------------------------------

def review_failure_kind(e: Episode) -> str:
    predicted = e.traj.predicted_product_id
    if predicted is None:
        return "no_valid_recommendation"
    searches = [s for s in e.traj.steps if s.tool == REVIEW_TOOL and not s.is_error
                and isinstance(s.arguments, dict) and s.arguments.get("product_id") == predicted]
    if any(s.result_ids for s in searches):
        return "retrieved_recommended_reviews"
    return "searched_no_matching_text" if searches else "never_searched"


def review_evidence_failures(episodes: Sequence[Episode]) -> dict[str, int]:
    """Failed review_opinion rubrics by what the agent did about the recommended product's reviews."""
    counts = {k: 0 for k in REVIEW_FAILURE_KINDS}
    for e in evaluated_episodes(episodes):
        failed = sum(1 for r in e.rubrics if r.type == "review_opinion" and r.satisfied is False)
        if failed:
            counts[review_failure_kind(e)] += failed
    return {"total": sum(counts.values()), **counts}


NO_TOOL_CALLS_WARNING = ("no episode made a tool call (each ended no_tool_call): an endpoint whose model writes its "
                         "calls as text, or whose server does not parse them, looks like this; try "
                         "model.tool_call_format=hermes|json, model.tool_choice=required, or the server's tool "
                         "parser (llama-server --jinja; vLLM --enable-auto-tool-choice --tool-call-parser ...): "
                         "docs/local-models.md")


def run_warnings(episodes: Sequence[Episode]) -> list[str]:
    """What makes a run's numbers mean something else than a model's skill, said where its numbers are read
    (summary.md's top, the run's last lines): a run in which no episode ever called a tool measured the endpoint's
    set-up, not the agent (a served model's calls written as text, found against llama.cpp)."""
    evaluated = evaluated_episodes(episodes)
    if evaluated and all(e.traj.termination == "no_tool_call" and e.traj.total_tool_calls == 0 for e in evaluated):
        return [NO_TOOL_CALLS_WARNING]
    return []

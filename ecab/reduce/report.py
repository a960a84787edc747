"""summary.md: the original layout (docs/original-harness.md §4.5), then sections for ecab's analyses.

Rates print as percentages with one decimal; counts and means as numbers. The renderer reads only the
summary dict, so summary.md can be rebuilt from summary.json alone.
"""
from __future__ import annotations

from typing import Any, Sequence

from ecab.reduce.plots import RUN_PLOTS


def pct(rate: float | None) -> str:
    return "n/a" if rate is None else f"{rate * 100:.1f}%"


def num(value: float | None, digits: int = 2) -> str:
    if value is None:
        return "n/a"
    return str(value) if isinstance(value, int) else f"{value:.{digits}f}"


def dollars(value: float | None) -> str:
    """A cost in USD; None is a cost ecab could not price (reduce/usage.py), never $0."""
    return "unknown" if value is None else f"{value:.6f}"


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines


def _rubric_rows(groups: dict[str, dict[str, Any]]) -> list[list[Any]]:
    return [[name, g["count"], g["satisfied"], pct(g["satisfaction"])] for name, g in groups.items()]


def _group_rows(groups: dict[str, dict[str, Any]]) -> list[list[Any]]:
    return [[name, g["count"], g["evaluated_samples"], pct(g["accuracy"]), pct(g["rubric_satisfaction"])]
            for name, g in groups.items()]


GROUP_HEADERS = ("count", "evaluated", "accuracy", "rubric_satisfaction")


def overall(s: dict[str, Any]) -> list[str]:
    return [
        "## Overall",
        f"- Model: `{s['model']}`",
        f"- Judge model: `{s['judge_model']}`",
        f"- Total samples: {s['total_samples']}",
        f"- Evaluated samples: {s['evaluated_samples']}",
        f"- Runtime errors: {s['runtime_error_count']} ({pct(s['runtime_error_rate'])})",
        f"- **Overall accuracy: {pct(s['overall_accuracy'])}** (exact_match OR judge_correct)",
        f"- Exact product match correct: {s['exact_match_correct']} ({pct(s['exact_match_rate'])})",
        f"- Non-exact but judge correct: {s['non_exact_but_correct']} ({pct(s['non_exact_but_correct_rate'])})",
        f"- Judge-only correct (all_satisfied): {s['judge_only_correct']}",
        f"- Judge misjudged (exact match but judge failed): {s['judge_misjudged_count']}",
        f"- Overall rubric satisfaction: {pct(s['overall_rubric_satisfaction'])}",
        f"- Prediction finished rate: {pct(s['prediction_finished_rate'])}",
        f"- Valid finish rate (recommended a valid product): {pct(s['valid_finish_rate'])}",
        f"- Average tool calls: {num(s['avg_tool_calls'])}",
        f"- Median tool calls: {num(s['median_tool_calls'])}",
        f"- Unscored samples / rubrics: {s['unscored_samples']} / {s['unscored_rubrics']}",
    ]


def original_sections(s: dict[str, Any]) -> list[str]:
    clar = s["clarification_efficiency"]
    lines = ["# Evaluation Summary", "", *overall(s), "",
             "## By Info Source", *table(("source", "count", "satisfied", "satisfaction"),
                                         _rubric_rows(s["by_source"])), "",
             "## Persona & Clarification",
             f"- Profile called rate: {pct(s['persona_utilization']['profile_called_rate'])}",
             f"- Avg ask_user calls: {num(clar['avg_ask_user_calls'])}",
             f"- Total clarification slots: {clar['total_clarification_slots']}", "",
             "## By Intent",
             *table(("intent", "count", "evaluated", "accuracy", "exact_match", "non_exact_correct",
                     "rubric_satisfaction"),
                    [[name, g["count"], g["evaluated_samples"], pct(g["accuracy"]), g["exact_match_correct"],
                      g["non_exact_but_correct"], pct(g["rubric_satisfaction"])]
                     for name, g in s["by_intent"].items()]), "",
             "## By Rubric Type", *table(("rubric_type", "count", "satisfied", "satisfaction"),
                                         _rubric_rows(s["by_rubric_type"])), ""]
    if s["top_failure_reasons"]:
        lines += ["## Top Failure Reasons", *[f"- {n}: {reason}" for reason, n in s["top_failure_reasons"].items()],
                  ""]
    if s["runtime_error_examples"]:
        lines += ["## Runtime Error Examples",
                  *[f"- `{x['id']}` ({x['intent_category']}): {x['error_message']}"
                    for x in s["runtime_error_examples"]], ""]
    return lines


def last_calls_line(budget: dict[str, Any]) -> str:
    """The accuracy the last quarter of the budget added (budget.py: cut points from the budget)."""
    last = budget.get("accuracy_added_by_last_calls") or {}
    if not last.get("high"):
        return "- Accuracy added by the last calls: n/a (no budget known)"
    return f"- Accuracy added by calls {last['low'] + 1}-{last['high']}: {pct(last['value'])}"


def ecab_sections(s: dict[str, Any]) -> list[str]:
    budget, clar, tok = s["budget"], s["clarification"], s["tokens_and_cost"]
    methods = sorted({m for g in s["by_source"].values() for m in g["methods"]})
    lines = ["## Terminations", *table(("termination", "count"), list(s["terminations"].items())), "",
             "## Call budget",
             f"- Budget: {budget['budget']} tool calls",
             f"- Episodes that used every call: {budget.get('used_every_call_count', 0)} "
             f"({pct(budget.get('used_every_call_rate'))})",
             f"- Episodes cut off at the cap (no recommendation): {budget['cap_reached_count']} "
             f"({pct(budget['cap_reached_rate'])})",
             last_calls_line(budget), "",
             *table(("cut after k calls", "accuracy"),
                    [[k, pct(v)] for k, v in budget["accuracy_if_cut_at"].items()]), "",
             "## Clarification",
             f"- Slots per task: {num(clar['slots_per_task'])}",
             f"- Slots revealed per episode: {num(clar['slots_revealed_per_episode'])}",
             f"- Reveal rate (revealed / available): {pct(clar['reveal_rate'])}",
             f"- Questions that revealed nothing: {clar['questions_revealed_nothing']} "
             f"of {clar['questions_asked']}",
             f"- Total clarification slots: {clar['total_clarification_slots']}", "",
             "## By main category", *table(("main_category", *GROUP_HEADERS), _group_rows(s["by_main_category"])),
             ""]
    if s["by_voucher_kind"]:
        lines += ["## By voucher kind",
                  *table(("voucher_kind", *GROUP_HEADERS, "budget_match"),
                         [[*row, pct(g["budget_match"]["satisfaction"])]
                          for row, g in zip(_group_rows(s["by_voucher_kind"]), s["by_voucher_kind"].values())]),
                  ""]
    lines += ["## Judging methods",
              *table(("source", *methods, "unscored"),
                     [[name, *[g["methods"].get(m, 0) for m in methods], g["unscored"]]
                      for name, g in s["by_source"].items()]), "",
              "## Review evidence failures",
              *[f"- {k}: {v}" for k, v in s["review_evidence_failures"].items()], "",
              "## Tokens & cost",
              *table(("", *tok["total"].keys()),
                     [["total", *[dollars(v) if k == "cost_usd" else v for k, v in tok["total"].items()]],
                      ["mean per episode", *[dollars(v) if k == "cost_usd" else num(v, 1)
                                             for k, v in tok["mean_per_episode"].items()]]]),
              *([f"- Cost: {tok['cost']}"] if tok.get("cost") else []),
              "",
              "## Latency",
              *table(("seconds", "mean", "p50", "p95"),
                     [[name, num(v["mean"], 3), num(v["p50"], 3), num(v["p95"], 3)]
                      for name, v in s["latency"].items() if isinstance(v, dict)]), "",
              "## Tool errors",
              f"- Total: {s['tool_errors']['total']} ({pct(s['tool_errors']['rate'])} of calls)",
              *[f"- {tool}: {n}" for tool, n in s["tool_errors"]["by_tool"].items()], "",
              f"Trials per task: {s['trials']}", ""]
    return lines


def _ci_text(ci: dict[str, Any] | None) -> str:
    if not ci or ci.get("estimate") is None:
        return "n/a"
    return f"{pct(ci['estimate'])} [{pct(ci['low'])}, {pct(ci['high'])}]"


CI_METHODS = {"wilson": "Wilson", "cluster_bootstrap": "bootstrap over tasks",
              "wilson_over_tasks": "Wilson over tasks (bootstrap degenerate)"}


def _ci_method(ci: dict[str, Any] | None) -> str:
    """How this interval was made (variance.py's rule); summaries from before it were all bootstrap."""
    if not ci or ci.get("estimate") is None:
        return ""
    return CI_METHODS.get(ci.get("method") or "cluster_bootstrap", str(ci.get("method")))


def variance_sections(s: dict[str, Any]) -> list[str]:
    v = s.get("variance")
    if not v:
        return []
    named = [("overall accuracy", v["accuracy"]), ("overall rubric satisfaction", v["rubric_satisfaction"])]
    named += [(f"satisfaction, source {name}", ci) for name, ci in v["by_source"].items()]
    named += [(f"accuracy, intent {name}", g["accuracy"]) for name, g in v["by_intent"].items()]
    named += [(f"satisfaction, intent {name}", g["rubric_satisfaction"]) for name, g in v["by_intent"].items()]
    rows = [[name, _ci_text(ci), _ci_method(ci)] for name, ci in named]
    lines = [f"## Confidence intervals ({v['level']:.0%}, {v['tasks']} tasks; bootstrap: {v['resamples']} "
             f"resamples, seed {v['seed']})", *table(("statistic", "estimate [low, high]", "method"), rows),
             f"Method: {v['method']}.", ""]
    if v["max_scored_trials_per_task"] > 1:
        flips = v["flips"]
        lines += ["## Trials", *table(("k", "pass^k", "tasks"),
                                      [[k, pct(p["value"]), p["tasks"]] for k, p in v["pass_k"].items()]),
                  f"- Tasks whose outcome flips between trials: {flips['flipped']} of {flips['tasks']} "
                  f"({pct(flips['rate'])})", ""]
    return lines


def difficulty_sections(s: dict[str, Any]) -> list[str]:
    return ["## Difficulty buckets",
            "By implicit query requirements:", "",
            *table(("implicit", *GROUP_HEADERS), _group_rows(s["by_implicit_count"])), "",
            "By raw rubric count:", "",
            *table(("rubrics", *GROUP_HEADERS), _group_rows(s["by_rubric_count"])), ""]


def interaction_sections(s: dict[str, Any]) -> list[str]:
    inter = s["interaction"]
    depth = inter.get("search_depth", {})
    given = s.get("accuracy_given", {})
    lines = ["## Interaction behaviour",
             *table(("tool", "mean calls per episode"), list(inter["calls_per_tool_mean"].items())), "",
             f"- Searches per episode: {num(inter['searches_mean'])} (distinct queries "
             f"{num(depth.get('distinct_queries_mean'))}, next-page calls {num(depth.get('next_page_calls_mean'))},"
             f" deepest result page reached {num(depth.get('result_pages_deepest_mean'))})",
             f"- First ask_user position (0 = start, 1 = end): mean {num(inter['first_ask_user_position_mean'])}, "
             f"median {num(inter.get('first_ask_user_position_median'))}",
             f"- Share of episodes with ask_user: {pct(inter['ask_user_episode_rate'])}",
             f"- Profile-read rate: {pct(inter.get('profile_read_rate'))}",
             f"- Finish rate: {pct(inter.get('finish_rate'))}", ""]
    if inter.get("first_ask_vs_accuracy"):
        lines += ["First ask_user position vs accuracy:", "",
                  *table(("first ask position", "episodes", "scored", "accuracy"),
                         [[r["bin"], r["episodes"], r["scored"], pct(r["accuracy"])]
                          for r in inter["first_ask_vs_accuracy"]]), ""]
    if given:
        lines += ["## Accuracy given behaviour",
                  *table(("condition", "episodes", "scored", "accuracy"),
                         [[name.replace("_", " "), g["episodes"], g["scored"], pct(g["accuracy"])]
                          for name, g in given.items()]), ""]
    return lines


def failure_sections(s: dict[str, Any]) -> list[str]:
    fails = s.get("failure_by_source")
    if not fails:
        return []
    rows = []
    for source, g in fails.items():
        rows.append([source, "(all)", g["count"], g["failed"], pct(g["failure_rate"])])
        rows += [[source, t, x["count"], x["failed"], pct(x["failure_rate"])] for t, x in g["by_type"].items()]
    return ["## Failure rate per requirement by source",
            *table(("source", "rubric_type", "count", "failed", "failure_rate"), rows), ""]


LIST_LIMIT = 20


def audit_sections(s: dict[str, Any]) -> list[str]:
    audit = s.get("judge_audit")
    if not audit:
        return []
    lines = ["## Judge audit",
             f"- Judge misjudged (exact target, some rubric unsatisfied): {audit['judge_misjudged_count']}",
             *[f"  - `{c['task_id']}` trial {c['trial']}: failed {', '.join(c['failed_rubrics'])}"
               for c in audit["judge_misjudged"][:LIST_LIMIT]],
             f"- Non-exact but correct, to review: {audit['non_exact_but_correct_count']}"
             + (f" (first {LIST_LIMIT} below; all in summary.json)"
                if audit["non_exact_but_correct_count"] > LIST_LIMIT else ""),
             *[f"  - `{c['task_id']}` trial {c['trial']}: predicted `{c['predicted_product_id']}`, target "
               f"`{c['target_product_id']}`" for c in audit["non_exact_but_correct"][:LIST_LIMIT]], ""]
    for pair in s.get("judge_agreement") or []:
        a, b = pair["judges"]
        rows = [[t, x["n"], pct(x["agreement"]), num(x["kappa"], 3) if x["kappa"] is not None else "n/a (one label)",
                 x["only_first"], x["only_second"]]
                for t, x in [*pair["by_type"].items(), ("(all)", pair["overall"])]]
        lines += [f"## Judge agreement: {a} vs {b}",
                  *table(("rubric_type", "verdicts", "agreement", "Cohen's kappa", f"only {a} satisfied",
                          f"only {b} satisfied"), rows), "",
                  f"Disagreements: {len(pair['disagreements'])}" + (f" (first {LIST_LIMIT})"
                                                                    if len(pair["disagreements"]) > LIST_LIMIT else ""),
                  *[f"- `{d['task_id']}` trial {d['trial']} {d['rubric_id']} ({d['type']}): {a}={d[a]}, {b}={d[b]}"
                    for d in pair["disagreements"][:LIST_LIMIT]], ""]
    return lines


def plot_links() -> list[str]:
    return ["## Plots", *[f"![{name[:-4].replace('_', ' ')}](plots/{name})" for name in RUN_PLOTS], ""]


def runner_sections(summary: dict[str, Any]) -> list[str]:
    """What the runner retried, re-queued or restarted (only when it had to)."""
    stats = {k: v for k, v in (summary.get("runner") or {}).items() if isinstance(v, (int, float)) and v}
    if not stats:
        return []
    return ["", "## Runner", *[f"- {k.replace('_', ' ')}: {v}" for k, v in sorted(stats.items())]]


def task_audit_sections(summary: dict[str, Any]) -> list[str]:
    """How hard the task set is (ecab/construct/validity.py): the audit headline, or why there is none."""
    audit = summary.get("task_audit")
    if not audit:
        return []
    lines = ["", "## Task-set audit", f"- {audit.get('headline', 'not audited')}"]
    if audit.get("status") == "audited":
        lines.append(f"- Source: {audit.get('source')}")
        rows = [[intent, pct(g["query_singles_out"]), *[pct(g["load_bearing"].get(s)) for s in
                                                        ("query", "persona", "clarification")]]
                for intent, g in (audit.get("by_intent") or {}).items()]
        lines += ["", *table(("intent", "query singles out", "LB query", "LB persona", "LB clarification"), rows)]
    return lines + [""]


def render_markdown(summary: dict[str, Any]) -> str:
    warnings = [f"**Warning:** {w}" for w in summary.get("warnings") or []]
    return "\n".join(([*warnings, ""] if warnings else []) + original_sections(summary) + task_audit_sections(summary) + ecab_sections(summary)
                     + runner_sections(summary)
                     + variance_sections(summary) + difficulty_sections(summary) + interaction_sections(summary)
                     + failure_sections(summary) + audit_sections(summary) + plot_links())


"""The run page's content, built from the run's summary.json (docs/architecture.md §9) and manifest: the
headline metrics with their bootstrap intervals, the paper's tables and ecab's analyses as plain tables
(title, headers, rows of display strings), and the manifest's provenance lines.

Numbers are formatted with reduce's own `pct`/`num`, so the page reads like summary.md. A summary written
before some section existed simply lacks that table.
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Callable

from ecab.reduce.report import num, pct
from ecab.view.episodes import ROW_COLUMNS

Table = dict[str, Any]


def _ci_text(ci: dict[str, Any] | None) -> str | None:
    if not ci or ci.get("low") is None:
        return None
    return f"[{ci['low'] * 100:.1f}, {ci['high'] * 100:.1f}]"


def _with_ci(rate: float | None, ci: dict[str, Any] | None) -> str:
    text = _ci_text(ci)
    return pct(rate) + (f" {text}" if text else "")


def _variance(s: dict[str, Any], *path: str) -> dict[str, Any] | None:
    node: Any = s.get("variance") or {}
    for key in path:
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else None


def headline(s: dict[str, Any]) -> list[dict[str, Any]]:
    """The cards at the top of the run page."""
    pass_k = (s.get("variance") or {}).get("pass_k") or {}
    cards = [
        {"label": "accuracy", "value": pct(s.get("overall_accuracy")), "ci": _ci_text(_variance(s, "accuracy")),
         "note": f"{s.get('total_correct', 0)} correct of {s.get('scored_samples', s.get('evaluated_samples', 0))} "
                 f"scored (exact {s.get('exact_match_correct', 0)})"},
        {"label": "rubric satisfaction", "value": pct(s.get("overall_rubric_satisfaction")),
         "ci": _ci_text(_variance(s, "rubric_satisfaction")),
         "note": f"{s.get('satisfied_rubrics', 0)} of {s.get('total_rubrics', 0)} rubrics"},
        {"label": "finished", "value": pct(s.get("prediction_finished_rate")),
         "note": f"valid recommendation {pct(s.get('valid_finish_rate'))}"},
        {"label": "avg tool calls", "value": num(s.get("avg_tool_calls"), 1),
         "note": f"median {num(s.get('median_tool_calls'), 1)}; every call used "
                 f"{pct((s.get('budget') or {}).get('used_every_call_rate'))}, cut off at the cap "
                 f"{pct((s.get('budget') or {}).get('cap_reached_rate'))}"},
        {"label": "episodes", "value": str(s.get("total_samples", 0)),
         "note": f"evaluated {s.get('evaluated_samples', 0)}, runtime errors {s.get('runtime_error_count', 0)}"},
    ]
    if len(pass_k) > 1:
        top = max(pass_k, key=int)
        cards.append({"label": f"pass^{top}", "value": pct(pass_k[top]["value"]),
                      "note": f"over {pass_k[top]['tasks']} tasks; flip rate "
                              f"{pct(((s.get('variance') or {}).get('flips') or {}).get('rate'))}"})
    # what makes the numbers mean something else (reduce/interaction.py run_warnings) comes first
    cards[:0] = [{"label": "warning", "value": "read this first", "note": w} for w in s.get("warnings") or []]
    cost = ((s.get("tokens_and_cost") or {}).get("total") or {})
    cards.append({"label": "cost", "value": dollars(cost.get("cost_usd", 0.0), 4),
                  "note": f"{cost.get('input_tokens', 0):,} in / {cost.get('output_tokens', 0):,} out tokens"})
    return cards


def _table(title: str, headers: list[str], rows: list[list[Any]], note: str | None = None) -> Table:
    return {"title": title, "headers": headers, "rows": [[str(c) for c in row] for row in rows],
            **({"note": note} if note else {})}


def by_source(s: dict[str, Any]) -> Table:
    failures = s.get("failure_by_source") or {}
    rows = [[src, g["count"], g["satisfied"], _with_ci(g["satisfaction"] if g["count"] else None,
                                                       _variance(s, "by_source", src)),
             pct((failures.get(src) or {}).get("failure_rate")) if g["count"] else "n/a", g.get("unscored", 0)]
            for src, g in (s.get("by_source") or {}).items()]
    return _table("Rubric satisfaction by source (Table 4)",
                  ["source", "rubrics", "satisfied", "satisfaction [95% CI]", "failure rate", "unscored"], rows)


def by_rubric_type(s: dict[str, Any]) -> Table:
    rows = [[t, g["count"], g["satisfied"], pct(g["satisfaction"]), g.get("unscored", 0),
             ", ".join(f"{m} {n}" for m, n in (g.get("methods") or {}).items() if n)]
            for t, g in (s.get("by_rubric_type") or {}).items()]
    return _table("Rubric satisfaction by type", ["type", "rubrics", "satisfied", "satisfaction", "unscored",
                                                  "judged by"], rows)


def _groups(title: str, groups: dict[str, dict[str, Any]], ci: Callable[[str], tuple] | None = None,
            label: str = "group") -> Table:
    rows = []
    for name, g in groups.items():
        acc_ci, sat_ci = ci(name) if ci else (None, None)
        rows.append([name, g["count"], g["evaluated_samples"], g["correct"], _with_ci(g["accuracy"], acc_ci),
                     _with_ci(g["rubric_satisfaction"], sat_ci)])
    return _table(title, [label, "episodes", "evaluated", "correct", "accuracy", "rubric satisfaction"], rows)


def by_intent(s: dict[str, Any]) -> Table:
    def ci(intent: str) -> tuple:
        return _variance(s, "by_intent", intent, "accuracy"), _variance(s, "by_intent", intent, "rubric_satisfaction")
    return _groups("Accuracy by intent (Table 9, 95% CI)", s.get("by_intent") or {}, ci, "intent")


def _added_by_last_calls(budget: dict[str, Any]) -> str:
    """What the last calls of the budget added to accuracy: `accuracy_added_by_last_calls` ({low, high,
    value}: calls low+1 to high), or the fixed 76-100 window of summaries written before it existed."""
    last = budget.get("accuracy_added_by_last_calls")
    if isinstance(last, dict) and last.get("low") is not None and last.get("high") is not None:
        label, added = f"calls {int(last['low']) + 1}-{int(last['high'])}", last.get("value")
    else:
        label, added = "calls 76-100", budget.get("accuracy_added_by_calls_76_100")
    return f"accuracy added by {label}: {'n/a' if added is None else pct(added)}"


def call_budget(s: dict[str, Any]) -> Table:
    budget = s.get("budget") or {}
    rows = [[f"{k} calls", pct(v)] for k, v in (budget.get("accuracy_if_cut_at") or {}).items()]
    note = (f"budget {budget.get('budget')}; every call used in {budget.get('used_every_call_count', 0)} episodes "
            f"({pct(budget.get('used_every_call_rate'))}), cut off at the cap in "
            f"{budget.get('cap_reached_count', 0)} ({pct(budget.get('cap_reached_rate'))}); "
            f"{_added_by_last_calls(budget)}")
    return _table("Call budget: accuracy if every trajectory were cut after k calls", ["cut at", "accuracy"],
                  rows, note)


def terminations(s: dict[str, Any]) -> Table:
    counts = s.get("terminations") or {}
    total = sum(counts.values()) or 1
    return _table("Terminations", ["termination", "episodes", "share"],
                  [[t, n, pct(n / total)] for t, n in counts.items()])


def dollars(value: float | None, digits: int) -> str:
    """A cost; None is a cost ecab could not price (an own endpoint without prices: reduce/usage.py)."""
    return "unknown" if value is None else f"${value:.{digits}f}"


def tokens_and_cost(s: dict[str, Any]) -> Table:
    usage = s.get("tokens_and_cost") or {}

    def row(scope: str, u: dict[str, Any]) -> list[Any]:
        total, mean = u.get("total") or {}, u.get("mean_per_episode") or {}
        return [scope, u.get("episodes", 0), f"{total.get('input_tokens', 0):,}", f"{total.get('output_tokens', 0):,}",
                f"{total.get('reasoning_tokens', 0):,}", dollars(total.get("cost_usd", 0.0), 4),
                dollars(mean.get("cost_usd", 0.0), 6)]
    rows = [row("all episodes", usage)] if usage else []
    rows += [row(f"model {m}", u) for m, u in (usage.get("by_model") or {}).items()]
    judge = usage.get("judge") or {}
    if judge.get("episodes"):
        total = judge.get("total") or {}
        rows.append(["LLM judge", judge["episodes"], f"{total.get('input_tokens', 0):,}",
                     f"{total.get('output_tokens', 0):,}", "", f"${total.get('cost_usd', 0.0):.4f}",
                     f"${(judge.get('mean_per_episode') or {}).get('cost_usd', 0.0):.6f}"])
    return _table("Tokens and cost", ["scope", "episodes", "input tokens", "output tokens", "reasoning tokens",
                                      "cost", "cost per episode"], rows)


def interaction(s: dict[str, Any]) -> Table:
    inter = s.get("interaction") or {}
    clar = s.get("clarification") or {}
    rows = [[f"calls to {tool} (mean)", num(v, 2)] for tool, v in (inter.get("calls_per_tool_mean") or {}).items()]
    rows += [["episodes that asked the user", pct(inter.get("ask_user_episode_rate"))],
             ["first ask_user position (mean, 0 = first call)", num(inter.get("first_ask_user_position_mean"))],
             ["profile read", pct(inter.get("profile_read_rate"))],
             ["clarification slots revealed", f"{clar.get('slots_revealed', 0)} of "
                                               f"{clar.get('total_clarification_slots', 0)} "
                                               f"({pct(clar.get('reveal_rate'))})"],
             ["questions that revealed nothing", f"{clar.get('questions_revealed_nothing', 0)} of "
                                                 f"{clar.get('questions_asked', 0)}"]]
    return _table("Interaction (Table 8)", ["measure", "value"], rows)


def latency(s: dict[str, Any]) -> Table:
    lat = s.get("latency") or {}
    rows = [[name, num(v.get("mean"), 3), num(v.get("p50"), 3), num(v.get("p95"), 3)]
            for name, v in lat.items() if isinstance(v, dict)]
    note = f"LLM retries {lat.get('llm_retries', 0)} ({lat.get('llm_retries_in_runtime_errors', 0)} in runtime errors)"
    return _table("Latency (seconds)", ["what", "mean", "p50", "p95"], rows, note)


def pass_k(s: dict[str, Any]) -> Table | None:
    variance = s.get("variance") or {}
    rows = [[f"pass^{k}", pct(v["value"]), v["tasks"]] for k, v in (variance.get("pass_k") or {}).items()]
    flips = variance.get("flips") or {}
    if not rows:
        return None
    return _table("Trials: pass^k", ["k", "value", "tasks"], rows,
                  f"flip rate {pct(flips.get('rate'))} ({flips.get('flipped', 0)} of {flips.get('tasks', 0)} "
                  f"tasks with 2+ trials disagree)" if flips.get("tasks") else None)


def failure_reasons(s: dict[str, Any]) -> Table:
    reasons = s.get("top_failure_reasons") or {}
    return _table("Top failure reasons", ["reason", "rubrics"], [[reason, n] for reason, n in reasons.items()])


def tables(s: dict[str, Any]) -> list[Table]:
    """Every table of the run page, in reading order."""
    out = [by_source(s), by_rubric_type(s), by_intent(s),
           _groups("Accuracy by main category", s.get("by_main_category") or {}, label="category"),
           _groups("Accuracy by implicit query requirements (Table 7)", s.get("by_implicit_count") or {},
                   label="implicit"),
           _groups("Accuracy by voucher kind", s.get("by_voucher_kind") or {}, label="voucher"),
           call_budget(s), terminations(s), tokens_and_cost(s), interaction(s), latency(s), pass_k(s),
           failure_reasons(s)]
    return [t for t in out if t is not None and t["rows"]]


def progress_cards(status: Any, rows: list[list[Any]]) -> list[dict[str, Any]]:
    """The cards of a run in progress: how far it has got and what its recorded episodes already say (the
    accuracy waits for the judge, which runs at the end). `rows` are the episode list's rows (ROW_COLUMNS)."""
    col = {name: k for k, name in enumerate(ROW_COLUMNS)}
    calls = [row[col["calls"]] for row in rows]
    cost = sum(row[col["cost"]] or 0.0 for row in rows)
    return [
        {"label": "progress", "value": f"{status.done} of {status.total if status.total is not None else '?'}",
         "note": "episodes recorded; judged and summarized when the run finishes"},
        {"label": "avg tool calls", "value": num(sum(calls) / len(calls) if calls else None, 1),
         "note": f"over {len(calls)} recorded episodes"},
        {"label": "cost so far", "value": f"${cost:.4f}",
         "note": f"{sum(row[col['tokens']] for row in rows):,} tokens"},
    ]


def progress_tables(rows: list[list[Any]]) -> list[Table]:
    """The terminations of the episodes recorded so far (the one table a run in progress already has)."""
    column = ROW_COLUMNS.index("termination")
    counts = Counter(row[column] for row in rows)
    return [t for t in [terminations({"terminations": counts})] if t["rows"]]


def provenance(manifest: dict[str, Any], summary: dict[str, Any]) -> list[list[str]]:
    """(what, value) lines: the hashes that identify the run, the catalog, versions, times, runner, judge."""
    lines = [["run name", manifest.get("run_name")], ["model", summary.get("model")],
             ["judge", summary.get("judge_model")], ["config hash", manifest.get("config_hash")],
             ["task set hash", manifest.get("task_set_hash")], ["tasks", manifest.get("n_tasks")],
             ["catalog fingerprint", manifest.get("catalog_fingerprint")],
             ["started", manifest.get("started_at")], ["finished", manifest.get("finished_at")]]
    lines += [[f"version {name}", version] for name, version in (manifest.get("versions") or {}).items()]
    runner = manifest.get("runner_stats") or {}
    if runner:
        lines.append(["runner", ", ".join(f"{k} {v}" for k, v in runner.items() if not isinstance(v, dict))])
    admitted = runner.get("admission") or {}
    if admitted.get("enabled"):
        # Fewer than runner.concurrency in flight means the harness's CPU, not the setting, was the limit.
        lines.append(["episodes in flight", f"mean {admitted['mean_in_flight']:g}, peak {admitted['peak_in_flight']} "
                      f"of {admitted['limit']} allowed (started as fast as the harness kept up)"])
    return [[k, str(v)] for k, v in lines if v not in (None, "")]

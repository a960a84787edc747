"""The report's data and command (ecab/view/): what it embeds agrees with the run folder and the summary,
the compare numbers are paired correctly, the file is self-contained, and the CLI and server work. The
rendered page itself is tested in a real browser by tests/view/test_view_browser.py."""
import re
import urllib.request
from collections import Counter

import pytest

from ecab.reduce.episodes import join_episodes
from ecab.runs import RunFolder
from ecab.schema import Step, Task, Trajectory
from ecab.view import report_after_run
from ecab.view.__main__ import main as view_main
from ecab.view.compare import paired
from ecab.view.payload import load_run
from ecab.view.server import start
from ecab.view.timeline import build_timeline
from ecab.view.writer import SHARED_KEY, render, shared_strings, write_report
from ecab.view.products import display_value
from ecab.view.run_page import call_budget
from ecab.view.writer import compare_name
from report_data import embedded
from run_copies import copy_run

# Every test here reads the session's `view_runs` (two whole runs): under pytest-xdist one worker builds them
# for all (`--dist loadgroup`, the Makefile's XDIST).
pytestmark = pytest.mark.xdist_group("view_runs")


@pytest.fixture(scope="module")
def heuristic(view_runs):
    return load_run(view_runs["heuristic"])


def test_rows_agree_with_the_summary(heuristic):
    run, summary = heuristic, heuristic.summary
    rows = [dict(zip(run.main["columns"], row)) for row in run.main["rows"]]
    assert len(rows) == summary["total_samples"] == len(run.details)
    outcomes = Counter(r["outcome"] for r in rows)
    assert outcomes["correct"] == summary["total_correct"]
    assert outcomes["runtime_error"] == summary["runtime_error_count"]
    assert sum(r["exact"] for r in rows) == summary["exact_match_correct"]
    assert Counter(r["termination"] for r in rows) == +Counter(summary["terminations"])
    assert sum(r["calls"] for r in rows) / len(rows) == pytest.approx(summary["avg_tool_calls"], abs=1e-3)
    failed_by_source = Counter(s for r in rows for s in r["failed_sources"])
    for source, tally in summary["failure_by_source"].items():
        assert (failed_by_source[source] > 0) == (tally["failed"] > 0)
    assert {r["task"] for r in rows} == set(run.main["tasks"])


def test_episode_details_carry_every_step_and_verdict(heuristic, view_runs):
    folder = RunFolder(view_runs["heuristic"])
    manifest, tasks, trajectories, judgements = folder.load()
    episodes = join_episodes(tasks, trajectories, judgements)
    marked_profile = marked_reveal = 0
    for e, detail in zip(episodes, heuristic.details):
        assert detail["unit"] == e.traj.unit
        assert [s["call"] for s in detail["steps"]] == [s.call_index for s in e.traj.steps]
        assert [s.get("tool") for s in detail["steps"]] == [s.tool for s in e.traj.steps]
        assert {v["id"]: v.get("satisfied") for v in detail["verdicts"]} == \
            {v.rubric_id: v.satisfied for v in e.judgement.verdicts}
        persona = [r.id for r in e.task.rubrics if r.info_source == "persona"]
        for step in detail["steps"]:
            if step.get("tool") == "get_user_profile":
                assert step["profile"] == persona
                marked_profile += 1
            if "reveal" in step:
                slot = next(s for s in e.task.clarification_script.clarification_slots
                            if s.slot_id == step["reveal"]["slot"])
                assert step["reveal"]["rubrics"] == slot.linked_rubric_ids
                marked_reveal += 1
        if e.traj.recommended_id:
            assert detail["recommended_product"]["product_id"] == e.traj.recommended_id
    assert marked_profile and marked_reveal   # the heuristic reads the profile and asks
    assert heuristic.main["product_source"].startswith("the run's catalog")


def test_where_a_failed_rubric_could_have_been_learned(heuristic):
    seen = set()
    for detail in heuristic.details:
        reads = [s["call"] for s in detail["steps"] if s.get("tool") == "get_user_profile"]
        for verdict in detail["verdicts"]:
            learn = verdict["learn"]
            seen.add(learn["where"])
            if learn["where"] == "profile":
                assert learn["call"] == (reads[0] if reads else None)
            if learn["where"] == "clarification" and learn["call"] is not None:
                step = next(s for s in detail["steps"] if s["call"] == learn["call"])
                assert step["reveal"]["slot"] == learn["slot"] and verdict["id"] in step["reveal"]["rubrics"]
    assert seen == {"query", "profile", "clarification"}


def test_timeline_pairs_messages_with_steps():
    """A tool-less turn, a turn with two calls (one executed), a harness note and an LLM retry, in order."""
    traj = Trajectory(id="t", trajectory=[
        {"role": "system", "content": "SYSTEM"}, {"role": "user", "content": "the query"},
        {"role": "assistant", "content": "thinking"},
        {"role": "user", "content": "Please call a tool."},
        {"role": "assistant", "content": "two at once", "tool_calls": [
            {"id": "a", "function": {"name": "ask_user", "arguments": "{\"question\": \"color?\"}"}},
            {"id": "b", "function": {"name": "get_user_profile", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "{\"user_response\": \"red\"}"},
        {"role": "user", "content": "Only one tool call per turn."}],
        steps=[Step(index=1, agent_latency_s=0.5, retries=1),
               Step(index=2, call_index=1, tool="ask_user", arguments={"question": "color?"}, extra_calls=1,
                    revealed_slot="cl_1", tool_latency_s=0.01, input_tokens=10, output_tokens=3)],
        reasoning_trace=[{"type": "retry", "step": 1, "attempt": 1, "status": 429}])
    task = Task.from_dict({"id": "t", "intent_category": "product_search", "user_query": "the query",
                           "target_product": {"product_id": "P1"}, "rubrics": [{"id": "r1", "type": "attribute_match", "field": "details.Color",
                                                      "expected_value": "Red", "info_source": "clarification"}],
                           "clarification_script": {"clarification_slots": [
                               {"slot_id": "cl_1", "linked_rubric_ids": ["r1"], "trigger_keywords": ["color"],
                                "user_response": "red"}]}})
    timeline = build_timeline(traj, task)
    assert timeline["system"] == "SYSTEM"
    first, second = timeline["steps"]
    assert first["call"] == 0 and "tool" not in first and first["notes"] == ["Please call a tool."]
    assert first["retries"] == 1 and first["retry_log"] == [{"attempt": 1, "status": 429}]
    assert second["tool"] == "ask_user" and second["arguments"] == {"question": "color?"}
    assert second["result"] == "{\"user_response\": \"red\"}" and second["tokens"] == [10, 3, 0]
    assert [c["tool"] for c in second["extra_calls"]] == ["get_user_profile"]
    assert second["reveal"] == {"slot": "cl_1", "rubrics": ["r1"]}
    assert second["notes"] == ["Only one tool call per turn."]


def test_report_is_self_contained_and_both_encodings_agree(heuristic):
    packed, plain = render([heuristic]), render([heuristic], compress=False)
    for page in (packed, plain):
        assert not re.search(r"""(src|href)=["']?(https?:)?//""", page), "the report must not load anything"
        assert "{{" not in page.split('<script type="application/x-ecab"')[0]   # every marker was filled
    main_packed, chunks_packed = embedded(packed)
    main_plain, chunks_plain = embedded(plain)
    main_packed.pop("generated"), main_plain.pop("generated")
    assert main_packed == main_plain and chunks_packed == chunks_plain
    details = [d for key in sorted(chunks_packed) for d in chunks_packed[key]]
    assert len(details) == len(heuristic.details)
    spans = main_packed["runs"][0]["chunks"]
    assert spans[0][0] == 0 and spans[-1][1] == len(details)
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    assert len(packed) < len(plain) / 2


def test_repeated_long_strings_are_stored_once():
    long, other = "x" * 200, "y" * 200
    items = [{"a": long, "b": [long, other, "short"]}, {"c": long}]
    shared = shared_strings(items)
    assert shared["strings"] == [long]
    assert shared["items"] == [{"a": {SHARED_KEY: 0}, "b": [{SHARED_KEY: 0}, other, "short"]}, {"c": {SHARED_KEY: 0}}]


def test_run_page_content(heuristic):
    main, summary = heuristic.main, heuristic.summary
    cards = {c["label"]: c for c in main["cards"]}
    assert cards["accuracy"]["value"] == f"{summary['overall_accuracy'] * 100:.1f}%" and cards["accuracy"]["ci"]
    titles = [t["title"] for t in main["tables"]]
    for expected in ("by source", "by type", "by intent", "by main category", "Call budget", "Terminations",
                     "Tokens and cost"):
        assert any(expected in t for t in titles), expected
    assert main["audit"]["headline"] == summary["task_audit"]["headline"]
    provenance = dict(main["provenance"])
    manifest = RunFolder(heuristic.path).read_manifest()
    assert provenance["config hash"] == manifest["config_hash"]
    assert provenance["catalog fingerprint"] == manifest["catalog_fingerprint"]
    assert provenance["version ecab"] == manifest["versions"]["ecab"]
    admitted = manifest["runner_stats"]["admission"]
    assert provenance["episodes in flight"].startswith(f"mean {admitted['mean_in_flight']:g}, peak ")
    assert f"of {admitted['limit']} allowed" in provenance["episodes in flight"]
    assert {p["name"] for p in main["plots"]} == {p.name for p in (heuristic.path / "plots").glob("*.png")}
    assert all(p["src"].startswith("data:image/png;base64,") for p in main["plots"])


def test_paired_compare(view_runs, heuristic):
    other = load_run(view_runs["random"])
    result = paired(heuristic.episodes, other.episodes)
    assert result["pairs"] == len(heuristic.episodes) and result["only_baseline"] == result["only_other"] == 0
    h = {(e.task.id, e.traj.unit["trial"]): e for e in heuristic.episodes}
    r = {(e.task.id, e.traj.unit["trial"]): e for e in other.episodes}
    scored = [k for k in h if h[k].outcome.correct is not None and r[k].outcome.correct is not None]
    expected = sum(r[k].correct - h[k].correct for k in scored) / len(scored)
    acc = result["accuracy"]
    assert acc["delta"] == pytest.approx(expected, abs=1e-4) and acc["pairs"] == len(scored)
    assert acc["low"] <= acc["delta"] <= acc["high"]
    assert set(result["by_source"]) == {"query", "persona", "clarification"}
    assert set(result["by_intent"]) == {e.task.intent_category for e in heuristic.episodes}
    changed = {t for t in {k[0] for k in h}
               if sum(h[k].correct for k in h if k[0] == t) != sum(r[k].correct for k in r if k[0] == t)}
    assert {f["task"] for f in result["flips"]} == changed
    for flip in result["flips"]:
        assert all(heuristic.episodes[i].task.id == flip["task"] for i in flip["a"][2])
    same = paired(heuristic.episodes, heuristic.episodes)
    assert same["accuracy"]["delta"] == 0 and same["flips"] == []


def test_cli_writes_the_report_and_server_serves_it(view_runs, tmp_path, capsys):
    assert view_main([str(view_runs["heuristic"]), str(view_runs["random"]), "-o", str(tmp_path / "r.html")]) == 0
    assert f"wrote {tmp_path / 'r.html'}" in capsys.readouterr().out
    main, _ = embedded((tmp_path / "r.html").read_text(encoding="utf-8"))
    assert [r["name"] for r in main["runs"]] == ["heuristic", "random"]
    assert main["compare"]["labels"] == ["heuristic", "random"]
    assert [t["title"].split(":")[0] for t in main["compare"]["tables"]] == \
        ["Table 3", "Table 4", "Table 7", "Table 8", "Table 9"]
    server, url = start(tmp_path / "r.html")
    try:
        assert url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(url, timeout=10) as response:
            assert response.read() == (tmp_path / "r.html").read_bytes()
    finally:
        server.shutdown()
        server.server_close()
    assert view_main([str(tmp_path / "no-such-run")]) == 2
    assert "error:" in capsys.readouterr().err


def test_the_run_command_ends_with_the_report_path(view_runs):
    """`python -m ecab.run` (what `make run` runs) writes the report and names it on its last line."""
    report = view_runs["heuristic"] / "report.html"
    assert view_runs["heuristic_log"].strip().splitlines()[-1] == f"report: {report}"
    main, _ = embedded(report.read_text(encoding="utf-8"))
    assert [r["name"] for r in main["runs"]] == ["heuristic"] and main["compare"] is None


def test_default_paths_and_the_line_after_a_run(view_runs, capsys):
    path = report_after_run(view_runs["heuristic"])
    assert path == view_runs["heuristic"] / "report.html" and path.is_file()
    assert capsys.readouterr().out.strip() == f"report: {path}"
    both = write_report([view_runs["heuristic"], view_runs["random"]])
    assert both == view_runs["heuristic"].parent / "compare" / "compare-heuristic-vs-random.html"


def test_a_second_compare_does_not_overwrite_the_first(view_runs, tmp_path):
    """Compare reports are named by their runs (issue 29): A vs B, then A vs C, leaves both files."""
    study = tmp_path / "study"
    runs = {name: copy_run(view_runs[src], study / name)
            for name, src in (("a", "heuristic"), ("b", "random"), ("c", "random"))}
    first = write_report([runs["a"], runs["b"]])
    second = write_report([runs["a"], runs["c"]])
    assert (first.name, second.name) == ("compare-a-vs-b.html", "compare-a-vs-c.html")
    assert first.parent == second.parent == study / "compare" and first.is_file() and second.is_file()
    assert [r["name"] for r in embedded(first.read_text(encoding="utf-8"))[0]["runs"]] == ["a", "b"]
    long = [study / ("x" * 90), study / ("y" * 90)]
    name = compare_name(long)
    assert len(name) <= 130 and name.startswith("compare-xxx") and name != compare_name(long[::-1])
    assert compare_name([study / "a", tmp_path / "other" / "b"]) != "compare-a-vs-b.html"   # folders differ


def test_compare_names_of_different_runs_never_coincide(tmp_path):
    """Run names with -vs- in them (or at their edge) could be split two ways: p-vs-q + r and p + q-vs-r both
    joined to compare-p-vs-q-vs-r.html, the second page overwriting the first. They are hashed apart; names
    changed by the character filter too (`a b` and `a_b`). The common case keeps its readable name."""
    study = tmp_path / "study"
    pairs = [("p-vs-q", "r"), ("p", "q-vs-r"), ("a-vs", "b"), ("a", "vs-b"), ("a b", "c"), ("a_b", "c")]
    names = [compare_name([study / x, study / y]) for x, y in pairs]
    assert len(set(names)) == len(names)
    assert all(n.startswith("compare-") and n.endswith(".html") for n in names)
    assert compare_name([study / "p-vs-q", study / "r"]) == compare_name([study / "p-vs-q", study / "r"])
    assert compare_name([study / "a-vs", study / "c"]) != "compare-a-vs-vs-c.html"   # read two ways
    assert compare_name([study / "a_b", study / "c-vs"]) == "compare-a_b-vs-c-vs.html"   # read one way
    assert compare_name([study / "gpt-5-b10", study / "gpt-5=m@h-1-b10"]) == "compare-gpt-5-b10-vs-gpt-5=m@h-1-b10.html"


def test_failed_rubrics_name_the_step_that_consulted_their_source(heuristic):
    """Each rubric's `learn` names the step where its source was consulted (the first search for the query,
    the first profile read, the ask_user that revealed its slot) by turn, the episode page's jump target."""
    seen = Counter()
    for detail in heuristic.details:
        turns = {s["turn"]: s for s in detail["steps"]}
        assert len(turns) == len(detail["steps"])             # a turn names one step
        for verdict in detail["verdicts"]:
            learn = verdict["learn"]
            step = turns.get(learn["turn"])
            if learn["turn"] is None:
                seen[learn["where"], "never"] += 1
                continue
            assert step["call"] == learn["call"]
            seen[learn["where"], "step"] += 1
            if learn["where"] == "query":
                first = next(s for s in detail["steps"] if s.get("tool") == "search_products")
                assert step is first
            elif learn["where"] == "profile":
                assert step["tool"] == "get_user_profile"
            else:
                assert step["reveal"]["slot"] == learn["slot"] and verdict["id"] in step["reveal"]["rubrics"]
    assert {("query", "step"), ("profile", "step"), ("clarification", "step")} <= set(seen)


def test_nested_product_details_are_shown_as_text(heuristic):
    """Amazon's "Best Sellers Rank" is a mapping: the comparison shows "category: rank; ..." (it printed
    "[object Object]")."""
    assert display_value({"Electronics": 41256, "Power Banks": 1528}) == "Electronics: 41256; Power Banks: 1528"
    assert display_value([{"a": 1}, {"b": [1, 2]}]) == ["a: 1", "b: 1, 2"]
    assert display_value(["x", 2]) == ["x", 2] and display_value("text") == "text"
    shown = [p for d in heuristic.details for p in [d.get("recommended_product")] if p] + \
        [t["target"] for t in heuristic.main["tasks"].values()]
    ranks = [p["details"]["Best Sellers Rank"] for p in shown if "Best Sellers Rank" in p.get("details", {})]
    assert ranks and all(isinstance(r, str) and ": " in r for r in ranks)
    for product in shown:
        for value in product.get("details", {}).values():
            assert not isinstance(value, dict) and not any(isinstance(v, (dict, list)) for v in
                                                           (value if isinstance(value, list) else []))


def test_call_budget_names_the_last_calls_window():
    budget = {"budget": 80, "cap_reached_count": 1, "cap_reached_rate": 0.1, "accuracy_if_cut_at": {"60": 0.5},
              "cut_points": [60, 80], "accuracy_added_by_last_calls": {"low": 60, "high": 80, "value": 0.05}}
    assert "accuracy added by calls 61-80: 5.0%" in call_budget({"budget": budget})["note"]
    old = {"budget": 100, "accuracy_if_cut_at": {"75": 0.5}, "accuracy_added_by_calls_76_100": 0.1}
    assert "accuracy added by calls 76-100: 10.0%" in call_budget({"budget": old})["note"]
    none = {**budget, "accuracy_added_by_last_calls": {"low": 60, "high": 80, "value": None}}
    assert "calls 61-80: n/a" in call_budget({"budget": none})["note"]


def test_a_cost_ecab_could_not_price_reads_unknown_not_free():
    """reduce/usage.py mark_cost_unknown leaves cost_usd None for an own endpoint without prices."""
    from ecab.view import run_page
    summary = {"tokens_and_cost": {"episodes": 2, "total": {"input_tokens": 10, "cost_usd": None},
                                   "mean_per_episode": {"cost_usd": None}, "by_model": {}}}
    table = run_page.tokens_and_cost(summary)
    assert "unknown" in str(table) and "$0" not in str(table)


def test_an_own_endpoint_run_shows_its_label_and_unknown_costs(view_runs, tmp_path):
    """A run whose model section points at an own endpoint without prices: the report's model, its episode rows
    and its provenance say the run name's label, never the bare config name, and each episode's cost is None
    (the page says "cost unknown"), not $0, even for a run recorded when costs were stored as 0."""
    run_dir = copy_run(view_runs["heuristic"], tmp_path / "own")
    # recorded before manifests named the model: the label comes from config.yaml's model section
    (run_dir / "config.yaml").write_text("model:\n  name: gpt-5\n  model_id: x\n  base_url: http://h:1/v1\n",
                                         encoding="utf-8")
    folder = RunFolder(run_dir)
    manifest = {k: v for k, v in folder.read_manifest().items() if k not in ("model", "model_config")}
    folder.write_manifest({**manifest, "agent_prices": "unknown"})
    (run_dir / "summary.json").unlink()
    loaded = load_run(run_dir)
    label = "gpt-5=x@h-1"
    assert loaded.main["model"] == loaded.summary["model"] == label
    assert ["model", label] in loaded.main["provenance"]
    columns = loaded.main["columns"]
    rows = [dict(zip(columns, row)) for row in loaded.main["rows"]]
    assert all(r["cost"] is None for r in rows)      # (the rows' model: the trajectories', heuristic here)
    assert all(d["usage"]["cost_usd"] is None for d in loaded.details if "cost_usd" in d["usage"])
    assert any("cost_usd" in d["usage"] for d in loaded.details)

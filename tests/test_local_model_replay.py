"""Issue 31's acceptance: what real small models sent through `llama-server --jinja` (the trajectories in
../shared/real/local-model/: every call written as JSON text, braces doubled by a broken template, padding to the
token cap, invented tools and ids) is replayed by the simulator (`model.sim.replay`), turn by turn, to a real run.
With `model.tool_call_format=json` the episodes make tool calls and end by recommending or at the budget; with
the default `native` they end `no_tool_call`, as they did against the real server."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from test_run_guards import base, bench, tiny_task, write_lines  # noqa: F401 - a tiny benchmark and its catalog

from ecab.config import load_config
from ecab.llm.tool_text import calls_from_text
from ecab.run import main_job
from ecab.runs import RunFolder

LOCAL_MODEL = Path(__file__).resolve().parents[1].parent / "shared" / "real" / "local-model"
RECORDINGS = ("qwen05-b15", "qwen15-b6", "qwen15fix-req-b4")   # the three that ended no_tool_call for real


@pytest.fixture(scope="module")
def recordings() -> Path:
    if not (LOCAL_MODEL / f"{RECORDINGS[0]}.jsonl.gz").is_file():
        pytest.skip(f"the real local-model trajectories are not beside the clone ({LOCAL_MODEL})")
    return LOCAL_MODEL


def recorded(recording: Path) -> dict[str, list[str]]:
    """The recording's shopper queries, each with the assistant messages the model sent for it."""
    episodes = [json.loads(line) for line in gzip.open(recording, "rt", encoding="utf-8")]
    return {e["user_query"]: [m["content"] for m in e["trajectory"] if m["role"] == "assistant"] for e in episodes}


def replayed(base, tmp_path, recording: Path, fmt: str) -> list:   # noqa: F811
    """A run whose tasks ask what the recording's shoppers asked (so the simulator replays each episode's own
    messages), over the tiny benchmark's targets and catalog."""
    name = f"{recording.name.split('.')[0]}-{fmt}"
    tasks = [{**tiny_task(i), "id": f"replay-{i}", "user_query": query} for i, query in enumerate(recorded(recording))]
    path = write_lines(tmp_path / f"{name}.jsonl", tasks)
    main_job(load_config([*base, f"benchmark.path={path}", "model=sim", f"model.sim.replay={recording}",
                          f"model.tool_call_format={fmt}",
                          "model.sim.rate_429=0", "model.sim.rate_5xx=0", "budget=8", "runner.concurrency=2",
                          f"run.dir={tmp_path}", f"run.name={name}"]))
    return list(RunFolder(tmp_path / name).latest_trajectories().values())


@pytest.mark.parametrize("recording", RECORDINGS)
def test_replayed_text_calls_run_with_the_json_format(recordings, base, tmp_path, recording):  # noqa: F811
    path = recordings / f"{recording}.jsonl.gz"
    trajectories = replayed(base, tmp_path, path, "json")
    said = recorded(path)
    assert len(trajectories) == len(said)
    for traj in trajectories:
        first = next(m for m in traj.trajectory if m["role"] == "assistant")
        expected = calls_from_text(said[traj.user_query][0], "json").calls
        assert [c["function"]["name"] for c in first.get("tool_calls", [])] == [c.name for c in expected], \
            "each episode got its own recorded messages"
        if any(calls_from_text(text, "json").calls for text in said[traj.user_query]):
            assert traj.termination in ("recommended", "invalid_recommendation", "budget_exhausted"), traj.error
            assert traj.total_tool_calls >= 1
        else:   # the model wrote no call at all, only thoughts: it ends as it did against the real server
            assert traj.termination == "no_tool_call"
    parsed = [m for t in trajectories for m in t.trajectory if m.get("tool_calls_parsed_from") == "json"]
    assert parsed, "the calls were read from the text, and the record says so"


def test_the_same_replies_end_no_tool_call_with_native_calls(recordings, base, tmp_path):  # noqa: F811
    trajectories = replayed(base, tmp_path, recordings / f"{RECORDINGS[0]}.jsonl.gz", "native")
    assert trajectories and {t.termination for t in trajectories} == {"no_tool_call"}

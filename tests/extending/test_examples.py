"""The worked examples in examples/ (docs/extending.md) run as a user runs them, without editing ecab: the
plain agent and the loop-owning agent with `python -m ecab.run model=<example>`, the loop-owning agent and the
custom judge under runner=ray, the custom judge on a finished run with `python -m ecab.judge`, and
`ecab.evaluate` from Python."""
import gzip
import json
import subprocess
import sys

import pytest

from conftest import REPO_ROOT, SMALL_RUN

import ecab


def run_cli(module, *args, cwd=REPO_ROOT, timeout=900):
    proc = subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-3000:])
    return proc


def trajectories(folder):
    return [json.loads(line) for path in sorted((folder / "trajectories").glob("*.jsonl.gz"))
            for line in gzip.open(path, "rt")]


@pytest.fixture(scope="module")
def common(small_run_cache, tmp_path_factory):
    return [*SMALL_RUN, "benchmark.limit=4", f"cache_dir={small_run_cache}",
            f"run.dir={tmp_path_factory.mktemp('example-runs')}"]


def test_the_plain_python_agent_runs_by_its_config_name(common):
    run_cli("ecab.run", *common, "model=example-agent", "run.name=plain")
    folder = next(a for a in common if a.startswith("run.dir=")).split("=", 1)[1]
    records = trajectories(__import__("pathlib").Path(folder) / "plain")
    assert len(records) == 4
    for record in records:
        tools = [s["tool"] for s in record["steps"]]
        assert tools == ["get_user_profile", "ask_user", "search_products", "recommend_product"]
        assert record["model"] == "example-agent" and record["termination"] == "recommended"


def test_the_loop_agent_and_the_custom_judge_run_under_ray(common):
    from pathlib import Path
    run_cli("ecab.run", *common, "model=example-loop-agent", "judge=example-judge", "runner=ray",
            "runner.workers=1", "run.name=loop-ray")
    folder = Path(next(a for a in common if a.startswith("run.dir=")).split("=", 1)[1]) / "loop-ray"
    records = trajectories(folder)
    assert len(records) == 4
    assert all(r["steps"][0]["tool"] == "get_user_profile" for r in records)
    assert {r["termination"] for r in records} <= {"recommended", "no_tool_call"}
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["judge_model"] == "exact"
    assert summary["judge_scores"]["budget_left"]["n"] == 4
    assert 0 < summary["judge_scores"]["budget_left"]["mean"] < 1
    verdicts = [json.loads(line) for line in gzip.open(folder / "verdicts.exact.jsonl.gz", "rt")]
    assert all(v["judge"] == "exact" and v["correct"] == v["exact_product_match"] for v in verdicts)


def test_evaluate_from_python_and_rejudging_with_the_custom_judge(common):
    result = ecab.evaluate([*common, "model=oracle", "run.name=oracle", "benchmark.limit=5"], report=False)
    assert result.accuracy == 1.0 and result.summary["total_samples"] == 5
    run_cli("ecab.judge", str(result.path), "judge=example-judge")
    verdicts = [json.loads(line) for line in gzip.open(result.path / "verdicts.exact.jsonl.gz", "rt")]
    assert len(verdicts) == 5 and all(v["correct"] for v in verdicts)   # the oracle recommends every target


def test_evaluate_takes_keywords_and_refuses_a_bad_key(common):
    with pytest.raises(ecab.ConfigError, match="model"):
        ecab.evaluate([*common], model="no-such-model")
    assert ecab.api.as_overrides(["a=1"], benchmark={"limit": 5, "name": None}, trials=2) == \
        ["a=1", "benchmark.limit=5", "benchmark.name=null", "trials=2"]

"""`python -m ecab.run` end to end on a small generated benchmark: the oracle self-check, the baselines'
ordering, resume, and the one-line errors a user sees for bad input."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ecab.config import ConfigError, load_config, preflight
from ecab.run import main_job
from ecab.runs import RunFolder
from conftest import SMALL_RUN

ROOT = Path(__file__).resolve().parents[1]
SMALL = SMALL_RUN


@pytest.fixture(scope="module")
def cache_dir(small_run_cache):
    return small_run_cache


def run_job(cache_dir, run_dir, *overrides):
    cfg = load_config([*SMALL, f"cache_dir={cache_dir}", f"run.dir={run_dir}", *overrides])
    return main_job(cfg)


@pytest.fixture(scope="module")
def oracle_summary(cache_dir, tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("runs")
    return run_dir, run_job(cache_dir, run_dir, "model=oracle", "run.name=oracle")


def test_oracle_self_check_is_perfect(oracle_summary):
    run_dir, summary = oracle_summary
    assert summary["evaluated_samples"] >= 12
    assert summary["overall_accuracy"] == 1.0 and summary["exact_match_correct"] == summary["evaluated_samples"]
    assert summary["overall_rubric_satisfaction"] == 1.0
    folder = RunFolder(run_dir / "oracle")
    for name in ("config.yaml", "manifest.json", "tasks.jsonl", "verdicts.rules.jsonl.gz", "summary.json",
                 "summary.md", "trajectories/part-local.jsonl.gz"):
        assert (folder.path / name).exists(), name
    assert sorted(p.name for p in folder.path.glob("verdicts*")) == ["verdicts.rules.jsonl.gz"], "one file per judge"
    manifest = json.loads(folder.manifest_path.read_text())
    assert manifest["catalog_fingerprint"] and manifest["config_hash"] and manifest["task_set_hash"]
    assert len(folder.latest_trajectories()) == summary["total_samples"]


def test_summary_carries_the_task_set_audit(oracle_summary):
    """The generated benchmark's audit (written at construction) reaches the run's summary (issue 15)."""
    run_dir, summary = oracle_summary
    audit = summary["task_audit"]
    assert audit["status"] == "audited" and audit["source"] == "benchmark manifest"
    assert audit["tasks"] == summary["total_samples"] and 0.0 <= audit["query_singles_out"] <= 1.0
    assert set(audit["load_bearing"]) == {"query", "persona", "clarification"}
    assert audit["headline"] in (run_dir / "oracle" / "summary.md").read_text(encoding="utf-8")


def test_baselines_are_ordered(cache_dir, tmp_path, oracle_summary):
    heuristic = run_job(cache_dir, tmp_path, "model=heuristic", "run.name=h")
    rand = run_job(cache_dir, tmp_path, "model=random", "run.name=r")
    assert rand["overall_accuracy"] < heuristic["overall_accuracy"] < 1.0
    assert heuristic["terminations"]["recommended"] == heuristic["total_samples"]


def test_rerun_resumes_and_changed_config_is_refused(cache_dir, oracle_summary, capsys):
    run_dir, first = oracle_summary
    again = run_job(cache_dir, run_dir, "model=oracle", "run.name=oracle")
    assert "resuming" in capsys.readouterr().out
    assert again["overall_accuracy"] == first["overall_accuracy"]
    assert len(RunFolder(run_dir / "oracle").latest_trajectories()) == first["total_samples"]
    with pytest.raises(ConfigError, match="different config hash"):
        run_job(cache_dir, run_dir, "model=oracle", "run.name=oracle", "budget=7")


@pytest.mark.parametrize("overrides,message", [
    (["model=gpt-9"], "unknown model 'gpt-9'; choose one of: .*heuristic, .*oracle"),
    (["catalog.productz=3"], "unknown config key 'catalog.productz'"),
    (["budget=[1"], "bad override 'budget=[1'"),
    (["-m", "model=oracle,nope"], "unknown model 'nope'"),
])
def test_bad_overrides_are_one_clear_line(overrides, message):
    with pytest.raises(ConfigError, match=message.replace("[", r"\[")):
        preflight(overrides)


def test_cli_error_is_one_line_and_exit_2(tmp_path):
    env = {**os.environ, "ECAB_CACHE_DIR": str(tmp_path)}
    for args, expected in [(["model=gpt-9"], "unknown model"),
                           (["benchmark=file", f"benchmark.path={tmp_path}/none.jsonl"], "file not found"),
                           (["budget=0"], "budget must be a positive integer")]:
        proc = subprocess.run([sys.executable, "-m", "ecab.run", *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2, proc.stderr
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("ecab: error:") and expected in lines[0], proc.stderr


def test_malformed_benchmark_file_names_the_line(tmp_path):
    bad = tmp_path / "b.jsonl"
    good = json.dumps({"id": "t1", "intent_category": "product_search", "user_query": "a laptop",
                       "target_product": {"product_id": "P1", "title": "Laptop"}, "rubrics": []})
    bad.write_text(good + "\n" + good[:50] + "\n")
    cfg = load_config(["benchmark=file", f"benchmark.path={bad}", f"cache_dir={tmp_path}", "catalog=targets"])
    with pytest.raises(Exception, match=r"b\.jsonl:2: malformed JSON"):
        main_job(cfg)

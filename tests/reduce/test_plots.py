"""The PNG charts render from summaries alone: per run, for a comparison, and for empty edge cases."""
from __future__ import annotations

import copy

import pytest
from test_reduce import make_run, write_run_folder

from ecab.reduce import reduce_run, summarize
from ecab.reduce.plots import COMPARE_PLOTS, RUN_PLOTS, render_compare_plots, render_run_plots

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def assert_pngs(paths, names, min_bytes=8_000):
    assert [p.name for p in paths] == list(names)
    for path in paths:
        data = path.read_bytes()
        assert data[:8] == PNG_MAGIC, path
        assert len(data) > min_bytes, f"{path} is only {len(data)} bytes"


@pytest.fixture(scope="module")
def summary():
    return summarize(*make_run(), model="m", judge_model="rules")


def test_reduce_run_writes_the_four_run_plots(tmp_path):
    run_dir = write_run_folder(tmp_path, make_run())
    reduce_run(run_dir)
    assert_pngs([run_dir / "plots" / name for name in RUN_PLOTS], RUN_PLOTS)
    # re-reduce rebuilds them from disk
    (run_dir / "plots" / RUN_PLOTS[0]).unlink()
    reduce_run(run_dir)
    assert (run_dir / "plots" / RUN_PLOTS[0]).is_file()


def test_run_plots_without_data_still_render(summary, tmp_path):
    empty = copy.deepcopy(summary)
    for group in empty["by_source"].values():
        group["count"] = 0
    for group in empty["by_intent"].values():
        group["evaluated_samples"] = 0
    empty["budget"]["accuracy_if_cut_at"] = {}
    empty["interaction"]["first_ask_vs_accuracy"] = []
    del empty["variance"]
    assert_pngs(render_run_plots(empty, tmp_path), RUN_PLOTS, min_bytes=2_000)


def test_compare_plots_with_close_points_and_a_run_that_never_asked(summary, tmp_path):
    runs = []
    for label, accuracy, position, searches, budget in [("model-a", 0.50, 0.10, 3.0, 100),
                                                        ("model-b", 0.52, 0.12, 15.0, 100),
                                                        ("model-b @50", 0.40, 0.12, 9.0, 50),
                                                        ("model-c", 0.20, None, 1.0, 100)]:
        s = copy.deepcopy(summary)
        s["model"] = label.split(" ")[0]
        s["overall_accuracy"] = accuracy
        s["interaction"]["first_ask_user_position_mean"] = position
        s["interaction"]["searches_mean"] = searches
        s["budget"]["budget"] = budget
        runs.append((label, s))
    assert_pngs(render_compare_plots(runs, tmp_path), COMPARE_PLOTS)

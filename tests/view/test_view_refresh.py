"""The report follows the run (issue 29): every command that rewrites a run's summary rebuilds its report.html
(`python -m ecab.reduce`, `python -m ecab.judge`), a report that cannot be built is one warning line and
never a failed command, and a folder of runs (or a sweep) gets an index page linking every run's report."""
import json
import re

import pytest

from ecab.reduce.__main__ import main as reduce_main
from ecab.reduce.rejudge import main as judge_main
from ecab.runs import RunFolder
from ecab.view.__main__ import main as view_main
from ecab.view.server import start_index
from report_data import embedded
from run_copies import copy_run, get, in_progress

# Every test here reads the session's `view_runs` (two whole runs): under pytest-xdist one worker builds them
# for all (`--dist loadgroup`, the Makefile's XDIST).
pytestmark = pytest.mark.xdist_group("view_runs")



def report_main(folder):
    return embedded((folder / "report.html").read_text(encoding="utf-8"))[0]["runs"][0]


@pytest.fixture
def run(view_runs, tmp_path):
    folder = copy_run(view_runs["heuristic"], tmp_path / "run")
    (folder / "report.html").unlink()
    return folder


def test_reduce_rebuilds_the_report(run, capsys):
    summary = RunFolder(run).read_summary()
    assert reduce_main([str(run), "--no-plots"]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == f"report: {run / 'report.html'}"
    cards = {c["label"]: c["value"] for c in report_main(run)["cards"]}
    assert cards["accuracy"] == f"{summary['overall_accuracy'] * 100:.1f}%"


def test_rejudging_rebuilds_the_report(run, capsys):
    """The report names the judge that judged last (it kept saying "judge rules" after a re-judge)."""
    manifest = RunFolder(run).read_manifest()
    manifest["judge_model"] = "stale judge"        # what the report said before this re-judge
    RunFolder(run).write_manifest(manifest)
    assert judge_main([str(run), "judge=rules"]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == f"report: {run / 'report.html'}"
    judge = dict(report_main(run)["provenance"])["judge"]
    assert judge == RunFolder(run).read_summary()["judge_model"] != "stale judge"


def test_a_report_that_cannot_be_built_is_one_warning(run, capsys, monkeypatch):
    def broken(*args, **kwargs):
        raise ValueError("the catalog\nwent away")
    monkeypatch.setattr("ecab.view.writer.write_report", broken)
    assert reduce_main([str(run), "--no-plots"]) == 0          # the summary stands
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("warning: report not refreshed (ValueError: the catalog went away)")
    assert RunFolder(run).summary_path.is_file() and not (run / "report.html").exists()


def rows_of(index_html: str) -> list[list[str]]:
    body = index_html.split("<tbody>")[1]
    return [re.findall(r"<td>(?:<a [^>]*>)?(.*?)(?:</a>)?</td>", row) for row in re.findall(r"<tr.*?</tr>", body)]


def test_an_index_of_a_folder_of_runs(view_runs, tmp_path, capsys):
    study = tmp_path / "study"
    for name in ("heuristic", "random"):
        copy_run(view_runs[name], study / name)
    (study / "random" / "report.html").unlink(missing_ok=True)   # a missing report is built
    running, trajectories = in_progress(view_runs["heuristic"], study / "running", 3)
    (study / "notes").mkdir()                                  # not a run folder: not listed
    (study / "sweep-model=a,b").mkdir()                        # a sweep's table and a budget study: linked above
    (study / "sweep-model=a,b" / "sweep.md").write_text("# Sweep\n", encoding="utf-8")
    (study / "m-b5,10-budget-study").mkdir()
    for name in ("budget_study.md", "budget_study.png"):
        (study / "m-b5,10-budget-study" / name).write_bytes(b"x")
    assert view_main([str(study)]) == 0
    assert f"wrote {study / 'index.html'} (3 runs)" in capsys.readouterr().out
    page = (study / "index.html").read_text(encoding="utf-8")
    rows = {row[0]: row for row in rows_of(page)}
    assert sorted(rows) == ["heuristic", "random", "running"]
    for name in rows:
        assert f'href="{name}/report.html"' in page and (study / name / "report.html").is_file()
    summary = RunFolder(study / "heuristic").read_summary()
    ci = summary["variance"]["accuracy"]
    assert rows["heuristic"][1:] == [
        "heuristic", "100", str(RunFolder(study / "heuristic").read_manifest()["n_tasks"]),
        f"{summary['overall_accuracy'] * 100:.1f}% [{ci['low'] * 100:.1f}, {ci['high'] * 100:.1f}]", "finished"]
    assert rows["running"][-1] == f"in progress: 3 of {len(trajectories)} episodes" and rows["running"][4] == "n/a"
    tables = page.split('<ul id="tables">')[1].split("</ul>")[0]
    assert tables.index("m-b5,10-budget-study") < tables.index("sweep-model=a,b")        # by folder name
    assert 'href="sweep-model=a,b/sweep.md"' in tables and "sweep.png" not in tables     # no plot: no link
    assert 'href="m-b5,10-budget-study/budget_study.png">plot</a>' in tables

    server, url = start_index(study)                         # --serve: the index, and each run's report live
    try:
        served = get(url)[1].decode("utf-8")
        assert sorted(row[0] for row in rows_of(served)) == ["heuristic", "random", "running"]
        assert 'href="running/"' in served
        base = url.rsplit("/", 1)[0]
        status = json.loads(get(base + "/running/status.json")[1])
        assert status["text"] == f"in progress: 3 of {len(trajectories)} episodes"
        assert get(base + "/heuristic/")[0] == 200
        for path in ("/heuristic/tasks.jsonl", "/heuristic/config.yaml", "/notes/", "/random/trajectories/"):
            assert get(base + path)[0] == 404, path
    finally:
        server.shutdown()
        server.server_close()


def test_an_index_of_a_sweep_lists_its_runs(view_runs, tmp_path, capsys):
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    copy_run(view_runs["random"], sweep / "b100")
    (sweep / "sweep.json").write_text(json.dumps({"runs": [str(view_runs["heuristic"]), "b100"]}), encoding="utf-8")
    assert view_main([str(sweep)]) == 0
    rows = rows_of((sweep / "index.html").read_text(encoding="utf-8"))
    assert [r[0] for r in rows] == ["heuristic", "b100"]
    (sweep / "sweep.json").write_text(json.dumps({"tables": []}), encoding="utf-8")   # no "runs": its subfolders
    assert view_main([str(sweep)]) == 0
    assert [r[0] for r in rows_of((sweep / "index.html").read_text(encoding="utf-8"))] == ["b100"]
    empty = tmp_path / "empty"
    empty.mkdir()
    capsys.readouterr()
    assert view_main([str(empty)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "no run folders" in err[0]

"""A run in progress and `--serve` (issue 29): the report of a folder caught before its judge stage, the live
server following it episode by episode over real HTTP on 127.0.0.1, and the server answering for the
report only (the run folder's own files are 404). Time never drives these tests: each change is a file
write, each look a request."""
import json

import pytest

from ecab.runs import RunFolder
from ecab.view.__main__ import main as view_main
from ecab.view.__main__ import parse_args
from ecab.view.payload import load_run
from ecab.view.server import start, start_live
from ecab.view.status import run_status
from report_data import embedded
from run_copies import WRITER, copy_run, get, in_progress

# Every test here reads the session's `view_runs` (two whole runs): under pytest-xdist one worker builds them
# for all (`--dist loadgroup`, the Makefile's XDIST).
pytestmark = pytest.mark.xdist_group("view_runs")

FIRST = 5


@pytest.fixture
def running(view_runs, tmp_path):
    """(run folder with FIRST of its episodes, all its episodes): the heuristic run, caught in progress."""
    return in_progress(view_runs["heuristic"], tmp_path / "running", FIRST)



def test_a_run_in_progress_has_a_report_of_its_episodes_so_far(running, capsys):
    folder, trajectories = running
    status = run_status(RunFolder(folder))
    assert (status.state, status.done, status.total) == ("in progress", FIRST, len(trajectories))
    assert status.text() == f"in progress: {FIRST} of {len(trajectories)} episodes"
    run = load_run(folder)
    rows = [dict(zip(run.main["columns"], row)) for row in run.main["rows"]]
    assert len(rows) == len(run.details) == FIRST and {r["outcome"] for r in rows} == {"pending"}
    assert run.main["status"]["text"] == status.text()
    assert dict((c["label"], c["value"]) for c in run.main["cards"])["progress"] == f"{FIRST} of {len(trajectories)}"
    assert not RunFolder(folder).summary_path.exists()        # looking at a run never writes into it
    assert view_main([str(folder)]) == 0                       # the CLI too: it used to fail, wanting verdicts
    main, _ = embedded((folder / "report.html").read_text(encoding="utf-8"))
    assert main["runs"][0]["status"]["state"] == "in progress" and len(main["runs"][0]["rows"]) == FIRST


def test_the_live_server_follows_the_run_folder(running):
    folder, trajectories = running
    server, url = start_live(folder)
    try:
        code, page = get(url)
        assert code == 200
        main, _ = embedded(page.decode("utf-8"))
        first_version = main["live"]
        assert first_version and len(main["runs"][0]["rows"]) == FIRST
        status = json.loads(get(url + "status.json")[1])
        assert (status["state"], status["done"], status["total"]) == ("in progress", FIRST, len(trajectories))
        assert status["version"] == first_version

        RunFolder(folder).append_trajectory(WRITER, trajectories[FIRST])   # the runner records one more
        status = json.loads(get(url + "status.json")[1])
        assert status["done"] == FIRST + 1 and status["version"] != first_version
        assert status["text"] == f"in progress: {FIRST + 1} of {len(trajectories)} episodes"
        main, _ = embedded(get(url + "report.html")[1].decode("utf-8"))
        assert len(main["runs"][0]["rows"]) == FIRST + 1 and main["live"] == status["version"]
        assert json.loads(get(url + "status.json")[1])["version"] == status["version"]   # unchanged: no re-render
    finally:
        server.shutdown()
        server.server_close()


def test_the_live_server_shows_a_finished_run_and_its_rejudged_state(view_runs, tmp_path):
    folder = copy_run(view_runs["heuristic"], tmp_path / "done")
    server, url = start_live(folder)
    try:
        status = json.loads(get(url + "status.json")[1])
        assert status["state"] == "finished" and status["text"] == "finished"
        summary = RunFolder(folder).read_summary()
        summary["judge_model"] = "a new judge"                 # what a re-judge rewrites
        RunFolder(folder).write_summary(summary, "")
        main, _ = embedded(get(url)[1].decode("utf-8"))
        assert dict(main["runs"][0]["provenance"])["judge"] == "a new judge"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("path", ["/tasks.jsonl", "/../tasks.jsonl", "/%2e%2e/tasks.jsonl", "/config.yaml",
                                  "/manifest.json", "/trajectories/", "/trajectories/part-local.jsonl.gz",
                                  "/summary.json", "/verdicts.rules.jsonl.gz", "/plots/"])
def test_serve_serves_the_report_only(view_runs, path):
    """The hidden profiles (tasks file), the trajectories and the config are not the report: 404, live or not."""
    for server, url in (start(view_runs["heuristic"] / "report.html"), start_live(view_runs["heuristic"])):
        try:
            root = url.split("/", 3)[:3]
            assert get(url)[0] == 200
            assert get("/".join(root) + path)[0] == 404, path
        finally:
            server.shutdown()
            server.server_close()


def test_host_and_port_options(tmp_path):
    args = parse_args(["runs/x", "--serve", "--host", "0.0.0.0", "--port", "8123"])
    assert (args.host, args.port, args.serve) == ("0.0.0.0", 8123, True)
    assert parse_args(["runs/x"]).host == "127.0.0.1"
    report = tmp_path / "r.html"
    report.write_text("<p>x</p>", encoding="utf-8")
    server, url = start(report, 0, "127.0.0.1")
    try:
        assert url.startswith("http://127.0.0.1:") and get(url)[1] == b"<p>x</p>"
    finally:
        server.shutdown()
        server.server_close()

"""`python -m ecab.data fetch benchmark|amazon` (issue 17, item 6) against a loopback HTTP server: no test needs
the internet, and no released data is used or written into the repository.

The server (http.server in a thread on 127.0.0.1) plays both hosts: GitHub raw (`<base>/<commit>/<file>`, the
base URL is `--base-url`) and the Hugging Face Hub (`HF_ENDPOINT`; HEAD and GET on
`/datasets/<repo>/resolve/<revision>/<file>` with X-Repo-Commit, ETag and Content-Length, ranges honoured, as
huggingface_hub's hf_hub_download needs). Files are small fixtures made in tmp_path. Every case checks the
promise of ecab/data/download.py: a failed or partial download never leaves a file under its final name.
"""
from __future__ import annotations

import errno
import hashlib
import json
import re
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from ecab.data import __main__ as cli
from ecab.data import amazon_reviews, download, released

ROOT = Path(__file__).resolve().parents[2]
AMAZON_FIXTURES = ROOT / "tests" / "fixtures" / "amazon"
HUB_COMMIT = "0123456789abcdef0123456789abcdef01234567"


# ------------------------------------------------------------------------------------------ the server

@dataclass
class Route:
    body: bytes
    headers: dict = field(default_factory=dict)
    die_after: int | None = None   # send this many bytes of the body, then drop the connection and stop serving
    drop_once: bool = False        # the first whole-file GET sends half the body and drops the connection only


class LoopbackServer:
    """A file server on 127.0.0.1 for both hosts; `requests` logs (method, path, Range header)."""

    def __init__(self, routes: dict[str, Route] | None = None):
        self.routes = dict(routes or {})
        self.requests: list[tuple[str, str, str | None]] = []
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.fake = self
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.stopped = False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def route(self, path: str) -> Route | None:
        # Any revision of a Hub file is the same file here.
        return self.routes.get(re.sub(r"/resolve/[^/]+/", "/resolve/*/", path.split("?")[0]))

    def stop(self) -> None:
        """Stop serving and close the listening socket: later connections are refused, like a dead host."""
        if not self.stopped:
            self.stopped = True
            self.httpd.shutdown()
            self.httpd.server_close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_HEAD(self):
        self._answer(head=True)

    def do_GET(self):
        self._answer(head=False)

    def _answer(self, head: bool) -> None:
        server: LoopbackServer = self.server.fake
        server.requests.append((self.command, self.path, self.headers.get("Range")))
        route = server.route(self.path)
        if route is None:
            body = b"Entry not found"
            self.send_response(404)
            self.send_header("X-Error-Code", "EntryNotFound")   # what the Hub says for a missing file
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if not head:
                self.wfile.write(body)
            return
        start = 0
        ranged = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range") or "")
        if ranged and not head:
            start = int(ranged.group(1))
        payload = route.body[start:]
        self.send_response(206 if start else 200)
        for key, value in route.headers.items():
            self.send_header(key, value)
        if start:
            self.send_header("Content-Range", f"bytes {start}-{len(route.body) - 1}/{len(route.body)}")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if head:
            return
        if route.drop_once and not start:
            route.drop_once = False
            self._send_part(payload[:len(payload) // 2])
        elif route.die_after is not None:
            self._send_part(payload[:route.die_after])
            threading.Thread(target=server.stop, daemon=True).start()
        else:
            self.wfile.write(payload)

    def _send_part(self, part: bytes) -> None:
        """Part of the promised body, then the connection is closed."""
        self.wfile.write(part)
        self.wfile.flush()
        self.close_connection = True


@pytest.fixture
def servers():
    started: list[LoopbackServer] = []

    def start(routes: dict[str, Route] | None = None) -> LoopbackServer:
        started.append(LoopbackServer(routes))
        return started[-1]

    yield start
    for server in started:
        server.stop()


def leftovers(folder: Path) -> list[str]:
    """Files under `folder` that are not final: temporary parts, staging folders."""
    if not folder.exists():
        return []
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")
                  if p.name.endswith((".part", ".incomplete", ".tmp")) or amazon_reviews.STAGING in p.parts)


def error_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def run_cli(argv: list[str]) -> int:
    try:
        return cli.main(argv)
    except SystemExit as exc:
        return exc.code


# ------------------------------------------------------------------------------------ the released file

def task_line(i: int) -> str:
    """A task in the original format, with non-ASCII text as the released file has it."""
    return json.dumps({"id": f"v3_sample_{i:04d}", "intent_category": "product_search",
                       "user_query": f"a café mug … number {i}",
                       "target_product": {"product_id": f"B0{i:08d}", "title": f"Crème Mug 【{i}】",
                                          "main_category": "Home", "store": "Mugco", "details": {"Brand": "Mugco"}},
                       "rubrics": [{"id": "r1", "type": "attribute_match", "field": "details.Brand",
                                    "expected_value": "Mugco", "info_source": "query"}]}, ensure_ascii=False)


BENCH = ("\n".join(task_line(i) for i in range(1, 4)) + "\n").encode("utf-8")
BENCH_PATH = f"/{released.COMMIT}/{released.FILE}"


@pytest.fixture
def fixture_release(monkeypatch):
    """The pinned release as the CLI sees it, with the facts of the small fixture file instead of the real one's."""
    text = BENCH.decode("utf-8")
    release = released.Release(released.REPOSITORY, released.COMMIT, released.FILE, tasks=3,
                               characters=len(text), sha256=None)
    monkeypatch.setattr(released, "PINNED", release)
    return release


def fetch_benchmark(out: Path, base_url: str, *extra: str) -> int:
    return run_cli(["fetch", "benchmark", "--out", str(out), "--base-url", base_url, "--no-progress", *extra])


def test_benchmark_fetched_checked_and_reused(servers, tmp_path, capsys, fixture_release):
    server = servers({BENCH_PATH: Route(BENCH)})
    out = tmp_path / "released" / "benchmark.jsonl"
    assert fetch_benchmark(out, server.url) == 0
    assert out.read_bytes() == BENCH and leftovers(out.parent) == []
    printed = capsys.readouterr().out
    digest = hashlib.sha256(BENCH).hexdigest()
    assert "3 tasks" in printed and f"--sha256 {digest}" in printed and "benchmark=released" in printed

    # Already there: checked again, not downloaded; a given sha256 is checked too.
    gets = len(server.requests)
    assert fetch_benchmark(out, server.url, "--sha256", digest) == 0
    assert len(server.requests) == gets and "already fetched" in capsys.readouterr().out

    # A damaged file already there is refused (with the way out), and --force replaces it.
    out.write_bytes(BENCH[:-40])
    assert fetch_benchmark(out, server.url) == 1
    assert "--force" in error_line(capsys)
    assert fetch_benchmark(out, server.url, "--force") == 0
    assert out.read_bytes() == BENCH


def test_benchmark_checksum_mismatch_leaves_no_file(servers, tmp_path, capsys, fixture_release):
    server = servers({BENCH_PATH: Route(BENCH)})
    out = tmp_path / "benchmark.jsonl"
    assert fetch_benchmark(out, server.url, "--sha256", "0" * 64) == 1
    line = error_line(capsys)
    assert "sha256" in line and hashlib.sha256(BENCH).hexdigest() in line
    assert not out.exists() and leftovers(tmp_path) == []


def test_benchmark_checked_against_the_pinned_release(servers, tmp_path):
    """The real CLI, in its own process, with the pinned facts (662 tasks, 6,029,661 characters): a file that is
    not the release is refused in one line and leaves nothing; the base URL comes from the environment."""
    server = servers({BENCH_PATH: Route(BENCH)})
    out = tmp_path / "benchmark.jsonl"
    done = subprocess.run([sys.executable, "-m", "ecab.data", "fetch", "benchmark", "--out", str(out),
                           "--no-progress"], capture_output=True, text=True, cwd=ROOT,
                          env={**_env(), released.BASE_URL_ENV: server.url})
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and "6,029,661" in done.stderr, done.stderr
    assert not out.exists() and leftovers(tmp_path) == []
    assert [r[:2] for r in server.requests] == [("GET", BENCH_PATH)]


def test_benchmark_server_dies_half_way_then_a_rerun_completes(servers, tmp_path, capsys, fixture_release):
    dying = servers({BENCH_PATH: Route(BENCH, die_after=len(BENCH) // 2)})
    out = tmp_path / "benchmark.jsonl"
    assert fetch_benchmark(out, dying.url) == 1
    assert "broke off" in error_line(capsys)
    assert not out.exists() and leftovers(tmp_path) == []

    healthy = servers({BENCH_PATH: Route(BENCH)})
    assert fetch_benchmark(out, healthy.url) == 0
    assert out.read_bytes() == BENCH and leftovers(tmp_path) == []


def test_benchmark_404_and_unreachable_host_are_one_line(servers, tmp_path, capsys, fixture_release):
    server = servers({})
    out = tmp_path / "benchmark.jsonl"
    assert fetch_benchmark(out, server.url) == 1
    line = error_line(capsys)
    assert "404" in line and released.FILE in line
    server.stop()
    assert fetch_benchmark(out, server.url) == 1
    assert "cannot reach 127.0.0.1" in error_line(capsys)
    assert not out.exists() and leftovers(tmp_path) == []


def test_a_full_disk_is_one_line_and_leaves_no_part(monkeypatch, tmp_path):
    def no_space(url, handle, **kwargs):
        handle.write(b"some bytes")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(download, "_get_into", no_space)
    with pytest.raises(download.FetchError, match="disk full"):
        download.download("http://127.0.0.1:9/x", tmp_path / "x.jsonl", check=lambda part: None)
    assert list(tmp_path.iterdir()) == []


def test_benchmark_released_without_the_file_names_the_fetch_command(tmp_path):
    from ecab.config import ConfigError, load_config
    from ecab.run import run_name, validate

    cfg = load_config(["benchmark=released", f"cache_dir={tmp_path}"])
    assert Path(cfg.benchmark.path) == tmp_path / "data" / "released" / "benchmark.jsonl"
    with pytest.raises(ConfigError) as refused:
        validate(cfg)
    message = str(refused.value)
    assert "\n" not in message and "python -m ecab.data fetch benchmark --out" in message
    assert str(cfg.benchmark.path) in message

    Path(cfg.benchmark.path).parent.mkdir(parents=True)
    Path(cfg.benchmark.path).write_bytes(BENCH)
    validate(cfg)
    assert run_name(cfg) == "heuristic-b100-released"


def test_catalog_amazon_without_the_files_names_the_fetch_command(tmp_path):
    from ecab.catalog.build import CatalogConfigError, catalog_fingerprint
    from ecab.config import load_config

    cfg = load_config(["catalog=amazon", f"cache_dir={tmp_path}"])
    assert Path(cfg.catalog.path) == tmp_path / "data" / "amazon-reviews-2023"
    with pytest.raises(CatalogConfigError, match="python -m ecab.data fetch amazon --out"):
        catalog_fingerprint(cfg.catalog)


# --------------------------------------------------------------------------------------- Amazon Reviews

def hub_path(file: str) -> str:
    return f"/datasets/{amazon_reviews.REPO_ID}/resolve/*/{file}"


def hub_route(body: bytes, *, etag: str | None = None, die_after: int | None = None) -> Route:
    """A Hub file: an LFS-style ETag (its sha256) unless told otherwise."""
    return Route(body, {"X-Repo-Commit": HUB_COMMIT, "ETag": f'"{etag or hashlib.sha256(body).hexdigest()}"'},
                 die_after=die_after)


META = (AMAZON_FIXTURES / "meta_All_Beauty.jsonl").read_bytes()
REVIEWS = (AMAZON_FIXTURES / "All_Beauty.jsonl").read_bytes()
GIT_BLOB_ID = hashlib.sha1(b"blob %d\0" % len(REVIEWS) + REVIEWS).hexdigest()


def hub_routes(**meta_options) -> dict[str, Route]:
    return {hub_path(amazon_reviews.meta_file("All_Beauty")): hub_route(META, **meta_options),
            # A small file's ETag on the Hub is its git blob id, not a sha256: both are checked.
            hub_path(amazon_reviews.review_file("All_Beauty")): hub_route(REVIEWS, etag=GIT_BLOB_ID)}


@pytest.fixture
def hub(monkeypatch):
    """huggingface_hub online for this test (make test sets HF_HUB_OFFLINE=1) and pointed at a loopback server."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)

    def point_at(server: LoopbackServer) -> None:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
    return point_at


def fetch_amazon(out: Path, categories: str = "All_Beauty") -> int:
    return run_cli(["fetch", "amazon", "--categories", categories, "--out", str(out), "--no-progress"])


def test_amazon_fetched_laid_out_for_catalog_amazon_and_skipped_when_there(servers, hub, tmp_path, capsys):
    from ecab.catalog.amazon import resolve_inputs

    server = servers(hub_routes())
    hub(server)
    out = tmp_path / "amazon"
    assert fetch_amazon(out) == 0
    meta, reviews = out / amazon_reviews.meta_file("All_Beauty"), out / amazon_reviews.review_file("All_Beauty")
    assert meta.read_bytes() == META and reviews.read_bytes() == REVIEWS
    assert leftovers(out) == [] and sorted(p.name for p in out.iterdir()) == ["fetch.json", "raw"]
    assert resolve_inputs(out) == ([meta], [reviews])   # where catalog=amazon reads them
    printed = capsys.readouterr().out
    assert f"catalog=amazon catalog.path={out}" in printed
    manifest = json.loads((out / "fetch.json").read_text())
    assert {f: v["checked"] for f, v in manifest["files"].items()} == {
        amazon_reviews.meta_file("All_Beauty"): "sha256", amazon_reviews.review_file("All_Beauty"): "git blob id"}
    assert {v["commit"] for v in manifest["files"].values()} == {HUB_COMMIT}

    # A re-run asks the Hub only for the metadata (HEAD) and downloads nothing.
    seen = len(server.requests)
    assert fetch_amazon(out) == 0
    assert {method for method, _, _ in server.requests[seen:]} == {"HEAD"}
    assert "0 file(s) fetched, 2 already there" in capsys.readouterr().out


def test_amazon_checksum_mismatch_leaves_no_file(servers, hub, tmp_path, capsys):
    hub(servers(hub_routes(etag=hashlib.sha256(b"other bytes").hexdigest())))
    out = tmp_path / "amazon"
    assert fetch_amazon(out) == 1
    line = error_line(capsys)
    assert "sha256" in line and "meta_All_Beauty.jsonl" in line
    assert not (out / amazon_reviews.meta_file("All_Beauty")).exists()
    assert not (out / amazon_reviews.review_file("All_Beauty")).exists()


def test_amazon_server_dies_half_way_then_a_rerun_completes(servers, hub, tmp_path, capsys):
    dying = servers(hub_routes(die_after=len(META) // 2))
    hub(dying)
    out = tmp_path / "amazon"
    assert fetch_amazon(out) == 1   # huggingface_hub retries the dropped connection, the host is gone: it gives up
    assert "meta_All_Beauty.jsonl" in error_line(capsys)
    assert not (out / amazon_reviews.meta_file("All_Beauty")).exists()
    assert [p for p in out.rglob("*.jsonl") if amazon_reviews.STAGING not in p.parts] == []

    healthy = servers(hub_routes())
    hub(healthy)
    assert fetch_amazon(out) == 0
    assert (out / amazon_reviews.meta_file("All_Beauty")).read_bytes() == META
    assert (out / amazon_reviews.review_file("All_Beauty")).read_bytes() == REVIEWS
    assert leftovers(out) == []


def test_amazon_dropped_connection_is_resumed_within_the_run(servers, hub, tmp_path):
    """A connection that breaks off while the host stays up: huggingface_hub asks for the rest (HTTP Range). It
    writes what it receives in 10 MiB chunks, so the file is made big enough for one chunk to arrive first."""
    big = META * (21 * 2**20 // len(META) + 1)
    routes = hub_routes()
    routes[hub_path(amazon_reviews.meta_file("All_Beauty"))] = hub_route(big)
    routes[hub_path(amazon_reviews.meta_file("All_Beauty"))].drop_once = True
    server = servers(routes)
    hub(server)
    out = tmp_path / "amazon"
    assert fetch_amazon(out) == 0
    assert (out / amazon_reviews.meta_file("All_Beauty")).read_bytes() == big
    ranges = [rng for method, path, rng in server.requests if method == "GET" and "meta_" in path]
    assert len(ranges) == 2 and ranges[0] is None and int(ranges[1].removeprefix("bytes=").rstrip("-")) > 0


def test_amazon_404_names_the_file(servers, hub, tmp_path, capsys):
    hub(servers(hub_routes()))
    out = tmp_path / "amazon"
    assert fetch_amazon(out, "All_Beauty,No_Such_Category") == 1
    line = error_line(capsys)
    assert "404" in line and "raw/meta_categories/meta_No_Such_Category.jsonl" in line
    assert not out.exists() or [p for p in out.rglob("*.jsonl")] == []


def test_amazon_refuses_when_the_disk_is_too_small(servers, hub, tmp_path, capsys, monkeypatch):
    import shutil
    from collections import namedtuple

    hub(servers(hub_routes()))
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**9, 10**9 - 100, 100))
    assert fetch_amazon(tmp_path / "amazon") == 1
    assert "not enough disk space" in error_line(capsys)


def _env() -> dict:
    import os

    return {k: v for k, v in os.environ.items() if k not in (released.BASE_URL_ENV, "HF_ENDPOINT")}

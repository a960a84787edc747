"""`python -m ecab.view ... --serve`: the report on a local web server (127.0.0.1 unless --host says otherwise),
for a browser on the same machine or through an SSH tunnel.

It serves the report and nothing else: a fixed table of routes (the page, its status.json, an index's run
reports), each answered from the report or the live renderer. It never maps a URL to a file of the run
folder, so the hidden parts of the tasks, the trajectories and config.yaml stay off the network: any
other path is a 404. One run is served live (live.py): the page follows the run folder as it changes.
"""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable
from urllib.parse import urlsplit

from ecab.view.index import INDEX, runs_of, served_index, served_names
from ecab.view.live import LiveReport

HOST = "127.0.0.1"
HTML, JSON = "text/html; charset=utf-8", "application/json"
STATUS = "status.json"

Route = Callable[[], tuple[bytes, str]]      # () -> (body, content type), called per request


def file_route(path: Path) -> Route:
    """A report file on disk, read on each request (a rewrite shows at the next load)."""
    return lambda: (path.read_bytes(), HTML)


def live_routes(live: LiveReport, prefix: str = "/") -> dict[str, Route]:
    """A run's live report at <prefix> and <prefix>report.html, and its status at <prefix>status.json (the
    page fetches it relative to itself, so the same page works at any prefix)."""
    def page() -> tuple[bytes, str]:
        live.refresh()
        return live.page, HTML

    def status() -> tuple[bytes, str]:
        return json.dumps(live.status()).encode("utf-8"), JSON
    return {prefix: page, prefix + "report.html": page, prefix + STATUS: status}


def _handler(routes: dict[str, Route]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _answer(self, with_body: bool) -> None:
            route = routes.get(urlsplit(self.path).path)
            if route is None:
                self.send_error(404, "not part of the report")
                return
            try:
                body, kind = route()
            except Exception as exc:  # noqa: BLE001 - one request fails with its reason, the server stays up
                self.send_error(500, " ".join(f"the report could not be read: {exc}".split()))
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")     # a live page must not come from a cache
            self.end_headers()
            if with_body:
                self.wfile.write(body)

        def do_GET(self) -> None:   # noqa: N802 - the stdlib's name
            self._answer(True)

        def do_HEAD(self) -> None:  # noqa: N802
            self._answer(False)

        def log_message(self, format, *args):   # noqa: A002 - the stdlib's signature
            pass
    return Handler


def start_routes(routes: dict[str, Route], entry: str, port: int = 0,
                 host: str = HOST) -> tuple[ThreadingHTTPServer, str]:
    """Serve `routes` on host:port (0: a free port) from a daemon thread; returns the server (call
    .shutdown()) and the URL of `entry`."""
    server = ThreadingHTTPServer((host, port), _handler(routes))
    threading.Thread(target=server.serve_forever, name="ecab-view-server", daemon=True).start()
    return server, f"http://{host}:{server.server_address[1]}{entry}"


def start(report: Path, port: int = 0, host: str = HOST) -> tuple[ThreadingHTTPServer, str]:
    """Serve one written report file (a compare report, an index) at /<its name> and /."""
    report = Path(report)
    route = file_route(report)
    return start_routes({"/": route, "/" + report.name: route}, "/" + report.name, port, host)


def start_live(run_dir: Path, port: int = 0, host: str = HOST, **options) -> tuple[ThreadingHTTPServer, str]:
    """Serve one run's report live, at / (and /report.html), rendered from the run folder as it changes."""
    return start_routes(live_routes(LiveReport(run_dir, **options)), "/", port, host)


def start_index(folder: Path, port: int = 0, host: str = HOST, **options) -> tuple[ThreadingHTTPServer, str]:
    """Serve the index of a folder of runs at / (and /index.html), built afresh per request, and each run it
    lists live at /<name>/, where the served index links."""
    names = served_names(runs_of(folder))

    def index() -> tuple[bytes, str]:
        return served_index(folder, names).encode("utf-8"), HTML
    routes: dict[str, Route] = {"/": index, "/" + INDEX: index}
    for name, run_dir in names.items():
        routes.update(live_routes(LiveReport(run_dir, **options), f"/{name}/"))
    return start_routes(routes, "/" + INDEX, port, host)


def serve_forever(server: ThreadingHTTPServer, url: str) -> None:
    """Print the URL and serve until interrupted (Ctrl-C)."""
    print(f"serving {url} (Ctrl-C stops)", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()

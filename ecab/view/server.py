"""`python -m ecab.view ... --serve`: the report on a local web server (127.0.0.1 only), for a browser on the
same machine or through an SSH tunnel. The file works from disk too; the server only saves copying it."""
from __future__ import annotations

import functools
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HOST = "127.0.0.1"


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):   # noqa: A002 - the stdlib's signature
        pass


def start(report: Path, port: int = 0) -> tuple[ThreadingHTTPServer, str]:
    """Serve the report's folder on 127.0.0.1:`port` (0: a free port) from a daemon thread; returns the
    server (call .shutdown()) and the report's URL."""
    handler = functools.partial(_QuietHandler, directory=str(report.parent))
    server = ThreadingHTTPServer((HOST, port), handler)
    threading.Thread(target=server.serve_forever, name="ecab-view-server", daemon=True).start()
    return server, f"http://{HOST}:{server.server_address[1]}/{report.name}"


def serve_forever(report: Path, port: int = 0) -> None:
    """Serve until interrupted (Ctrl-C)."""
    server, url = start(report, port)
    print(f"serving {url} (Ctrl-C stops)", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()

"""`python -m ecab.run` checks an own endpoint before any work (issue 31, item 3): a refused connection is one
line naming the URL, with no catalog built and no run folder made; `model.endpoint_check=false` skips it."""
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(tmp_path, *extra):
    with socket.socket() as reserved:            # bound, never listening: every connection to it is refused
        reserved.bind(("127.0.0.1", 0))
        port = reserved.getsockname()[1]
        return port, subprocess.run(
            [sys.executable, "-m", "ecab.run", "model=gpt-5", f"model.base_url=http://127.0.0.1:{port}/v1",
             "benchmark.limit=1", f"run.dir={tmp_path}/runs", f"cache_dir={tmp_path}/cache", *extra],
            cwd=ROOT, capture_output=True, text=True, timeout=300, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
                                                                         "OPENAI_API_KEY": "sk-test"})


def test_a_refused_connection_is_named_before_any_work(tmp_path):
    port, proc = run(tmp_path)
    errors = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert errors == [f"ecab: error: connection refused at http://127.0.0.1:{port}/v1: is the server running? "
                      "(check model.base_url)"], proc.stderr
    assert not (tmp_path / "runs").exists() and not (tmp_path / "cache").exists(), "nothing built, no folder"

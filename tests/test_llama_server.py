"""Two episodes against a real `llama-server` (llama.cpp), the way teams serve the paper's open models (issue 31,
item 8). Runs when `llama-server` is on PATH and ECAB_LLAMA_MODEL names a GGUF model file; skipped with one reason
otherwise, also in CI: building llama.cpp takes ~30 minutes on these machines, so CI has no server (the same paths
run there against the simulator's replay of real local-model replies: tests/test_local_model_replay.py)."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from ecab.runs import RunFolder

ROOT = Path(__file__).resolve().parents[1]
MODEL_ENV = "ECAB_LLAMA_MODEL"
SERVER_START_S = 600      # loading a GGUF from a cold disk on two cores


@pytest.fixture(scope="module")
def llama_server():
    binary, model = shutil.which("llama-server"), os.environ.get(MODEL_ENV, "").strip()
    if binary is None or not model or not Path(model).is_file():
        pytest.skip(f"needs llama-server on PATH and {MODEL_ENV}=<a GGUF model file> (not in CI: see the module)")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen([binary, "--jinja", "-m", model, "--host", "127.0.0.1", "--port", str(port), "-c", "8192",
                             "--parallel", "2"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama-server exited with {proc.returncode} before it was ready")
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=5) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama-server not ready within {SERVER_START_S} s")
            time.sleep(1)
        yield f"{url}/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.slow
def test_two_episodes_against_a_real_llama_server(llama_server, tmp_path, small_run_cache):
    proc = subprocess.run([sys.executable, "-m", "ecab.run", "model=local", f"model.base_url={llama_server}",
                           "model.tool_call_format=json", "model.context_tokens=8192", "budget=6",
                           "benchmark.limit=2", f"cache_dir={small_run_cache}", f"run.dir={tmp_path}", "run.name=llama"],
                          cwd=ROOT, capture_output=True, text=True, timeout=7200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    trajectories = list(RunFolder(tmp_path / "llama").latest_trajectories().values())
    assert len(trajectories) == 2 and all(t.termination != "infra_error" for t in trajectories)
    assert "endpoint " in proc.stdout, "the endpoint was checked first"

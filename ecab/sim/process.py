"""The simulator in its own process: `with SimProcess(cfg) as sim: sim.base_url`.

`SimServer` runs the endpoint on a thread of the calling process, which is right for tests and the small
demo. A benchmark of the harness must not do that: the fake endpoint's request handling would share the
harness's GIL and be counted as harness cost. A real endpoint is another machine; this is the nearest
thing on one: `python -m ecab.sim --config-json ...` in a child process.
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from dataclasses import asdict
from typing import Any

from ecab.sim.server import SimConfig

START_TIMEOUT_S = 60


class SimProcess:
    def __init__(self, config: SimConfig | dict | Any = None, host: str = "127.0.0.1", port: int = 0):
        self.config = SimConfig.from_any(config)
        self.host, self.port = host, port
        self.base_url: str | None = None
        self.stats: dict[str, int] = {}
        self._proc: subprocess.Popen | None = None
        # stderr goes to a file, not a pipe: nobody reads a pipe while the simulator runs, and a full one
        # (64 KB of warnings or error logs) would block the simulator mid-run.
        self._stderr = tempfile.TemporaryFile(mode="w+")

    def start(self) -> str:
        cmd = [sys.executable, "-m", "ecab.sim", "--host", self.host, "--port", str(self.port),
               "--config-json", json.dumps(asdict(self.config))]
        self._proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self._stderr, text=True)
        line = self._proc.stdout.readline().strip()   # the server prints its URL once it listens
        if not line.startswith("http"):
            self._proc.kill()
            self._proc.wait(timeout=START_TIMEOUT_S)
            raise RuntimeError(f"the simulator process did not start: {(line + self._errors()).strip()[-2000:]}")
        self.base_url = line
        return line

    @property
    def pid(self) -> int | None:
        """The simulator's process id (benchmarks count its CPU apart from the harness's)."""
        return self._proc.pid if self._proc is not None else None

    def _errors(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read()

    def stop(self) -> None:
        if self._proc is None or self._proc.poll() is not None:
            return
        self._proc.terminate()
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._proc.stdout.close()
        err = self._errors()
        self._stderr.close()
        for line in reversed(err.strip().splitlines()):   # its last stderr line is the stats JSON
            try:
                self.stats = json.loads(line)
                break
            except ValueError:
                continue

    def __enter__(self) -> "SimProcess":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

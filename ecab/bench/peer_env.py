"""inspect_ai's own virtual environment for the peer benchmark (ecab/bench/peer.py), created on first use.

inspect_ai cannot be installed beside ecab: its pins downgrade packages ecab uses (fsspec, python-dateutil).
So it gets a virtual environment of its own, by default `<cache_dir>/bench/peer-venv`, made with this
interpreter's `python -m venv` and pip: inspect_ai at a pinned version, and the openai SDK at the version
ecab has, so that both sides talk to the simulator through the same client library.

The inspect side must also import ecab (its ToolBox, catalog and tasks) and ecab's own dependencies
(LanceDB, the embedder, ...) without installing them a second time. A `.pth` file in the peer environment
appends ecab's environment's site-packages to sys.path, after the peer's own, so inspect_ai's pins win
where both have a package; ecab itself comes from its source tree on PYTHONPATH (`case_environ`), so the
inspect side runs the same ecab code as the ecab side. Both environments use the same Python, since the
compiled packages of ecab's environment are loaded into the peer's interpreter.

An environment is reused while its marker file matches what would be installed (inspect_ai, openai, the
Python version); otherwise it is made again. The `.pth` file is rewritten on every use, so the environment
always reads the site-packages of the ecab that runs the benchmark.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

INSPECT_AI_VERSION = "0.3.285"         # the version of the first comparison
MARKER = "ecab-peer-env.json"
BASE_PTH = "ecab-base-site.pth"
PIP_TIMEOUT_S = 1800


class PeerEnvError(RuntimeError):
    """The peer environment could not be created (no network, a pip failure): one line, with pip's reason."""


@dataclass
class PeerEnv:
    path: Path
    created: bool              # made by this call (False: reused)
    seconds: float             # how long making or checking it took

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"


def default_root() -> Path:
    """`<cache_dir>/bench/peer-venv`, with cache_dir as conf/config.yaml resolves it."""
    from ecab.config import load_config, parse

    return Path(parse(load_config([])).cache_dir) / "bench" / "peer-venv"


def wanted(inspect_version: str) -> dict[str, str]:
    return {"inspect_ai": inspect_version, "openai": version("openai"), "python": sys.version.split()[0]}


def ensure_peer_env(root: Path | None = None, inspect_version: str = INSPECT_AI_VERSION) -> PeerEnv:
    """The peer environment at `root`, made if missing or out of date; raises PeerEnvError if pip fails."""
    root = Path(root or default_root())
    started = time.monotonic()
    want = wanted(inspect_version)
    marker = root / MARKER
    created = False
    if not (marker.is_file() and _read_json(marker) == want and (root / "bin" / "python").exists()):
        _create(root, want)
        marker.write_text(json.dumps(want, indent=1), encoding="utf-8")
        created = True
    env = PeerEnv(root, created, 0.0)
    _write_base_pth(env)
    env.seconds = time.monotonic() - started
    return env


def _create(root: Path, want: dict[str, str]) -> None:
    shutil.rmtree(root, ignore_errors=True)
    root.parent.mkdir(parents=True, exist_ok=True)
    _run([sys.executable, "-m", "venv", str(root)], f"python -m venv {root}")
    _run([str(root / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
          f"inspect_ai=={want['inspect_ai']}", f"openai=={want['openai']}"],
         f"pip install inspect_ai=={want['inspect_ai']} into {root}")


def _run(cmd: list[str], what: str) -> None:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=PIP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise PeerEnvError(f"{what} took more than {PIP_TIMEOUT_S} s") from None
    if done.returncode != 0:
        lines = [ln for ln in (done.stderr or done.stdout).strip().splitlines() if not ln.startswith("WARNING")]
        reason = lines[-1] if lines else f"exit code {done.returncode}"
        raise PeerEnvError(f"{what} failed: {reason}")


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _site_packages(python: Path) -> Path:
    out = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


def _write_base_pth(env: PeerEnv) -> None:
    base = sysconfig.get_paths()["purelib"]
    (_site_packages(env.python) / BASE_PTH).write_text(base + "\n", encoding="utf-8")


def ecab_source_root() -> Path:
    import ecab

    return Path(ecab.__file__).resolve().parents[1]


def case_environ() -> dict[str, str]:
    """The environment of a peer-side process: this one's, with ecab's source tree first on PYTHONPATH (not
    when ecab is installed into site-packages: the `.pth` file finds it there, after inspect_ai's pins)."""
    environ = dict(os.environ)
    root = ecab_source_root()
    if root != Path(sysconfig.get_paths()["purelib"]).resolve():
        environ["PYTHONPATH"] = str(root)
    return environ

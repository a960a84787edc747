"""Red-team attacks on the cache (issue 30 item 7): a build killed by SIGKILL leaves its temporary folder behind
(6.4 GB for a 1M-product catalog); the next build beside it removes it, and never the folder of a build that is
still running."""
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ecab.catalog.writer import build_catalog
from ecab.config import load_config
from ecab.run import load_tasks, open_catalog
from conftest import SMALL_RUN, small_catalog_batches

ROOT = Path(__file__).resolve().parents[2]

# A real catalog build of the small run's config, killed by SIGKILL once it has started writing its shards.
KILLED_BUILD = textwrap.dedent("""
    import os, signal, sys
    import ecab.catalog.writer as writer
    from ecab.config import load_config
    from ecab.run import open_catalog
    real = writer._write_batches
    def write_then_die(batches, writers, *args):
        real(iter([next(iter(batches))]), writers, *args)    # one batch on disk, then the kill
        os.kill(os.getpid(), signal.SIGKILL)
    writer._write_batches = write_then_die
    open_catalog(load_config(sys.argv[2:] + [f"cache_dir={sys.argv[1]}"]))
""")

# A build of something else that holds a temporary folder (the way builds make them) until told to stop.
LIVE_BUILD = textwrap.dedent("""
    import sys
    from ecab.core.build_temp import make_temp_dir
    print(make_temp_dir(sys.argv[1], sys.argv[2]), flush=True)
    sys.stdin.read()
""")


def temp_folders(parent: Path) -> list[Path]:
    return sorted(p for p in parent.iterdir() if ".tmp-" in p.name) if parent.is_dir() else []


def killed_build(cache: Path) -> Path:
    """The temporary folder a real catalog build killed by SIGKILL left in `cache`/catalogs."""
    child = subprocess.run([sys.executable, "-c", KILLED_BUILD, str(cache), *SMALL_RUN], cwd=ROOT,
                           capture_output=True, text=True, timeout=600)
    assert child.returncode == -signal.SIGKILL, child.stderr[-3000:]
    [left] = temp_folders(cache / "catalogs")
    assert any(left.rglob("*.lance")), "the kill came mid-build: shards were on disk"
    return left


class LiveBuild:
    """A running process that owns a temporary folder in `parent`."""

    def __init__(self, parent: Path, base: str):
        parent.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen([sys.executable, "-c", LIVE_BUILD, str(parent), base], cwd=ROOT,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.folder = Path(self.proc.stdout.readline().strip())

    def kill(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()


@pytest.fixture
def live(tmp_path):
    started: list[LiveBuild] = []
    yield lambda parent, base: started.append(LiveBuild(parent, base)) or started[-1]
    for build in started:
        if build.proc.poll() is None:
            build.kill()


def test_a_killed_catalog_build_is_swept_by_the_next_build_a_running_one_is_not(tmp_path, embedder, live):
    cache = tmp_path / "cache"
    left = killed_build(cache)
    running = live(cache / "catalogs", ".other")
    build_catalog(iter(small_catalog_batches()), cache / "catalogs" / "next", embedder=embedder,
                  fingerprint="test-next", progress=False)
    assert not left.exists(), "the killed build's temporary folder is gone"
    assert running.folder.is_dir(), "a running build's folder is kept"
    assert temp_folders(cache / "catalogs") == [running.folder]
    running.kill()
    build_catalog(iter(small_catalog_batches()), cache / "catalogs" / "third", embedder=embedder,
                  fingerprint="test-third", progress=False)
    assert temp_folders(cache / "catalogs") == [], "once its owner died it goes too"


def test_a_killed_benchmark_build_is_swept_by_the_next_one(tmp_path, small_run_cache, live):
    """A dead owner's temporary benchmark folder (its process SIGKILLed) goes at the next benchmark build; the
    catalog is the small run's, shared through a link."""
    cfg_args = [*SMALL_RUN, f"cache_dir={small_run_cache}"]
    open_catalog(load_config(cfg_args))          # built once per session
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "catalogs").symlink_to(small_run_cache / "catalogs", target_is_directory=True)
    dead = live(cache / "benchmarks", "0123456789abcdef")
    running = live(cache / "benchmarks", "fedcba9876543210")
    dead.kill()
    cfg = load_config([*SMALL_RUN, f"cache_dir={cache}", "benchmark.n_per_intent=1"])
    assert load_tasks(cfg, open_catalog(cfg))
    assert not dead.folder.exists() and running.folder.is_dir()
    assert temp_folders(cache / "benchmarks") == [running.folder]


def test_abandoned_temporary_folders_of_the_old_kind_are_swept_and_recent_ones_kept(tmp_path):
    """Folders builds made before they named their owner (a catalog's `.<fingerprint>-<8>` from mkdtemp, the
    encoder's `.<name>.tmp-<pid>-<8 hex>`) are removed once nothing in them changed for a day (and their pid,
    where they name one, is not running); a recent one may be a build still writing and stays."""
    from ecab.core.build_temp import LEGACY_IDLE_S, sweep

    fingerprint = "ab" * 32
    old_catalog = tmp_path / f".{fingerprint}-k2j_x9q1"
    old_encoder = tmp_path / f".minilm-onnx.tmp-{2 ** 22 + 7}-0a1b2c3d"       # a pid above pid_max: not running
    live_encoder = tmp_path / f".minilm-onnx.tmp-{os.getpid()}-0a1b2c3d"      # this process: running
    recent = tmp_path / f".{'cd' * 32}-a1b2c3d4"
    for folder in (old_catalog, old_encoder, live_encoder, recent):
        (folder / "shard-0").mkdir(parents=True)
        (folder / "shard-0" / "data.lance").write_bytes(b"x")
    now = max(p.stat().st_mtime for p in tmp_path.rglob("*"))
    for folder in (old_catalog, old_encoder, live_encoder):   # untouched for a day and a minute
        for path in [folder, *folder.rglob("*")]:
            os.utime(path, (now - LEGACY_IDLE_S - 60, now - LEGACY_IDLE_S - 60))
    kept_by_name = tmp_path / f".{fingerprint}"   # a finished catalog's own name is no temporary folder
    kept_by_name.mkdir()
    assert sorted(p.name for p in sweep(tmp_path, now=now)) == sorted([old_catalog.name, old_encoder.name])
    assert live_encoder.exists() and recent.exists() and kept_by_name.exists()

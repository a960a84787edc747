"""Red-team attacks on the run folder (issue 30 item 1): no partial state may let a run adopt the episodes of
another config. A finished run of the default config (search=hybrid) is the victim; the attacker is a run of
tools.search=fts under the same run.name, after the victim's folder was left half moved aside (a kill at every
step of `move_aside`, in process and as a real child killed with SIGKILL) or lost its manifest."""
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ecab.config import ConfigError, load_config
from ecab.run import load_tasks, main_job, open_catalog, prepare_folder
from ecab.runs import RunFolder
from ecab.runs.lock import LOCK_NAME
from conftest import SMALL_RUN

ROOT = Path(__file__).resolve().parents[2]
NAME = "shop"
OTHER = "tools.search=fts"     # another config hash: its episodes would differ from the victim's


def config(cache_dir: Path, run_dir: Path, *overrides: str):
    return load_config([*SMALL_RUN, f"cache_dir={cache_dir}", f"run.dir={run_dir}", f"run.name={NAME}",
                        "model=heuristic", *overrides])


@pytest.fixture(scope="module")
def victim(small_run_cache, tmp_path_factory) -> Path:
    """A finished run folder of the default config: trajectories, verdicts, manifest, summary."""
    run_dir = tmp_path_factory.mktemp("victim")
    main_job(config(small_run_cache, run_dir))
    folder = run_dir / NAME
    assert RunFolder(folder).latest_trajectories()
    return folder


def copy_of(victim: Path, tmp_path: Path) -> Path:
    run_dir = tmp_path / "runs"
    shutil.copytree(victim, run_dir / NAME)
    return run_dir


class Killed(BaseException):
    """Stands for the kill: nothing after it runs (not an Exception, so no handler swallows it)."""


def rename_killed_after(monkeypatch, folder: Path, k: int) -> None:
    """Path.rename of entries of `folder` succeeds k times, then the process 'dies'."""
    real = pathlib.Path.rename
    done = [0]

    def rename(self, target):
        if Path(self).parent == folder:
            if done[0] == k:
                raise Killed
            done[0] += 1
        return real(self, target)

    monkeypatch.setattr(pathlib.Path, "rename", rename)


def attempt(cfg):
    """prepare_folder as `python -m ecab.run` does it: the folder (locked: release it), or the ConfigError."""
    try:
        folder = prepare_folder(cfg, load_tasks(cfg, open_catalog(cfg)), open_catalog(cfg))
    except ConfigError as exc:
        return exc
    folder.release()
    return folder


def test_move_aside_killed_at_every_step_never_lets_another_config_adopt(victim, tmp_path, monkeypatch,
                                                                          small_run_cache):
    """run.resume=false under fts moves the hybrid run aside; killed after k renames, for every k. The next fts
    run (resume) is refused or starts with no episode; the next hybrid run is refused or resumes its own."""
    entries = [p for p in victim.iterdir() if p.name != LOCK_NAME]
    for k in range(len(entries) + 1):
        run_dir = copy_of(victim, tmp_path / f"k{k}")
        folder = run_dir / NAME
        rename_killed_after(monkeypatch, folder, k)
        fresh = config(small_run_cache, run_dir, OTHER, "run.resume=false")
        try:
            attempt(fresh)
        except Killed:
            pass
        monkeypatch.undo()
        after = attempt(config(small_run_cache, run_dir, OTHER))
        if isinstance(after, RunFolder):
            assert not after.latest_trajectories(), f"killed after {k} renames: fts adopted hybrid episodes"
        else:
            assert "holds" in str(after) and str(folder) in str(after), str(after)
        same = attempt(config(small_run_cache, run_dir))
        if isinstance(same, RunFolder):   # whatever it resumes is the hybrid run's own
            theirs = RunFolder(victim).latest_trajectories()
            assert all(t.to_dict() == theirs[key].to_dict() for key, t in same.latest_trajectories().items())


CHILD = textwrap.dedent("""
    import os, pathlib, signal, sys
    folder, k = pathlib.Path(sys.argv[1]), int(sys.argv[2])
    real, done = pathlib.Path.rename, [0]
    def rename(self, target):
        if pathlib.Path(self).parent == folder:
            if done[0] == k:
                os.kill(os.getpid(), signal.SIGKILL)   # the kill, between two moves
            done[0] += 1
        return real(self, target)
    pathlib.Path.rename = rename
    sys.argv = ["ecab.run", *sys.argv[3:]]
    import runpy
    runpy.run_module("ecab.run", run_name="__main__", alter_sys=True)   # as `python -m ecab.run` would
""")


@pytest.mark.parametrize("k", [2, 5])   # after the manifest would have gone in sorted order
def test_sigkill_in_the_middle_of_move_aside_then_another_config_is_refused(victim, tmp_path, small_run_cache,
                                                                            k):
    """A real `python -m ecab.run ... run.resume=false` killed by SIGKILL after k of its moves; the next real
    run of another config is refused with one line, and the victim's episodes are all still somewhere."""
    run_dir = copy_of(victim, tmp_path)
    folder = run_dir / NAME
    args = [*SMALL_RUN, f"cache_dir={small_run_cache}", f"run.dir={run_dir}", f"run.name={NAME}", "model=heuristic"]
    child = subprocess.run([sys.executable, "-c", CHILD, str(folder), str(k), *args, OTHER, "run.resume=false"],
                           cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert child.returncode == -signal.SIGKILL, child.stderr[-2000:]
    aside = [p for p in run_dir.iterdir() if p.name != NAME]
    assert len(aside) == 1 and len(list(aside[0].iterdir())) == k, "the child died after exactly k moves"
    nxt = subprocess.run([sys.executable, "-m", "ecab.run", *args, OTHER], cwd=ROOT, capture_output=True,
                         text=True, timeout=600)
    assert nxt.returncode != 0, nxt.stdout[-2000:]
    lines = nxt.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ecab: error: run folder") and "holds" in lines[0], nxt.stderr
    n_victim = len(RunFolder(victim).latest_trajectories())
    n_left = sum(len(RunFolder(p).latest_trajectories()) for p in (folder, aside[0]))
    assert n_left == n_victim, "no finished episode lost"


def test_deleted_manifest_is_refused_and_resume_false_moves_it_aside(victim, tmp_path, small_run_cache):
    run_dir = copy_of(victim, tmp_path)
    folder = run_dir / NAME
    (folder / "manifest.json").unlink()
    refused = attempt(config(small_run_cache, run_dir, OTHER))
    assert isinstance(refused, ConfigError)
    assert str(refused) == (f"run folder {folder} holds episodes but no manifest.json (an interrupted move or a "
                            "deleted manifest): move it away or use run.resume=false")
    refused_same = attempt(config(small_run_cache, run_dir))   # nobody knows whose they are: not even hybrid's
    assert isinstance(refused_same, ConfigError)
    fresh = attempt(config(small_run_cache, run_dir, OTHER, "run.resume=false"))
    assert isinstance(fresh, RunFolder) and not fresh.latest_trajectories()
    aside = [p for p in run_dir.iterdir() if p.name != NAME]
    assert len(aside) == 1 and RunFolder(aside[0]).latest_trajectories(), "the episodes were moved, not lost"


@pytest.mark.parametrize("text", ["{}", "[]", "{not json"])
def test_empty_or_broken_manifest_is_not_a_missing_one(victim, tmp_path, small_run_cache, text):
    """A manifest emptied or torn by hand is no licence to adopt: refused, naming the folder."""
    run_dir = copy_of(victim, tmp_path)
    folder = run_dir / NAME
    (folder / "manifest.json").write_text(text)
    refused = attempt(config(small_run_cache, run_dir, OTHER))
    assert isinstance(refused, ConfigError) and str(folder) in str(refused), refused


def test_run_killed_right_after_its_manifest_then_another_config_is_refused(tmp_path, small_run_cache):
    """A real run SIGKILLed as soon as its manifest exists (its first episodes may or may not be on disk): a run of
    another config into its folder is refused. A guard on the order of `_prepare_locked` (manifest before any
    trajectory)."""
    run_dir = tmp_path / "runs"
    args = [*SMALL_RUN, f"cache_dir={small_run_cache}", f"run.dir={run_dir}", f"run.name={NAME}", "model=heuristic"]
    child = subprocess.Popen([sys.executable, "-m", "ecab.run", *args, "runner.step_delay_s=5"], cwd=ROOT,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    manifest = run_dir / NAME / "manifest.json"
    try:
        while not manifest.exists() and child.poll() is None:
            time.sleep(0.02)   # polling for the file, not timing anything
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    assert manifest.exists()
    nxt = subprocess.run([sys.executable, "-m", "ecab.run", *args, OTHER], cwd=ROOT, capture_output=True,
                         text=True, timeout=600)
    assert nxt.returncode != 0 and "different config hash" in nxt.stderr, nxt.stderr[-2000:]

"""Every command line of ecab answers `--help` (and `-h`) with its usage and exit status 0.

The commands are found by walking the package, so a new one is covered the day it is added: every
`ecab/**/__main__.py` (`python -m ecab.<package>`), every other module with an `if __name__ == "__main__":`
block (`python -m ecab.run`, `python -m ecab.reduce.rejudge`, ...) and every `ecab.bench` module with a `main`.
Each command is one real subprocess; they run a few at a time, once per session."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "ecab"


def _has_main_block(tree: ast.Module) -> bool:
    return any(isinstance(node, ast.If) and "__name__" in ast.unparse(node.test) and "__main__" in ast.unparse(node.test)
               for node in tree.body)


def _has_main_function(tree: ast.Module) -> bool:
    return any(isinstance(node, ast.FunctionDef) and node.name == "main" for node in tree.body)


def cli_modules() -> dict[str, Path]:
    """{module name for `python -m`: its file} of every command line in the package."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if path.name == "__main__.py":
            found[".".join(parts[:-1])] = path
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if _has_main_block(tree) or (parts[:2] == ("ecab", "bench") and _has_main_function(tree)):
            found[".".join(parts)] = path
    return found


MODULES = cli_modules()
# `-h` too where the module parses its own arguments (argparse makes `-h` the same as `--help`): one subprocess
# per module and flag, so the argparse ones are asked once
HAND_PARSED = sorted(m for m, path in MODULES.items() if "ArgumentParser(" not in path.read_text(encoding="utf-8"))
JOBS = [(module, "--help") for module in sorted(MODULES)] + [(module, "-h") for module in HAND_PARSED]


def docstring_first_line(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


@pytest.fixture(scope="module")
def answers(tmp_path_factory) -> dict[tuple[str, str], subprocess.CompletedProcess]:
    """{(module, flag): the finished `python -m <module> <flag>`}, run two at a time per core."""
    cwd = tmp_path_factory.mktemp("help")   # a --help that wrote anything would write it here
    env = {**os.environ, "ECAB_CACHE_DIR": str(cwd / "cache")}

    def ask(job: tuple[str, str]) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", job[0], job[1]], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=300)

    with ThreadPoolExecutor(max_workers=2 * (os.cpu_count() or 1)) as pool:
        return dict(zip(JOBS, pool.map(ask, JOBS)))


def test_the_walk_finds_the_known_commands():
    for module in ("ecab.run", "ecab.construct", "ecab.catalog", "ecab.reduce", "ecab.judge", "ecab.view",
                   "ecab.sim", "ecab.data", "ecab.bench.search", "ecab.bench.peer_case"):
        assert module in MODULES
    if (PACKAGE / "study.py").exists():
        assert "ecab.study" in MODULES
    for module in ("ecab.run", "ecab.construct", "ecab.catalog", "ecab.judge", "ecab.bench.peer_case"):
        assert module in HAND_PARSED


@pytest.mark.parametrize("module, flag", JOBS)
def test_every_command_answers_help(answers, module, flag):
    done = answers[(module, flag)]
    assert done.returncode == 0, f"python -m {module} {flag}: exit {done.returncode}\n{done.stderr[-2000:]}"
    first = docstring_first_line(MODULES[module])
    assert "usage" in done.stdout.lower() or (first and first in done.stdout), done.stdout[-2000:]


def test_construct_audit_answers_help():
    done = subprocess.run([sys.executable, "-m", "ecab.construct", "audit", "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "usage: python -m ecab.construct audit" in done.stdout and "--baselines" in done.stdout

"""The package layers of docs/architecture.md §1 and the linter, as part of `make test` (issue 16).

import-linter reads the contract in pyproject.toml ([tool.importlinter]): every import, function-level ones
included, goes from a higher layer to a lower one, command-line entry points (`__main__` modules) aside.
ruff checks pyflakes and pycodestyle errors ([tool.ruff])."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parent.parent


def test_every_import_goes_down_the_layers(monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)
    assert lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True) == 0


def test_ruff_finds_nothing():
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "ecab", "tests", "jobs"], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr

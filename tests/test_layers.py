"""The package layers of docs/architecture.md §1 and the linter, as part of `make test` (issue 16).

import-linter reads the contract in pyproject.toml ([tool.importlinter]): every import, function-level ones
included, goes from a higher layer to a lower one, command-line entry points (`__main__` modules) aside.
ruff checks pyflakes and pycodestyle errors ([tool.ruff]). No module of ecab imports another in a circle
(grimp's import graph, function-level and TYPE_CHECKING imports included)."""
from __future__ import annotations

import graphlib
import subprocess
import sys
from pathlib import Path

import grimp
import pytest
from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parent.parent


def test_every_import_goes_down_the_layers(monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)
    assert lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True) == 0


def test_ruff_finds_nothing():
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "ecab", "tests", "jobs"], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


# Packages whose modules must not import each other in a circle (function-level and TYPE_CHECKING imports
# count): a shared concept belongs to one module that the others import.
ACYCLIC_PACKAGES = ("ecab",)   # the whole package: the import graph has no cycle (issue 16)


@pytest.mark.parametrize("package", ACYCLIC_PACKAGES)
def test_no_module_cycle_inside(package):
    graph = grimp.build_graph("ecab", cache_dir=None)
    members = {m for m in graph.modules if m == package or m.startswith(package + ".")}
    imports = {m: graph.find_modules_directly_imported_by(m) & members for m in members}
    try:
        list(graphlib.TopologicalSorter(imports).static_order())
    except graphlib.CycleError as exc:
        cycle = exc.args[1][::-1]         # graphlib lists each module before the ones that import it
        pytest.fail(f"import cycle in {package}: {' imports '.join(cycle)}")

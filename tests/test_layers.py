"""The package layers of docs/architecture.md §1 and the linter, as part of `make test` (issues 16, 28).

import-linter reads the contract in pyproject.toml ([tool.importlinter]): every import, function-level ones
included, goes from a higher layer to a lower one; `__main__` modules obey it like any other (the contract's
ignore_imports lists the exceptions left, and test_arrows_up_are_only_the_listed_exceptions keeps that list
exact). Every package of ecab is in a layer, and no two packages import each other (package-level cycles:
none). ruff checks pyflakes and pycodestyle errors ([tool.ruff]). No module of ecab imports another in a
circle (grimp's import graph, function-level and TYPE_CHECKING imports included)."""
from __future__ import annotations

import graphlib
import subprocess
import sys
import tomllib
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


@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph("ecab", cache_dir=None)


def contract() -> dict:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["tool"]["importlinter"]["contracts"][0]


def layer_of() -> dict[str, int]:
    """{package: its layer, 0 the lowest} from the contract."""
    layers = contract()["layers"]
    return {name.strip(): len(layers) - 1 - i for i, layer in enumerate(layers)
            for name in layer.replace("|", ":").split(":")}


def package(module: str) -> str:
    return ".".join(module.split(".")[:2])


def package_imports(graph) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """{(importing package, imported package): [(module, module), ...]} over ecab's top-level packages."""
    arrows: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            a, b = package(module), package(imported)
            if a != b and "ecab" not in (a, b):
                arrows.setdefault((a, b), []).append((module, imported))
    return arrows


def test_every_package_is_in_a_layer(graph):
    """import-linter checks only the packages the contract names: a new one would escape it."""
    packages = {package(m) for m in graph.modules} - {"ecab"}
    assert sorted(packages - set(layer_of())) == []


def test_no_two_packages_import_each_other(graph):
    arrows = package_imports(graph)
    cycles = sorted((a, b) for a, b in arrows if a < b and (b, a) in arrows)
    assert cycles == [], "; ".join(f"{a} <-> {b}: {arrows[a, b][0]} and {arrows[b, a][0]}" for a, b in cycles)


def test_arrows_up_are_only_the_listed_exceptions(graph):
    """Imports from a lower layer's module to a higher layer's: exactly the contract's ignore_imports."""
    level = layer_of()
    up = sorted({(m, package(d)) for (a, b), pairs in package_imports(graph).items() if level[a] < level[b]
                 for m, d in pairs})
    listed = sorted(tuple(s.strip() for s in rule.split("->")) for rule in contract().get("ignore_imports", []))
    assert up == listed


def test_the_simulators_default_policies_are_named_from_above():
    """`python -m ecab.sim` serves every stage's reply policy by name (their packages are above ecab.sim):
    each name loads, and none is below the simulator."""
    from ecab.sim.__main__ import DEFAULT_POLICIES, load_policies

    level = layer_of()
    assert all(level[package(spec.partition(":")[0])] > level["ecab.sim"] for spec in DEFAULT_POLICIES)
    assert [f.__name__ for f in load_policies()] == ["JudgePolicy", "VerbalizerPolicy", "HeuristicPolicy"]

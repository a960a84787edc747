"""`python -m ecab.catalog` as a user types it (real subprocesses, a real cache): `info` describes the catalog
its overrides name (and says which one without them), `list` shows every cached catalog with the newest
marked, `search` prints a header and the catalog it searched."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# Builds catalogs through the command line in subprocesses: the slow tier (make test-slow).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SMALLER, SMALL = "catalog.products=200", "catalog.products=300"


def catalog_cli(cache: Path, *args: str, ok: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "ECAB_CACHE_DIR": str(cache)}
    done = subprocess.run([sys.executable, "-m", "ecab.catalog", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    if ok:
        assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    return done


def field(output: str, name: str) -> str:
    return next(line.split(None, 1)[1] for line in output.splitlines() if line.startswith(name + " "))


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A cache with two catalogs built by the CLI, the 300-product one last: (cache, {override: fingerprint})."""
    cache = tmp_path_factory.mktemp("catalog-cli-cache")
    fingerprints = {}
    for products in (SMALLER, SMALL):
        fingerprints[products] = field(catalog_cli(cache, "build", products).stdout, "fingerprint")
    return cache, fingerprints


def test_info_describes_the_catalog_its_overrides_name(built):
    cache, fingerprints = built
    out = catalog_cli(cache, "info", SMALL).stdout
    assert field(out, "fingerprint") == fingerprints[SMALL] and field(out, "products") == "300"


def test_info_without_overrides_says_which_catalog_it_describes_and_hints_list(built):
    cache, _ = built
    done = catalog_cli(cache, "info", ok=False)
    assert "the default config's catalog (catalog=synthetic products=5000" in done.stdout
    assert "python -m ecab.catalog list" in done.stdout
    # the default catalog is not in this cache: one error line, and info builds nothing
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1 and "is not built" in lines[0], done.stderr
    assert len(list((cache / "catalogs").iterdir())) == 2


def test_list_shows_every_cached_catalog_newest_marked(built):
    cache, fingerprints = built
    lines = catalog_cli(cache, "list").stdout.splitlines()
    header = next(line for line in lines if "fingerprint" in line)
    for column in ("fingerprint", "source", "products", "size", "built at", "path"):
        assert column in header
    rows = [line for line in lines if fingerprints[SMALL][:12] in line or fingerprints[SMALLER][:12] in line]
    assert len(rows) == 2
    newest, older = rows
    assert newest.startswith("* ") and fingerprints[SMALL][:12] in newest and not older.startswith("*")
    assert " synthetic " in newest and " 300 " in newest and str(cache / "catalogs" / fingerprints[SMALL]) in newest


def test_search_prints_its_catalog_and_a_header(built):
    cache, fingerprints = built
    lines = catalog_cli(cache, "search", "wireless charger", SMALL).stdout.splitlines()
    assert lines[0].startswith(f"catalog {fingerprints[SMALL][:12]} (300 products")
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["rank", "product_id"])
    assert lines[header].split() == ["rank", "product_id", "price", "rating", "title"]
    assert lines[header + 1].lstrip().startswith("1. ")


@pytest.mark.parametrize("args", [["--help"], ["info", "--help"], ["list", "-h"], ["search", "--help"]])
def test_every_command_answers_help(tmp_path, args):
    out = catalog_cli(tmp_path, *args).stdout
    assert "python -m ecab.catalog build|info|list|search" in out

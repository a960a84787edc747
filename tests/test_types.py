"""mypy on ecab's core packages, as part of `make test` (issue 28).

The one command is `mypy ecab/schema ecab/core ecab/env ecab/judge ecab/runner ecab/runs` from the repository
root, configured by [tool.mypy] in pyproject.toml: it must report no error. The modules those packages import
from the rest of ecab are followed silently (their own errors are not reported). mypy keeps its incremental
cache in .mypy_cache (git-ignored): a first run takes ~25 s, a later one a few seconds."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TYPED_PACKAGES = ("ecab/schema", "ecab/core", "ecab/env", "ecab/judge", "ecab/runner", "ecab/runs")


def test_mypy_finds_no_error_in_the_core_packages():
    try:
        import mypy  # noqa: F401
    except ImportError:
        pytest.fail("mypy is not installed; it is a test dependency: pip install -e .[test]")
    done = subprocess.run([sys.executable, "-m", "mypy", *TYPED_PACKAGES], cwd=ROOT, capture_output=True,
                          text=True)
    assert done.returncode == 0, (f"`mypy {' '.join(TYPED_PACKAGES)}` failed "
                                  f"(exit {done.returncode}):\n{done.stdout}{done.stderr}")

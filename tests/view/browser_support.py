"""What the browser tests share: headless Chromium (ecab/bench/browser.py) and the CI rule for a missing one."""
from __future__ import annotations

import os

from ecab.bench.browser import console_errors, missing, start_browser, wait_for

__all__ = ["console_errors", "in_ci", "missing", "start_browser", "wait_for"]


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")

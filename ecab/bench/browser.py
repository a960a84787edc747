"""Headless Chromium driven from Python: the system's `chromium` through its matching `chromedriver` (Debian's
chromium and chromium-driver packages) and selenium, never a downloaded browser. Used by the report's
benchmark (bench/view.py) and its browser tests (tests/view/test_view_browser.py)."""
from __future__ import annotations

import shutil
import time
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
DRIVERS = ("chromedriver", "/usr/lib/chromium/chromedriver")
INSTALL = "apt-get install chromium chromium-driver, and selenium (pip install -e '.[test]')"


def _which(names) -> str | None:
    for name in names:
        found = shutil.which(name) or (name if Path(name).is_file() else None)
        if found:
            return found
    return None


def missing() -> str | None:
    """None when a headless Chromium can be driven here, else the one reason it cannot."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return f"selenium is not installed ({INSTALL})"
    if _which(BROWSERS) is None:
        return f"no Chromium found ({INSTALL})"
    if _which(DRIVERS) is None:
        return f"no chromedriver found ({INSTALL})"
    return None


def start_browser(width: int = 1400, height: int = 1000):
    """A headless Chromium keeping its console log (goog:loggingPrefs); no sandbox, as CI runs it as root."""
    reason = missing()
    if reason is not None:
        raise RuntimeError(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = _which(BROWSERS)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={width},{height}"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(options=options, service=Service(_which(DRIVERS)))


def wait_for(driver, script: str, timeout: float = 30.0, *args):
    """Poll a JS expression (a function body returning a value) until it is truthy; returns the value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = driver.execute_script(script, *args)
        if value:
            return value
        time.sleep(0.02)
    raise TimeoutError(f"timed out after {timeout} s waiting for: {script}")


def console_errors(driver) -> list[str]:
    """Console errors and uncaught exceptions since the last call."""
    return [entry["message"] for entry in driver.get_log("browser") if entry.get("level") == "SEVERE"]

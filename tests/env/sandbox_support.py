"""What the sandbox tests share: a sandbox that is known to work here, or one clear skip (a failure under CI)."""
from __future__ import annotations

import os
from typing import Iterator

import pytest

from ecab.env.sandbox import Sandbox, SandboxLimits


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def require_working(box: Sandbox) -> Sandbox:
    """`box` if python_execute can be isolated on this machine; otherwise skip (bubblewrap missing, say),
    or fail under CI=true, where a skip would hide a broken set-up."""
    status = box.status()
    if not status.available:
        box.close()
        if in_ci():
            pytest.fail(f"CI=true and {status.line()}", pytrace=False)
        pytest.skip(f"{status.line()} (install bubblewrap: apt-get install bubblewrap)")
    return box


def new_box(limits: SandboxLimits | None = None, **options) -> Sandbox:
    return require_working(Sandbox(limits, **options))


def open_box(limits: SandboxLimits | None = None, **options) -> Iterator[Sandbox]:
    """A working sandbox for a fixture to `yield from`, closed when the fixture's scope ends."""
    box = new_box(limits, **options)
    try:
        yield box
    finally:
        box.close()

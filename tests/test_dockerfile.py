"""The Dockerfile (the image jobs/ submit to Ray) gives python_execute its sandbox: bubblewrap is installed,
the build checks it runs, and the image's health check is one python_execute call through ecab's sandbox.
Docker is not needed: the file is read, and the health check's own command is run on this machine."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from env.sandbox_support import in_ci

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "Dockerfile"


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of each Dockerfile instruction, continuation lines joined, comments left out."""
    text = re.sub(r"\\\n\s*", " ", DOCKERFILE.read_text(encoding="utf-8"))
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1] if " " in line else "") for line in lines]


def healthcheck_command() -> list[str]:
    args = next(args for name, args in instructions() if name == "HEALTHCHECK")
    return json.loads(args.split("CMD", 1)[1].strip())


def test_the_image_installs_bubblewrap_as_root_and_runs_as_ray():
    steps = instructions()
    install = next(i for i, (name, args) in enumerate(steps)
                   if name == "RUN" and re.search(r"apt-get install .*\bbubblewrap\b", args))
    users = [(i, args.strip()) for i, (name, args) in enumerate(steps) if name == "USER"]
    assert any(i < install and user == "root" for i, user in users)
    assert users[-1][1] == "ray" and users[-1][0] > install
    assert any(name == "RUN" and "bwrap --version" in args for name, args in steps[install + 1:])


def test_the_health_check_is_a_python_execute_call_through_the_sandbox():
    command = healthcheck_command()
    assert command[:2] == ["python", "-c"] and "sandbox_status" in command[2]
    done = subprocess.run([sys.executable, *command[1:]], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    if done.returncode != 0 and "sandbox unavailable" in done.stdout and not in_ci():
        pytest.skip(done.stdout.strip())
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("python_execute sandbox: bubblewrap"), done.stdout

"""python_execute sandbox: allowed modules work, hostile code fails fast and the next call still works."""
from __future__ import annotations

import ast
import asyncio
import os
import signal
import time

import pytest

from ecab.env import sandbox as sb
from ecab.env.sandbox import ForbiddenCode, Sandbox, SandboxLimits, check_code

DEADLINE_S = 2.0


@pytest.fixture(scope="module")
def box():
    sandbox = Sandbox()
    yield sandbox
    sandbox.close()


def run_timed(box: Sandbox, code: str) -> tuple[dict, float]:
    started = time.monotonic()
    result = box.run_code(code)
    return result, time.monotonic() - started


def test_math_import_prints(box):
    assert box.run_code("import math; print(math.sqrt(16))") == {"output": "4.0\n", "error": None}


@pytest.mark.parametrize("code, expected", [
    ("import statistics\nprint(statistics.mean([1, 2, 3, 4]))", "2.5\n"),
    ("import json\nprint(json.dumps({'a': [1, 2]}, sort_keys=True))", '{"a": [1, 2]}\n'),
    ("import re\nprint(re.findall(r'\\d+', 'a1b22c333'))", "['1', '22', '333']\n"),
    ("from decimal import Decimal\nprint(Decimal('0.1') + Decimal('0.2'))", "0.3\n"),
    ("from fractions import Fraction\nprint(Fraction(1, 3) + Fraction(1, 6))", "1/2\n"),
    ("from math import floor, pi\nprint(floor(pi * 100) / 100)", "3.14\n"),
    ("prices = [19.99, 5.5]\nprint(f'{sum(prices):.2f}', '{:.1f}'.format(max(prices)))", "25.49 20.0\n"),
    ("def f(x):\n    return x * 2\nprint(list(map(f, range(3))), any([0, 1]), sorted({3, 1}))", "[0, 2, 4] True [1, 3]\n"),
    ("try:\n    1/0\nexcept ZeroDivisionError as e:\n    print('caught', e)", "caught division by zero\n"),
    ("print('héllo ✓')", "héllo ✓\n"),
    ("x = 1", ""),
    ("print(type(1) == int, type('a'))", "True <class 'str'>\n"),
    ("match [1, 2]:\n    case [a, *rest]:\n        print(a, rest)", "1 [2]\n"),
])
def test_allowed_code(box, code, expected):
    assert box.run_code(code) == {"output": expected, "error": None}


HOSTILE = {
    "infinite_loop": ("while True:\n    pass", "TimeoutError: execution exceeded"),
    "string_bomb": ("'x' * 10**10", "MemoryError"),
    "list_bomb": ("[0] * 10**10", "MemoryError"),
    # Usually the memory limit stops it; on a loaded machine the wall clock may fire first. Either is a
    # contained failure.
    "growing_list": ("x = []\nwhile True:\n    x.append('y' * 10**6)", "MemoryError|TimeoutError: execution exceeded"),
    "bigint_power": ("x = 10**10**9", "TimeoutError: execution exceeded"),
    "subclasses": ("().__class__.__bases__[0].__subclasses__()", "Forbidden"),
    "open_file": ("open('/etc/passwd').read()", "name 'open' is not defined"),
    "dunder_import": ("__import__('os')", "Forbidden"),
    "import_socket": ("import socket", "import of 'socket' is not allowed"),
    "import_os_fork": ("import os\nos.fork()", "import of 'os' is not allowed"),
    "import_subprocess": ("import subprocess", "import of 'subprocess' is not allowed"),
    "from_import_private": ("from re import _parser", "Forbidden"),
    "relative_import": ("from . import x", "not allowed"),
    "module_leak": ("import json\nprint(json.codecs)", "has no attribute 'codecs'"),
    "statistics_sys": ("import statistics\nstatistics.sys", "has no attribute 'sys'"),
    "frame_escape": ("def g():\n    yield me.gi_frame.f_back.f_globals\nme = g()\nprint(next(me))", "Forbidden"),
    "type_mro": ("type(1).mro()", "Forbidden"),
    "eval": ("eval('1+1')", "name 'eval' is not defined"),
    "getattr": ("getattr(1, 'real')", "name 'getattr' is not defined"),
    "class_def": ("class A:\n    pass", "class definitions are not allowed"),
    "type_three_args": ("type('A', (), {'x': 1})", "TypeError"),
    "match_attribute": ("match ():\n    case tuple(__class__=c):\n        print(c)", "Forbidden"),
    "recursion": ("def f():\n    return f()\nf()", "RecursionError"),
    "syntax": ("print(", "SyntaxError"),
    "system_exit": ("raise SystemExit(3)", "SystemExit"),
    "module_write": ("import math\nmath.pi = 3", "read-only"),
}


def test_hostile_inputs_fail_fast_and_sandbox_recovers(box):
    # Run all hostile inputs at once (they are independent children), then check each one.
    async def run_all():
        async def one(code):
            started = time.monotonic()
            result = await box.run_code_async(code)
            return result, time.monotonic() - started
        return await asyncio.gather(*(one(code) for code, _ in HOSTILE.values()))

    results = asyncio.run(run_all())
    for (name, (_, expected)), (result, elapsed) in zip(HOSTILE.items(), results):
        assert set(result) == {"error"}, (name, result)
        assert result["error"].startswith("Tool call failed: "), (name, result)
        assert any(e in result["error"] for e in expected.split("|")), (name, result)
    # Deadline per call, measured one at a time so that queueing cannot hide a slow failure.
    for name in ("infinite_loop", "string_bomb", "list_bomb", "subclasses", "open_file", "dunder_import",
                 "import_socket", "bigint_power"):
        result, elapsed = run_timed(box, HOSTILE[name][0])
        assert "error" in result and elapsed < DEADLINE_S, (name, result, elapsed)
    assert box.run_code("print(2 + 2)") == {"output": "4\n", "error": None}


def test_wall_clock_timeout_kills_child():
    # A CPU limit far above the wall limit: only the zygote's wall-clock deadline can stop this loop.
    box = Sandbox(SandboxLimits(cpu_seconds=30, wall_seconds=0.3))
    try:
        started = time.monotonic()
        result = box.execute("while True:\n    pass")
        assert time.monotonic() - started < DEADLINE_S
        assert result.kind == "timeout" and "0.3 s wall-clock" in result.error
        assert box.run_code("print('next')") == {"output": "next\n", "error": None}
    finally:
        box.close()


def test_many_concurrent_loops_do_not_starve_later_calls():
    box = Sandbox(SandboxLimits(cpu_seconds=5, wall_seconds=0.3, max_parallel=4))
    try:
        async def scenario():
            loops = [box.run_code_async("while True:\n    pass") for _ in range(8)]
            results = await asyncio.gather(*loops)
            assert all("wall-clock" in r["error"] for r in results)
            return await box.run_code_async("print('alive')")
        started = time.monotonic()
        assert asyncio.run(scenario()) == {"output": "alive\n", "error": None}
        assert time.monotonic() - started < 3 * DEADLINE_S  # two waves of 0.3 s + overhead
    finally:
        box.close()


def test_stdout_isolated_between_concurrent_calls(box):
    async def run_many():
        codes = [f"for i in range(50):\n    print('{n}')" for n in range(40)]
        return await asyncio.gather(*(box.run_code_async(c) for c in codes))

    results = asyncio.run(run_many())
    for n, result in enumerate(results):
        assert result == {"output": f"{n}\n" * 50, "error": None}


def test_state_does_not_leak_between_calls(box):
    assert box.run_code("secret = 42") == {"output": "", "error": None}
    assert "name 'secret' is not defined" in box.run_code("print(secret)")["error"]


def test_environment_is_scrubbed(monkeypatch):
    # A format-string attribute walk is invisible to the AST check and does reach os.environ (read-only,
    # as text); the zygote's scrubbed environment is what keeps host secrets out of reach.
    monkeypatch.setenv("ECAB_TEST_SECRET", "hunter2")
    box = Sandbox()
    try:
        code = ("import json\n"
                "print('{0.__globals__[codecs].__dict__[sys].modules[os].environ}'.format(json.dumps))")
        assert box.run_code(code) == {"output": "environ({})\n", "error": None}
    finally:
        box.close()


def test_output_is_capped():
    box = Sandbox(SandboxLimits(max_output_chars=100))
    try:
        result = box.run_code("print('a' * 1000)")
        assert result["error"] is None
        assert result["output"].startswith("a" * 100 + "\n[output truncated: 901 more characters]")
    finally:
        box.close()


def test_code_size_and_type_checked(box):
    assert "longer than" in box.run_code("x" * (box.limits.max_code_chars + 1))["error"]
    assert box.run_code(123)["error"] == "Tool call failed: TypeError: code must be a string, got int"


def test_zygote_crash_is_recovered():
    box = Sandbox()
    try:
        assert box.run_code("print(1)")["output"] == "1\n"
        os.kill(box.zygote_pid, signal.SIGKILL)  # the zygote this test started
        deadline = time.monotonic() + 5
        result = box.run_code("print(2)")
        while result.get("output") != "2\n" and time.monotonic() < deadline:
            result = box.run_code("print(2)")  # the call that raced the death may fail; later ones work
        assert result == {"output": "2\n", "error": None}
    finally:
        box.close()


def test_module_level_helpers_and_latency():
    sb.run_code("print(0)")  # warm the process-wide zygote
    started = time.monotonic()
    for _ in range(20):
        assert sb.run_code("print(1)") == {"output": "1\n", "error": None}
    per_call = (time.monotonic() - started) / 20
    assert per_call < 0.1, per_call
    assert asyncio.run(sb.run_code_async("print(3)")) == {"output": "3\n", "error": None}
    assert sb.execute("1/0").kind == "exception"


@pytest.mark.parametrize("code", ["x.__class__", "_x = 1", "def f(_a): pass", "lambda: y.f_globals",
                                  "def __init__(): pass", "import re._parser"])
def test_check_code_rejects(code):
    with pytest.raises(ForbiddenCode):
        check_code(ast.parse(code))

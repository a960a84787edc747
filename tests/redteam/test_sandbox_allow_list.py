"""The call's seccomp allow-list (issue 30, the sandbox leftovers; docs/decisions.md#sandbox-allow-list).

With the Python guard off (plain Python, a few processes allowed by RLIMIT_NPROC, as in
test_sandbox_attacks.py) each attack below got through before the worker's child installed the allow-list:
the dynamic loader ran a file written to /tmp (no exec bit needed), the code forked and spawned processes,
wrote files, and made syscalls no calculation needs. With the guard on, every allowed module still works.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "env"))
from sandbox_support import open_box  # noqa: E402  (tests/env is not a package)

from ecab.env import isolation  # noqa: E402
from ecab.env.sandbox import SandboxLimits  # noqa: E402

EPERM = 1


@pytest.fixture(scope="module")
def guarded():
    yield from open_box()


@pytest.fixture(scope="module")
def unguarded():
    if isolation.call_filter_program()[0] is None:
        pytest.skip(isolation.call_filter_program()[1])
    yield from open_box(SandboxLimits(max_processes=8), python_guard=False)


def loader() -> str:
    """The dynamic loader the sandbox's interpreter names (bound into every sandbox)."""
    path = isolation.elf_interpreter(isolation.probe_runtime().executable)
    if path is None:
        pytest.skip("the interpreter names no dynamic loader (static build)")
    return path


LOADER_ROUTE = '''
import os, sys
attempts = []
try:
    data = open(sys.executable, "rb").read()
except OSError as exc:
    data = None
    attempts.append("read refused %d" % exc.errno)
try:
    fd = os.open("/tmp/copy", os.O_CREAT | os.O_WRONLY, 0o644)   # no execute bit: the loader needs none
    os.write(fd, data or b"")
    os.close(fd)
    attempts.append("WROTE")
except OSError as exc:
    attempts.append("write refused %d" % exc.errno)
for target in ("/tmp/copy", sys.executable):
    argv = [LOADER, target, "-c", "raise SystemExit(7)"]
    try:
        pid = os.fork()
        if pid == 0:
            try:
                os.execv(LOADER, argv)
            finally:
                os._exit(99)
        code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        attempts.append("EXECUTED " + target if code == 7 else "exec failed %d" % code)
    except OSError as exc:
        attempts.append("fork refused %d" % exc.errno)
    try:
        pid = os.posix_spawn(LOADER, argv, {})
        code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        attempts.append("SPAWNED " + target if code == 7 else "spawn failed %d" % code)
    except OSError as exc:
        attempts.append("spawn refused %d" % exc.errno)
print(attempts)
'''


def test_the_loader_cannot_run_a_file_written_to_tmp(unguarded):
    result = unguarded.execute(LOADER_ROUTE.replace("LOADER", repr(loader())))
    assert result.ok, result.error
    for word in ("WROTE", "EXECUTED", "SPAWNED"):
        assert word not in result.output, result.output
    assert f"write refused {EPERM}" in result.output and f"spawn refused {EPERM}" in result.output, result.output


def test_no_process_can_be_started(unguarded):
    code = '''
import os, sys
for name, start in (("fork", os.fork),
                    ("spawn", lambda: os.posix_spawn(sys.executable, [sys.executable, "-c", "pass"], {})),
                    ("execv", lambda: os.execv(sys.executable, [sys.executable, "-c", "print('EXECUTED')"]))):
    try:
        pid = start()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        print("STARTED", name)
    except OSError as exc:
        print("refused", name, exc.errno)
print("system", os.system("true"))
import subprocess
try:
    subprocess.run([sys.executable, "-c", "pass"])
    print("STARTED subprocess")
except OSError as exc:
    print("refused subprocess", exc.errno)
'''
    result = unguarded.execute(code)
    assert result.ok, result.error
    assert "STARTED" not in result.output and "EXECUTED" not in result.output, result.output
    for name in ("fork", "spawn", "execv", "subprocess"):
        assert f"refused {name} {EPERM}\n" in result.output, result.output
    assert "system 0\n" not in result.output, result.output


def test_no_file_can_be_written_or_opened(unguarded):
    code = '''
import os
for path, flags in (("/tmp/new", os.O_CREAT | os.O_WRONLY), ("/dev/null", os.O_WRONLY), ("/", os.O_RDONLY)):
    try:
        os.close(os.open(path, flags, 0o600))
        print("OPENED", path)
    except OSError as exc:
        print("refused", path, exc.errno)
'''
    result = unguarded.execute(code)
    assert result.ok, result.error
    assert "OPENED" not in result.output and result.output.count(f" {EPERM}\n") == 3, result.output


def test_syscalls_outside_the_list_are_refused(unguarded):
    code = '''
import os
for name, call in (("setsid", os.setsid), ("sched_setaffinity", lambda: os.sched_setaffinity(0, {0})),
                   ("kill-self-0", lambda: os.kill(os.getpid(), 0)), ("getcwd", os.getcwd),
                   ("urandom", lambda: os.urandom(8))):
    try:
        call()
        print("ALLOWED", name)
    except OSError as exc:
        print("refused", name, exc.errno)
'''
    result = unguarded.execute(code)
    assert result.ok, result.error
    assert "ALLOWED" not in result.output and result.output.count(f" {EPERM}\n") == 5, result.output


def test_no_new_code_can_be_loaded(unguarded):
    # C extensions not loaded before the filter (and ctypes, which installed it) cannot be loaded: no file opens.
    code = '''
import importlib
for name in ("ctypes", "_ctypes", "socket", "mmap", "subprocess"):
    try:
        importlib.import_module(name)
        print("IMPORTED", name)
    except ImportError:
        print("refused", name)
'''
    result = unguarded.execute(code)
    assert result.ok, result.error
    assert "IMPORTED" not in result.output and result.output.count("refused") == 5, result.output


ALLOWED_MODULES_AT_WORK = '''
import json, math, re, statistics
from decimal import Decimal
from fractions import Fraction
prices = [19.99, 24.5, 18.0, 30.25]
print(json.dumps({"mean": statistics.mean(prices), "median": statistics.median(prices)}, sort_keys=True))
print(math.ceil(129.99 * 0.85 * 100) / 100, Decimal("1.10") * 3, Fraction(3, 4) + Fraction(1, 6))
print(re.findall(r"\\d+\\.\\d+", "a 1.5 b 22.25"), statistics.quantiles(range(100), n=4))
print(len(str(3 ** 1000)), 3 ** 100000 % 97, sorted(range(300000, 0, -1))[:2])
print("x".encode("ascii"), "é".encode("latin-1"), "ü".upper(), f"{1234567.891:,.2f} {0.5:%} {255:#x}")
print(statistics.mode([1, 1, 2]), statistics.Counter("abca").most_common(1))   # heapq, imported on first use
print(re.findall(r"\\N{LATIN SMALL LETTER E WITH ACUTE}", "caf\\xe9"))             # unicodedata, likewise
print(json.loads("[1]".encode("utf-16-le")), json.loads("[2]".encode("utf-8-sig")))  # codecs, likewise
try:
    {}["missing"]
except KeyError as exc:
    print("caught", exc)
'''


def test_the_allowed_modules_still_work_under_the_filter(guarded):
    result = guarded.execute(ALLOWED_MODULES_AT_WORK)
    assert result.ok, result.error
    assert result.output == plain_python(ALLOWED_MODULES_AT_WORK), result.output


def plain_python(code: str) -> str:
    """What `code` prints run here, unsandboxed (trusted: the test's own code)."""
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(code, {})
    return out.getvalue()


def test_memory_errors_and_big_output_still_reported(guarded):
    assert guarded.execute("x = [0] * (10 ** 9)").kind == "memory"
    result = guarded.execute("for i in range(50000):\n    print(i, 'x' * 10)")
    assert result.ok and "truncated" in result.output, result


def test_the_status_line_names_the_allow_list(guarded):
    assert "allow-list" in guarded.status().line()


def test_the_settings_carry_the_filter_as_text():
    from ecab.env.sandbox_worker import parse_settings

    assert parse_settings("uid=none,guard=1,call_filter=0a1b,token=t") == {
        "uid": None, "guard": 1, "call_filter": "0a1b", "token": "t"}
    assert parse_settings("call_filter=none")["call_filter"] is None


def test_the_modules_a_call_imports_are_found_anywhere_in_it():
    import _ast

    from ecab.env.sandbox_worker import imported_modules

    code = "import json, re.x as y\ndef f():\n    from statistics import mean\n    from . import z\n"
    assert imported_modules(compile(code, "<t>", "exec", _ast.PyCF_ONLY_AST)) == {"json", "re", "statistics"}


def test_the_filter_is_a_whole_bpf_program():
    program, status = isolation.call_filter_program()
    if program is None:
        pytest.skip(status)
    assert len(program) % 8 == 0 and 0 < len(program) // 8 < 4096, len(program)

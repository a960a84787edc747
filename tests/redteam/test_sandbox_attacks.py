"""Red-team attacks on python_execute's sandbox (issue 30 items 3-6), each in a real bubblewrap sandbox.

Each test is one attack from the red team's report, run the way it was found: through the Python guard as
agents get it, or with the guard off (`python_guard=False`: plain Python, every module importable), which
shows the operating-system wall and the worker's own checks hold without the guard.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "env"))
from sandbox_support import open_box  # noqa: E402  (tests/env is not a package)

from ecab.env.sandbox import SandboxLimits, _Jail, _result_from_reply  # noqa: E402

CAP = SandboxLimits().max_output_chars


@pytest.fixture(scope="module")
def guarded():
    yield from open_box()


@pytest.fixture(scope="module")
def unguarded():
    # A few processes allowed, so that an attack can fork and wait for what it ran.
    yield from open_box(SandboxLimits(max_processes=8), python_guard=False)


# --- item 3: error text capped like output; replies reported as what they are ----------------------------

def test_error_text_is_capped_like_output(guarded):
    result = guarded.execute("raise ValueError('x' * 150_000)")
    assert result.kind == "exception", result.error[:200]
    head = "ValueError: " + "x" * (CAP - len("ValueError: "))
    assert result.error == head + f"\n[error truncated: {150_012 - CAP} more characters]"


def test_a_ten_megabyte_error_is_an_error_not_a_timeout(guarded):
    result = guarded.execute("raise ValueError('x' * 10_000_000)")
    assert result.kind == "exception", (result.kind, result.error[:200])
    assert result.error.endswith(f"\n[error truncated: {10_000_012 - CAP} more characters]")


def test_an_error_just_over_the_reply_limit_is_an_error_not_an_exit(guarded):
    result = guarded.execute("raise ValueError('x' * 300_000)")   # the old reply limit was ~225 KB
    assert result.kind == "exception", (result.kind, result.error[:200])
    assert "truncated" in result.error


def test_wide_characters_cannot_push_a_reply_over_the_limit(guarded):
    # repr() writes each of these as 10 bytes: the characters kept are cut further to fit the reply.
    result = guarded.execute("print('\\U000e0001' * 100_000)\nraise ValueError('\\U000e0001' * 100_000)")
    assert result.kind == "exception", (result.kind, str(result.error)[:200])
    assert "truncated" in result.output and "truncated" in result.error


def test_a_lone_surrogate_in_the_source_is_reported_as_such(guarded):
    result = guarded.execute("x = '\ud800'\nprint(len(x))")
    assert result.kind != "crash" and "without a result" not in str(result.error), result


def test_a_reply_line_over_the_limit_is_named_as_such():
    # The host side on its own: a process that says it is ready, then writes 10 MB without a newline.
    code = "import sys\nsys.stdout.write('R\\n'); sys.stdout.flush()\nsys.stdout.write('x' * 10_000_000)"
    read_end, write_end = os.pipe()
    jail = _Jail([sys.executable, "-c", code], (), read_end, "ecab-test")
    os.close(write_end)
    try:
        assert jail.wait_ready(time.monotonic() + 30)
        line, timed_out = jail.read_reply(time.monotonic() + 30, 1000)
        result = _result_from_reply(line)
        assert not timed_out and result.kind == "internal"
        assert "reply over the 1000-byte limit" in result.error
    finally:
        jail.proc.kill()
        jail.reap()


# --- item 3: the reply channel is out of user code's reach --------------------------------------------------

FORGE = '''
import os
forged = repr({"ok": True, "output": "FORGED " + "y" * 100_000, "kind": "ok"}).encode() + b"\\n"
for fd in range(3, 1024):
    try:
        os.write(fd, forged)
    except OSError:
        pass
print("real")
'''


def test_a_forged_reply_on_fd_3_is_not_the_result(unguarded):
    result = unguarded.execute(FORGE)
    assert "FORGED" not in result.output, result.output[:200]
    assert len(result.output) <= CAP + 100 and len(result.error or "") <= CAP + 100


def test_the_reply_channel_is_not_open_in_user_code(unguarded):
    result = unguarded.execute("import os\ntry:\n    os.fstat(3)\n    print('OPEN')\nexcept OSError:\n"
                               "    print('closed')")
    assert result.output == "closed\n", result


# --- item 4: nothing written to /tmp can be run -----------------------------------------------------------

EXEC_FROM_TMP = '''
import os, sys
try:
    data = open(sys.executable, "rb").read()
except OSError:   # the call's allow-list opens no file: any bytes do, the write is refused first
    data = b"\\x7fELF"
attempts = []
for name, make in (("open-0755", lambda p: os.open(p, os.O_CREAT | os.O_WRONLY, 0o755)),
                   ("open-then-chmod", lambda p: os.open(p, os.O_CREAT | os.O_WRONLY, 0o644))):
    path = "/tmp/" + name
    try:
        fd = make(path)
        os.write(fd, data)
        os.close(fd)
        os.chmod(path, 0o755)
    except OSError as exc:
        attempts.append(f"{name}: refused {exc}")
    try:
        pid = os.fork()
    except OSError as exc:   # the call's allow-list starts no process
        attempts.append(f"{name}: exec failed (fork refused: {exc})")
        continue
    if pid == 0:
        try:
            os.execv(path, [path, "-c", "raise SystemExit(7)"])
        finally:
            os._exit(99)
    status = os.waitpid(pid, 0)[1]
    attempts.append(f"{name}: EXECUTED" if os.waitstatus_to_exitcode(status) == 7 else f"{name}: exec failed")
print(attempts)
'''


def test_a_program_copied_to_tmp_cannot_be_executed(unguarded):
    result = unguarded.execute(EXEC_FROM_TMP)
    assert result.ok, result.error
    assert "EXECUTED" not in result.output and result.output.count("exec failed") == 2, result.output


# --- item 5: the guard checks the names code binds -------------------------------------------------------

def test_except_as_cannot_bind_builtins(guarded):
    result = guarded.execute("try:\n    1 / 0\nexcept ZeroDivisionError as __builtins__:\n    print('bound')")
    assert result.kind == "forbidden", result


def test_a_builtin_type_rebound_cannot_be_a_class_pattern(guarded):
    code = ("import statistics\nint = statistics.namedtuple('P', ['a', 'b'])\n"
            "match int(1, 2):\n    case int(a, b):\n        print(a, b)")
    result = guarded.execute(code)
    assert result.kind == "forbidden", result


# --- item 6: memory outside RLIMIT_AS (memfd, socket buffers) ---------------------------------------------

def test_memfd_cannot_be_created(unguarded):
    result = unguarded.execute("import os\ntry:\n    os.memfd_create('x')\n    print('CREATED')\n"
                               "except OSError as exc:\n    print('refused', exc.errno)")
    assert result.ok and result.output.startswith("refused"), result


def test_sockets_cannot_be_created(unguarded):
    code = '''
import socket
for name, make in (("unix", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)),
                   ("pair", lambda: socket.socketpair())):
    try:
        make()
        print("CREATED", name)
    except OSError as exc:
        print("refused", name)
'''
    result = unguarded.execute(code)
    assert result.ok and "CREATED" not in result.output, result

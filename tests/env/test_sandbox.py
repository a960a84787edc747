"""python_execute sandbox: allowed modules work, hostile code fails fast and the next call still works.

What an escaped call can and cannot do to the host is in test_sandbox_redteam.py."""
from __future__ import annotations

import ast
import asyncio
import os
import signal
import subprocess
import sys
import time

import pytest

from ecab.env import sandbox as sb
from ecab.env.sandbox import ForbiddenCode, Sandbox, SandboxLimits, check_code
from sandbox_support import new_box, open_box


@pytest.fixture(scope="module")
def box():
    yield from open_box()


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
    "match_args_escape": ("T = type(int)", "type() of a class is not available"),
    "match_user_class": ("match 1:\n    case G(g):\n        pass", "class patterns are allowed only for"),
    "format_attribute": ("print('{0.__globals__[sys].argv}'.format(print))", "in a format string is not allowed"),
    "format_nested_spec": ("print('{0:{1.__class__}}'.format(1, 2))", "in a format string is not allowed"),
    "format_non_literal": ("t = '{0.real}'\nprint(t.format(1))", "allowed only on a string literal"),
    "format_method_ref": ("f = '{0.__class__}'.format\nprint(f(1))", "in a format string is not allowed"),
    "recursion": ("def f():\n    return f()\nf()", "RecursionError"),
    "syntax": ("print(", "SyntaxError"),
    "system_exit": ("raise SystemExit(3)", "SystemExit"),
    "module_write": ("import math\nmath.pi = 3", "read-only"),
}


def test_hostile_inputs_fail_fast_and_sandbox_recovers(box):
    # Run all hostile inputs at once (they are independent children), then check each one.
    async def run_all():
        return await asyncio.gather(*(box.run_code_async(code) for code, _ in HOSTILE.values()))

    results = asyncio.run(run_all())
    for (name, (_, expected)), result in zip(HOSTILE.items(), results):
        assert set(result) == {"error"}, (name, result)
        assert result["error"].startswith("Tool call failed: "), (name, result)
        assert any(e in result["error"] for e in expected.split("|")), (name, result)
    # One at a time too, so that queueing cannot hide a slow failure: each stops by its own limit (the memory
    # limit, the checker), and the ones that loop by the sandbox's wall-clock deadline (its TimeoutError), never
    # hang. No elapsed-time bound: on a loaded machine it measures the load.
    for name in ("infinite_loop", "string_bomb", "list_bomb", "subclasses", "open_file", "dunder_import",
                 "import_socket", "bigint_power"):
        result = box.run_code(HOSTILE[name][0])
        assert set(result) == {"error"}, (name, result)
        assert any(e in result["error"] for e in HOSTILE[name][1].split("|")), (name, result)
    assert box.run_code("print(2 + 2)") == {"output": "4\n", "error": None}


def test_wall_clock_timeout_kills_child():
    # A CPU limit far above the wall limit: only the host's wall-clock deadline can stop this loop.
    box = new_box(SandboxLimits(cpu_seconds=30, wall_seconds=0.3))
    try:
        result = box.execute("while True:\n    pass")
        # The 0.3 s wall-clock deadline stopped it (the 30 s CPU limit would say "CPU limit"): shown by what
        # the result says, not by timing the call.
        assert result.kind == "timeout" and "0.3 s wall-clock" in result.error
        assert box.run_code("print('next')") == {"output": "next\n", "error": None}
    finally:
        box.close()


def test_many_concurrent_loops_do_not_starve_later_calls():
    box = new_box(SandboxLimits(cpu_seconds=5, wall_seconds=0.3, max_parallel=4))
    try:
        async def scenario():
            loops = [box.run_code_async("while True:\n    pass") for _ in range(8)]
            results = await asyncio.gather(*loops)
            assert all("0.3 s wall-clock" in r["error"] for r in results)   # each stopped by its deadline
            return await box.run_code_async("print('alive')")
        assert asyncio.run(scenario()) == {"output": "alive\n", "error": None}
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


def test_environment_is_empty_even_without_the_python_guard(monkeypatch):
    monkeypatch.setenv("ECAB_TEST_SECRET", "hunter2")
    box = new_box(python_guard=False)
    try:
        # bwrap starts from an empty environment and sets only PWD.
        assert box.run_code("import os\nprint(sorted(os.environ))") == {"output": "['PWD']\n", "error": None}
    finally:
        box.close()


def test_output_is_capped():
    box = new_box(SandboxLimits(max_output_chars=100))
    try:
        result = box.run_code("print('a' * 1000)")
        assert result["error"] is None
        assert result["output"].startswith("a" * 100 + "\n[output truncated: 901 more characters]")
    finally:
        box.close()


def test_code_size_and_type_checked(box):
    assert "longer than" in box.run_code("x" * (box.limits.max_code_chars + 1))["error"]
    assert box.run_code(123)["error"] == "Tool call failed: TypeError: code must be a string, got int"


def test_a_warm_sandbox_that_died_is_replaced():
    box = new_box(SandboxLimits(warm_workers=2))
    try:
        assert box.run_code("print(1)")["output"] == "1\n"
        deadline = time.monotonic() + 10
        while len(box._idle) < 2 and time.monotonic() < deadline:  # the spawner refills the pool
            time.sleep(0.01)
        for jail in list(box._idle):
            os.killpg(jail.proc.pid, signal.SIGKILL)  # bwrap and its sandbox, while waiting for a call
            jail.proc.wait()
        assert box.run_code("print(2)") == {"output": "2\n", "error": None}
    finally:
        box.close()


def test_fails_closed_without_bubblewrap(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap on PATH
    box = Sandbox()
    try:
        status = box.status()
        assert not status.available and "bubblewrap (bwrap) is not installed" in status.detail
        assert status.line().startswith("python_execute sandbox unavailable: ")
        result = box.execute("print(1)")
        assert result.kind == "unavailable" and not result.ok
        assert box.run_code("print(1)")["error"].startswith("Tool call failed: sandbox unavailable: bubblewrap")
    finally:
        box.close()


def test_a_failed_availability_check_is_repeated_later(monkeypatch, tmp_path):
    new_box().close()  # skip here, with the reason, where no sandbox can run
    box = Sandbox()
    try:
        with monkeypatch.context() as patch:
            patch.setenv("PATH", str(tmp_path))
            assert not box.status().available
        assert not box.status().available          # kept within STATUS_RETRY_S
        monkeypatch.setattr(sb, "STATUS_RETRY_S", 0.0)
        assert box.status().available              # checked again, and bwrap is back on PATH
        assert box.run_code("print(5)") == {"output": "5\n", "error": None}
    finally:
        box.close()


def fake_sandbox(host_pid: int) -> subprocess.Popen:
    """A process the sweep takes for a sandbox: argv[0] is bwrap and an argument holds the token naming its host."""
    return subprocess.Popen(["bwrap", "-c", "import time; time.sleep(60)", f"uid=1,token=ecab-sandbox-{host_pid}-7"],
                            executable=sys.executable)


def test_sandboxes_whose_host_died_are_swept():
    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    finished.wait()                                   # its pid names a host that is gone
    orphan, live = fake_sandbox(finished.pid), fake_sandbox(os.getpid())
    try:
        # Every spawner and close on the machine sweeps too (another pytest-xdist worker, another ecab): one of
        # them may kill the orphan first, so what is checked is that it is killed, not this call's count.
        sb.sweep_orphans()
        assert orphan.wait(timeout=30) == -signal.SIGKILL
        assert live.poll() is None                    # its host (this process) is alive: not touched
    finally:
        for process in (orphan, live):
            process.kill()
            process.wait()


def test_a_sandbox_whose_parent_is_gone_is_swept_though_its_host_lives():
    # bwrap's clone, left waiting when bwrap died mid-set-up: its host lives, its parent is not the host.
    # Here: a fake sandbox naming this process as host, started by a shell that exits at once.
    launch = (f"import subprocess, sys; print(subprocess.Popen(['bwrap', '-c', 'import time; time.sleep(60)', "
              f"'uid=1,token=ecab-sandbox-{os.getpid()}-9'], executable=sys.executable, "
              f"stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).pid)")
    launcher = subprocess.run([sys.executable, "-c", launch], capture_output=True, text=True, check=True)
    orphan = int(launcher.stdout.split()[0])
    try:
        sb.sweep_orphans()   # (or a concurrent sweep of another process: the orphan's end is what is checked)
        deadline = time.monotonic() + 30
        while os.path.exists(f"/proc/{orphan}") and not open(f"/proc/{orphan}/stat").read().split(") ")[1].startswith("Z") \
                and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not os.path.exists(f"/proc/{orphan}") or \
            open(f"/proc/{orphan}/stat").read().split(") ")[1].startswith("Z"), "the orphan is still running"
    finally:
        try:
            os.kill(orphan, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_a_sandbox_being_set_up_is_killed_with_its_pid_1(box):
    """Destroying a sandbox that is still starting waits for bwrap to name its PID-1 and kills that, so no
    clone is left waiting for a bwrap that is gone."""
    tokens = []
    for step in range(40):                            # destroyed 0-20 ms into its set-up
        jail = box._start_jail()
        time.sleep(step * 0.0005)
        jail.destroy()
        tokens.append(jail.token.encode())
    time.sleep(0.5)
    left = [pid for token in tokens for pid in _processes_with(token + b" ") + _processes_with(token + b"\0")]
    assert not left, [_describe(pid) for pid in left]


def test_the_pid_1_is_read_from_bwraps_first_info_write_alone():
    # bwrap writes its info document in parts; a read between them saw '{"child-pid": N' with no closing brace,
    # failed to parse, and the sandbox was killed through bwrap: its PID-1 was left waiting for ever.
    read_end, write_end = os.pipe()
    jail = sb._Jail.__new__(sb._Jail)
    jail._info_read, jail._init_pid, jail._info = read_end, None, b""
    try:
        assert jail._read_init_pid(wait_s=0.0) is None                # nothing written yet
        os.write(write_end, b'{\n    "child-pid": 4242')
        assert jail._read_init_pid(wait_s=0.0) == 4242
        os.write(write_end, b',\n    "cgroup-namespace": 1\n}\n')
        assert jail._read_init_pid(wait_s=0.0) == 4242
    finally:
        os.close(read_end)
        os.close(write_end)


def test_two_sandbox_objects_in_one_process_never_share_a_token_or_uid():
    # With a counter per object they did: the test above then found another object's live warm worker
    # under one of its own tokens and called it an orphan (CI, once).
    first, second = Sandbox(SandboxLimits()), Sandbox(SandboxLimits())
    try:
        identities = [sb.sandbox_identity() for _ in range(3)]
        tokens = {token for token, _ in identities}
        uids = {uid for _, uid in identities}
        assert len(tokens) == 3 and len(uids) == 3
        assert all(token.startswith(f"ecab-sandbox-{os.getpid()}-") for token in tokens)
        assert all(sb.UID_BASE <= uid < sb.UID_BASE + sb.UID_SPAN for uid in uids)
    finally:
        first.close()
        second.close()


def _describe(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/status") as status, open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            fields = dict(line.split(":", 1) for line in status.read().splitlines())
            argv = cmdline.read().replace(bytes(1), b" ")[:200]
            return f"pid {pid} state {fields['State'].strip()} ppid {fields['PPid'].strip()} argv {argv!r}"
    except OSError:
        return f"pid {pid} (gone)"


def _processes_with(text: bytes) -> list[int]:
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/cmdline", "rb") as handle:
                    if text in handle.read():
                        found.append(int(entry.name))
            except OSError:
                pass
    return found


def test_module_level_helpers():
    new_box().close()  # skip here, with the reason, where no sandbox can run
    assert sb.run_code("print(1)") == {"output": "1\n", "error": None}
    assert asyncio.run(sb.run_code_async("print(3)")) == {"output": "3\n", "error": None}
    assert sb.execute("1/0").kind == "exception"
    assert sb.sandbox_status().available


@pytest.mark.parametrize("code", ["x.__class__", "_x = 1", "def f(_a): pass", "lambda: y.f_globals",
                                  "def __init__(): pass", "import re._parser", "f(**{}, _k=1)",
                                  "match x:\n    case C(a):\n        pass", "'{0._x}'.format(1)",
                                  "import json as _j"])
def test_check_code_rejects(code):
    with pytest.raises(ForbiddenCode):
        check_code(ast.parse(code))


@pytest.mark.parametrize("code", ["'{0:.2f} {1}'.format(1, 'a')", "match x:\n    case int(n) | str(n):\n        pass",
                                  "print(f'{x:>{width}}')"])
def test_check_code_accepts(code):
    check_code(ast.parse(code))

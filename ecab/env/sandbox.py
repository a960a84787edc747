"""`python_execute`: run agent-written Python safely, fast, and without blocking the event loop.

Why this shape (SPEC §2.2 tool 9 and §8 item 5 list the original's defects: broken imports, no limits,
process-global stdout, a dunder escape):

- **One forked child per call.** A small *zygote* process (this very file run as a script, with `-I -S`,
  a scrubbed environment and the six allowed modules pre-imported) forks one child per request. The child
  sets its rlimits (CPU seconds, address space, no file writes, no new processes), runs the code with
  stdout captured in memory, writes one JSON result to its own pipe and exits. A fork of a ~10 MB
  interpreter costs about a millisecond, every call starts from a clean state, and whatever the code
  does (memory bomb, crash, endless loop) dies with its child; the zygote and the next call are unaffected.
- **Never fork the host.** The host process (an asyncio runner or a Ray actor with LanceDB and model
  threads) only talks to the zygote over two pipes; forking it would be slow and unsafe with threads.
- **Async friendly.** One reader thread per host process resolves `concurrent.futures.Future`s; the async
  API awaits them with `asyncio.wrap_future`, so thousands of concurrent episodes share one zygote and no
  event loop ever blocks. The zygote runs at most `max_parallel` children at a time and queues the rest.
- **Limits:** CPU time (`RLIMIT_CPU`, the kernel kills a busy loop), address space (`RLIMIT_AS`, a big
  allocation raises MemoryError), a wall-clock deadline enforced by the zygote (SIGKILL; catches sleeping
  or starved children), a cap on captured output, and a cap on code size.
- **Restrictions inside the child**, in layers: an AST check rejects names and attributes starting with
  `_` (all dunders), frame/generator/traceback attributes (`gi_frame`, `f_back`, `f_globals`, ...) and
  class statements; builtins are an allow-list (the original's list plus harmless ones); `__import__` has
  the full 5-argument signature and only hands out *read-only proxies* of math, statistics, decimal,
  fractions, json and re that carry no module attributes (the real `json` module exposes `json.codecs`,
  whose `sys` would reach `os`). The zygote's environment is scrubbed so that even a string-format read
  (`"{0.x}".format(...)`, which the AST cannot see into) finds no secrets.

Result shapes (the conversion to the agent-level error shape happens HERE, because only the sandbox
knows why a run failed): success is `{"output": <stdout>, "error": None}` exactly like the original;
any failure (exception in the code, forbidden construct, limit hit, crash) is
`{"error": "Tool call failed: <ExcType>: <message>"}`, the shape the original's agent produced from the
propagated exception. ecab prefixes the exception type (the original gave bare `str(exc)`, e.g. `'x'`
for a KeyError), which is more useful to an agent and changes no score. `SandboxResult` keeps the
structured form (`kind`, `elapsed_s`) for analysis.

Public API: `run_code(code)`, `await run_code_async(code)`, `execute(code) -> SandboxResult`,
`await execute_async(code)`, `Sandbox(limits)` for a private instance, `default_sandbox()`.
"""
from __future__ import annotations

import ast
import asyncio
import concurrent.futures
import itertools
import json
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field

ALLOWED_MODULES = ("math", "statistics", "decimal", "fractions", "json", "re")

# The original's builtins (SPEC §2.2 tool 9) ...
SPEC_BUILTINS = ("print", "range", "len", "int", "float", "str", "list", "dict", "tuple", "set", "sum", "min",
                 "max", "abs", "round", "sorted", "enumerate", "zip", "map", "filter", "isinstance", "type",
                 "bool")
# ... plus pure, side-effect-free ones that calculation code commonly needs. Deliberately absent: open,
# eval, exec, compile, getattr/setattr/delattr, vars, dir, globals, locals, input, help, breakpoint,
# memoryview, object, super, classmethod/staticmethod/property, __build_class__.
EXTRA_BUILTINS = ("any", "all", "reversed", "divmod", "pow", "chr", "ord", "hex", "bin", "oct", "repr",
                  "format", "hash", "iter", "next", "frozenset", "slice", "callable", "complex", "bytes",
                  "issubclass", "hasattr", "id", "ascii",
                  "Exception", "ArithmeticError", "AssertionError", "AttributeError", "IndexError", "KeyError",
                  "LookupError", "NameError", "OverflowError", "RuntimeError", "StopIteration", "TypeError",
                  "ValueError", "ZeroDivisionError", "True", "False", "None")

# Attributes that lead from an ordinary object to frames, code or globals without a leading underscore.
FORBIDDEN_ATTRIBUTES = frozenset({
    "gi_frame", "gi_code", "gi_yieldfrom", "cr_frame", "cr_code", "cr_await", "cr_origin", "ag_frame",
    "ag_code", "ag_await", "f_back", "f_globals", "f_locals", "f_builtins", "f_code", "f_trace", "tb_frame",
    "tb_next", "co_code", "co_consts", "mro", "func_globals", "format_map",
})


@dataclass(frozen=True)
class SandboxLimits:
    cpu_seconds: int = 1           # RLIMIT_CPU soft limit; the kernel sends SIGXCPU, then SIGKILL a second later
    wall_seconds: float = 1.5      # the zygote SIGKILLs a child still running after this (from fork)
    memory_mb: int = 256           # RLIMIT_AS of the child (the forked interpreter itself is ~30 MB)
    max_output_chars: int = 20_000  # captured stdout beyond this is dropped, with a note
    max_code_chars: int = 100_000
    max_parallel: int = max(2, 2 * (os.cpu_count() or 1))  # children alive at once; the rest queue


@dataclass
class SandboxResult:
    ok: bool
    output: str = ""
    error: str | None = None      # "<ExcType>: <message>" or a limit message
    kind: str = "ok"              # ok | exception | forbidden | timeout | cpu_limit | memory | crash | internal
    elapsed_s: float = 0.0        # as measured by the zygote, fork to exit

    def to_tool_dict(self) -> dict:
        if self.ok:
            return {"output": self.output, "error": None}
        return {"error": f"Tool call failed: {self.error}"}


# =========================================================================================================
# Host side: one zygote per process, a reader thread, futures
# =========================================================================================================

class Sandbox:
    """A client of one zygote process. Thread-safe; usable from any thread and any event loop."""

    def __init__(self, limits: SandboxLimits | None = None):
        self.limits = limits or SandboxLimits()
        self._state_lock = threading.Lock()  # guards _proc/_pending; held only briefly
        self._write_lock = threading.Lock()  # serialises request frames; never held with _state_lock
        self._proc: subprocess.Popen | None = None
        self._pending: dict[int, concurrent.futures.Future] = {}
        self._ids = itertools.count(1)
        self._owner_pid = os.getpid()

    # -- public ------------------------------------------------------------------------------------------

    def submit(self, code: str) -> concurrent.futures.Future:
        """Queue one run; the future resolves to a SandboxResult (never raises for bad code)."""
        future: concurrent.futures.Future = concurrent.futures.Future()
        if not isinstance(code, str):
            future.set_result(SandboxResult(False, error=f"TypeError: code must be a string, got "
                                                          f"{type(code).__name__}", kind="exception"))
            return future
        if len(code) > self.limits.max_code_chars:
            future.set_result(SandboxResult(False, error=f"code is longer than {self.limits.max_code_chars} "
                                                          "characters", kind="forbidden"))
            return future
        with self._state_lock:
            proc, pending = self._ensure_started()
            request_id = next(self._ids)
            pending[request_id] = future
        frame = json.dumps({"id": request_id, "code": code}).encode() + b"\n"
        try:
            with self._write_lock:
                proc.stdin.write(frame)
                proc.stdin.flush()
        except (OSError, ValueError) as exc:  # the zygote died under us; the next submit restarts it
            with self._state_lock:
                pending.pop(request_id, None)
            if not future.done():
                future.set_result(SandboxResult(False, error=f"sandbox unavailable: {exc}", kind="internal"))
        return future

    def execute(self, code: str) -> SandboxResult:
        return self.submit(code).result()

    async def execute_async(self, code: str) -> SandboxResult:
        return await asyncio.wrap_future(self.submit(code))

    def run_code(self, code: str) -> dict:
        return self.execute(code).to_tool_dict()

    async def run_code_async(self, code: str) -> dict:
        return (await self.execute_async(code)).to_tool_dict()

    @property
    def zygote_pid(self) -> int | None:
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def close(self) -> None:
        with self._state_lock:
            proc, self._proc = self._proc, None
        if proc is not None:
            try:
                proc.stdin.close()  # the zygote exits on EOF and kills its children
                proc.wait(timeout=5)
            except Exception:
                proc.kill()

    # -- internals ---------------------------------------------------------------------------------------

    def _ensure_started(self) -> tuple[subprocess.Popen, dict]:
        """The live zygote and its pending table, starting a new zygote if needed (caller holds the lock)."""
        if os.getpid() != self._owner_pid:  # we were forked: the pipes belong to the parent
            self._proc, self._pending, self._owner_pid = None, {}, os.getpid()
        if self._proc is not None and self._proc.poll() is None:
            return self._proc, self._pending
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
        proc = subprocess.Popen(
            [sys.executable, "-I", "-S", os.path.abspath(__file__), json.dumps(asdict(self.limits))],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
            cwd="/", close_fds=True, start_new_session=True)
        # Each zygote gets its own pending table, so a dying one can only fail its own requests.
        self._proc, self._pending = proc, {}
        threading.Thread(target=self._read_results, args=(proc, self._pending), name="ecab-sandbox-reader",
                         daemon=True).start()
        return proc, self._pending

    def _read_results(self, proc: subprocess.Popen, pending: dict) -> None:
        for line in proc.stdout:
            try:
                message = json.loads(line)
                result = SandboxResult(**message["result"])
            except Exception as exc:  # a broken frame: fail loudly for that request only
                message, result = {}, SandboxResult(False, error=f"bad sandbox reply: {exc}", kind="internal")
            with self._state_lock:
                future = pending.pop(message.get("id"), None)
            if future is not None and not future.done():
                future.set_result(result)
        # EOF: the zygote exited (crash, kill or close). Fail what it still owed; the next submit restarts it.
        proc.wait()
        with self._state_lock:
            if self._proc is proc:
                self._proc = None
            owed = list(pending.values())
            pending.clear()
        for future in owed:
            if not future.done():
                future.set_result(SandboxResult(False, error="sandbox process exited", kind="internal"))


_default: Sandbox | None = None
_default_lock = threading.Lock()


def default_sandbox() -> Sandbox:
    """The process-wide sandbox with default limits (created on first use)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Sandbox()
        return _default


def execute(code: str) -> SandboxResult:
    return default_sandbox().execute(code)


async def execute_async(code: str) -> SandboxResult:
    return await default_sandbox().execute_async(code)


def run_code(code: str) -> dict:
    """python_execute, synchronously: `{"output", "error": None}` or `{"error": "Tool call failed: ..."}`."""
    return default_sandbox().run_code(code)


async def run_code_async(code: str) -> dict:
    """python_execute without blocking the event loop; same shapes as `run_code`."""
    return await default_sandbox().run_code_async(code)


# =========================================================================================================
# Code checks and the restricted namespace (used inside the child; pure, importable for tests)
# =========================================================================================================

class ForbiddenCode(Exception):
    pass


def check_code(tree: ast.AST) -> None:
    """Reject constructs that lead out of the sandbox; raises ForbiddenCode naming the first one."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and (node.attr.startswith("_") or node.attr in FORBIDDEN_ATTRIBUTES):
            raise ForbiddenCode(f"access to attribute '{node.attr}' is not allowed (line {node.lineno})")
        if isinstance(node, ast.Name) and node.id.startswith("_"):
            raise ForbiddenCode(f"names starting with '_' are not allowed: '{node.id}' (line {node.lineno})")
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("_"):
            raise ForbiddenCode(f"names starting with '_' are not allowed: '{node.name}' (line {node.lineno})")
        if isinstance(node, ast.arg) and node.arg.startswith("_"):
            raise ForbiddenCode(f"names starting with '_' are not allowed: '{node.arg}' (line {node.lineno})")
        if isinstance(node, ast.MatchClass):  # `case C(attr=x)` reads attributes by name, like `.attr`
            bad = [a for a in node.kwd_attrs if a.startswith("_") or a in FORBIDDEN_ATTRIBUTES]
            if bad:
                raise ForbiddenCode(f"access to attribute '{bad[0]}' is not allowed (line {node.lineno})")
        if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name and node.name.startswith("_"):
            raise ForbiddenCode(f"names starting with '_' are not allowed: '{node.name}' (line {node.lineno})")
        if isinstance(node, ast.MatchMapping) and node.rest and node.rest.startswith("_"):
            raise ForbiddenCode(f"names starting with '_' are not allowed: '{node.rest}' (line {node.lineno})")
        if isinstance(node, ast.ClassDef):
            raise ForbiddenCode(f"class definitions are not allowed (line {node.lineno})")
        if isinstance(node, (ast.AsyncFunctionDef, ast.Await, ast.AsyncFor, ast.AsyncWith)):
            raise ForbiddenCode(f"async code is not allowed (line {node.lineno})")
        if isinstance(node, (ast.Global, ast.Nonlocal)) and any(n.startswith("_") for n in node.names):
            raise ForbiddenCode(f"names starting with '_' are not allowed (line {node.lineno})")
        if isinstance(node, ast.alias) and any(part.startswith("_") for part in node.name.split(".")):
            raise ForbiddenCode(f"importing private names is not allowed: '{node.name}'")


class ModuleProxy:
    """A read-only view of an allowed module: its public, non-module attributes only."""

    def __init__(self, module):
        import types
        public = {name: getattr(module, name) for name in dir(module)
                  if not name.startswith("_") and not isinstance(getattr(module, name), types.ModuleType)}
        object.__setattr__(self, "_name", module.__name__)
        object.__setattr__(self, "_public", public)

    def __getattr__(self, name):
        try:
            return self._public[name]
        except KeyError:
            raise AttributeError(f"module '{self._name}' has no attribute '{name}'") from None

    def __setattr__(self, name, value):
        raise AttributeError(f"module '{self._name}' is read-only")

    def __repr__(self):
        return f"<module '{self._name}'>"


def make_proxies() -> dict[str, ModuleProxy]:
    import importlib
    return {name: ModuleProxy(importlib.import_module(name)) for name in ALLOWED_MODULES}


def make_builtins(proxies: dict[str, ModuleProxy], stdout) -> dict:
    import builtins

    def safe_import(name, globals=None, locals=None, fromlist=(), level=0):
        if level != 0 or name not in proxies:
            raise ImportError(f"import of '{name}' is not allowed; allowed modules: {', '.join(ALLOWED_MODULES)}")
        return proxies[name]

    def safe_print(*args, sep=" ", end="\n", file=None, flush=False):
        builtins.print(*args, sep=sep, end=end, file=stdout)  # `file` is ignored: stdout is the only sink

    def safe_type(obj):
        """type(x) only: the 3-argument form would build classes with dunder methods from a dict."""
        return builtins.type(obj)

    table = {name: getattr(builtins, name) for name in SPEC_BUILTINS + EXTRA_BUILTINS}
    table["print"] = safe_print
    table["type"] = safe_type
    table["__import__"] = safe_import
    return table


class CappedStdout:
    """In-memory stdout that keeps the first `limit` characters and counts the rest."""

    def __init__(self, limit: int):
        self.limit, self.parts, self.size, self.dropped = limit, [], 0, 0

    def write(self, text: str) -> int:
        room = self.limit - self.size
        if room > 0:
            self.parts.append(text[:room])
            self.size += min(len(text), room)
        self.dropped += max(len(text) - max(room, 0), 0)
        return len(text)

    def flush(self) -> None:
        pass

    def getvalue(self) -> str:
        text = "".join(self.parts)
        if self.dropped:
            text += f"\n[output truncated: {self.dropped} more characters]"
        return text


def run_restricted(code: str, proxies: dict[str, ModuleProxy], max_output_chars: int) -> dict:
    """Check, compile and run `code`; returns the SandboxResult fields (without timing)."""
    stdout = CappedStdout(max_output_chars)
    try:
        tree = ast.parse(code, "<python_execute>", "exec")
        check_code(tree)
        compiled = compile(tree, "<python_execute>", "exec")
    except ForbiddenCode as exc:
        return {"ok": False, "error": f"Forbidden: {exc}", "kind": "forbidden"}
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}", "kind": "exception"}
    namespace = {"__builtins__": make_builtins(proxies, stdout), "__name__": "__main__"}
    try:
        exec(compiled, namespace)
    except MemoryError:
        return {"ok": False, "error": "MemoryError: memory limit exceeded", "kind": "memory",
                "output": stdout.getvalue()}
    except BaseException as exc:  # SystemExit and KeyboardInterrupt included: the child reports and exits
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}", "kind": "exception",
                "output": stdout.getvalue()}
    return {"ok": True, "output": stdout.getvalue(), "kind": "ok"}


# =========================================================================================================
# Zygote side (this file run as a script): read requests on stdin, fork a child each, reply on stdout
# =========================================================================================================

def _child(code: str, write_fd: int, proxies, limits: SandboxLimits) -> None:
    """In the forked child: lock down, run, write one JSON result, exit. Never returns."""
    import resource
    try:
        os.closerange(0, write_fd)  # stdin/stdout are the zygote's protocol pipes; other fds are siblings'
        os.closerange(write_fd + 1, 1 << 16)
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            if fd != devnull and fd != write_fd:
                os.dup2(devnull, fd)
        os.environ.clear()
        memory = limits.memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 1))
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
        resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        result = run_restricted(code, proxies, limits.max_output_chars)
        payload = json.dumps(result, ensure_ascii=True).encode()
    except MemoryError:
        payload = b'{"ok": false, "error": "MemoryError: memory limit exceeded", "kind": "memory"}'
    except BaseException as exc:  # never let the child fall back into the zygote loop
        try:
            payload = json.dumps({"ok": False, "error": f"sandbox setup failed: {exc}", "kind": "internal"}).encode()
        except BaseException:
            payload = b'{"ok": false, "error": "sandbox setup failed", "kind": "internal"}'
    try:
        view = memoryview(payload)
        while view:
            view = view[os.write(write_fd, view):]
    finally:
        os._exit(0)


@dataclass
class _Running:
    request_id: int
    pid: int
    read_fd: int
    started: float
    chunks: list[bytes] = field(default_factory=list)
    killed_for_time: bool = False


def _describe_death(status: int, run: _Running, limits: SandboxLimits) -> SandboxResult:
    if run.killed_for_time:
        return SandboxResult(False, error=f"TimeoutError: execution exceeded {limits.wall_seconds} s wall-clock "
                                          "limit", kind="timeout")
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig == signal.SIGXCPU:
            return SandboxResult(False, error=f"TimeoutError: execution exceeded {limits.cpu_seconds} s CPU "
                                              "limit", kind="cpu_limit")
        if sig == signal.SIGKILL:
            return SandboxResult(False, error="sandbox process was killed (CPU or memory limit)", kind="crash")
        return SandboxResult(False, error=f"sandbox process crashed ({signal.Signals(sig).name})", kind="crash")
    return SandboxResult(False, error=f"sandbox process exited with code {os.waitstatus_to_exitcode(status)} "
                                      "without a result", kind="crash")


def _zygote_main(limits: SandboxLimits) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C in the host terminal is the host's business
    proxies = make_proxies()
    out = os.fdopen(1, "wb", buffering=0)
    selector = selectors.DefaultSelector()
    selector.register(0, selectors.EVENT_READ, None)
    queue: list[tuple[int, str]] = []
    running: dict[int, _Running] = {}  # by read fd
    inbox = b""
    stdin_open = True

    def reply(request_id: int, result: SandboxResult) -> None:
        try:
            out.write(json.dumps({"id": request_id, "result": asdict(result)}).encode() + b"\n")
        except BrokenPipeError:  # the host is gone; finish reaping children, then exit
            pass

    def start(request_id: int, code: str) -> None:
        try:
            read_fd, write_fd = os.pipe()
        except OSError as exc:
            reply(request_id, SandboxResult(False, error=f"sandbox could not start: {exc}", kind="internal"))
            return
        try:
            pid = os.fork()
        except OSError as exc:  # EAGAIN/ENOMEM: fail this request, keep serving
            os.close(read_fd)
            os.close(write_fd)
            reply(request_id, SandboxResult(False, error=f"sandbox could not start: {exc}", kind="internal"))
            return
        if pid == 0:
            os.close(read_fd)
            _child(code, write_fd, proxies, limits)
        os.close(write_fd)
        os.set_blocking(read_fd, False)
        running[read_fd] = _Running(request_id, pid, read_fd, time.monotonic())
        selector.register(read_fd, selectors.EVENT_READ, read_fd)

    def finish(run: _Running) -> None:
        selector.unregister(run.read_fd)
        os.close(run.read_fd)
        del running[run.read_fd]
        _, status = os.waitpid(run.pid, 0)
        elapsed = time.monotonic() - run.started
        try:
            result = SandboxResult(**json.loads(b"".join(run.chunks)))
        except Exception:
            result = _describe_death(status, run, limits)
        result.elapsed_s = round(elapsed, 4)
        reply(run.request_id, result)

    while stdin_open or queue or running:
        while queue and len(running) < limits.max_parallel:
            start(*queue.pop(0))
        now = time.monotonic()
        deadlines = [r.started + limits.wall_seconds for r in running.values() if not r.killed_for_time]
        timeout = max(0.0, min(deadlines) - now) if deadlines else None
        for key, _ in selector.select(timeout):
            if key.data is None:  # a request arrived
                data = os.read(0, 1 << 16)
                if not data:
                    stdin_open = False
                    selector.unregister(0)
                    for run in running.values():  # the host is gone: nobody wants these results
                        os.kill(run.pid, signal.SIGKILL)
                    queue.clear()
                    continue
                inbox += data
                *lines, inbox = inbox.split(b"\n")
                for line in lines:
                    request = json.loads(line)
                    queue.append((request["id"], request["code"]))
            else:
                run = running[key.data]
                chunk = os.read(run.read_fd, 1 << 16)
                if chunk:
                    run.chunks.append(chunk)
                else:
                    finish(run)
        now = time.monotonic()
        for run in list(running.values()):
            if not run.killed_for_time and now - run.started >= limits.wall_seconds:
                run.killed_for_time = True
                run.chunks.clear()
                os.kill(run.pid, signal.SIGKILL)  # its pipe then reports EOF and finish() reaps it


if __name__ == "__main__":
    _zygote_main(SandboxLimits(**json.loads(sys.argv[1])))

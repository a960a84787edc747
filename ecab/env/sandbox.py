"""`python_execute`: every call in a fresh operating-system sandbox, fast, without blocking the event loop.

Each call runs in its own bubblewrap sandbox (ecab/env/isolation.py: no host filesystem, no network, own PID
namespace, unprivileged, seccomp) holding one worker process (ecab/env/sandbox_worker.py) that serves exactly
one request and exits; the sandbox and everything started in it are then killed. Its result comes back over the
pipes the host made for that sandbox alone. Why bubblewrap, and the measurements: docs/decisions.md#sandbox.

Speed comes from warm sandboxes: a spawner thread keeps `warm_workers` sandboxes started and waiting, so a call
pays only its own run (~ms), not the ~50 ms of namespace set-up and interpreter start. Calls run on
`max_parallel` call threads; the async API awaits their futures, so thousands of episodes share one pool.
Waiting calls are queued per owner (an episode's key, `submit(code, owner=...)`) and dispatched fairly
(ecab/env/sandbox_queue.py), so one episode's loops cannot hold every slot while another's `print(1)` waits.

Fail closed: where the kernel or the machine refuses what the sandbox needs (no bwrap, no namespaces),
`status()` says so once and every call answers `Tool call failed: sandbox unavailable: <why>`; code never
runs unsandboxed.

Result shapes are the original's: success `{"output": <stdout>, "error": None}`; any failure
`{"error": "Tool call failed: <ExcType>: <message>"}` (docs/original-harness.md §2.2 tool 9).
`SandboxResult` keeps the structured form (`kind`, `queued_s`, `run_s`) for analysis.

Public API: `run_code(code)`, `await run_code_async(code)`, `execute(code) -> SandboxResult`,
`await execute_async(code)`, `Sandbox(limits)` for a private instance, `default_sandbox()`, `sandbox_status()`.
"""
from __future__ import annotations

import ast
import asyncio
import atexit
import collections
import concurrent.futures
import itertools
import os
import queue
import re
import select
import signal
import subprocess
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Callable, Hashable

from ecab.core.process_wide import process_wide
from ecab.env import isolation
from ecab.env.sandbox_queue import FairQueue, Turn
from ecab.env.sandbox_worker import ALLOWED_MODULES, ForbiddenCode, check_code  # noqa: F401 (re-exported)

UID_BASE = 1_900_000_000   # root mode: sandboxes run as UID_BASE + n, uids no account on the host uses
UID_SPAN = 65_536
_SANDBOX_NUMBERS = itertools.count()   # process-wide: two Sandbox objects in one process never share a token or uid
START_TIMEOUT_S = 30.0     # a sandbox that is not ready by then (a machine under heavy load) fails the call
REPLY_FIELDS = {"ok", "output", "error", "kind"}
STATUS_RETRY_S = 60.0      # a failed availability check is repeated after this long
INFO_WAIT_S = 2.0          # how long a sandbox being set up may take to name its PID-1 before it is killed
INFO_CHILD_PID = re.compile(rb'"child-pid"\s*:\s*(\d+)')
HOST_TOKEN = re.compile(rb"token=ecab-sandbox-(\d+)-\d+")   # in a sandbox's argv: the pid of the host that started it
DIRECT_OWNER = "direct"    # the owner of calls that name none (scripts, the module-level helpers): one shared queue
HEAVY_SHARE = 0.25         # an owner whose calls run >= this share of the wall limit (on average) is heavy
SCHEDULERS = ("fair", "fifo")   # fifo: the pool before issue 30, kept for ecab.bench.sandbox's comparison


@dataclass(frozen=True)
class SandboxLimits:
    cpu_seconds: int = 1           # RLIMIT_CPU of the worker (SIGXCPU, then SIGKILL a second later)
    wall_seconds: float = 1.5      # from the request to the reply; then the whole sandbox is killed
    memory_mb: int = 256           # RLIMIT_AS of the worker
    max_output_chars: int = 20_000  # captured stdout beyond this is dropped, with a note
    max_code_chars: int = 100_000
    max_parallel: int = max(2, 2 * (os.cpu_count() or 1))  # calls running at once; the rest queue
    warm_workers: int = 4          # sandboxes kept started and waiting for a call
    max_processes: int = 0         # RLIMIT_NPROC (0 refuses fork); the call's allow-list refuses fork anyway
    tmp_mb: int = 8                # size of the sandbox's private /tmp


@dataclass
class SandboxResult:
    ok: bool
    output: str = ""
    error: str | None = None      # "<ExcType>: <message>" or a limit message
    kind: str = "ok"              # ok | exception | forbidden | timeout | cpu_limit | memory | crash | internal
                                  # | unavailable
    run_s: float = 0.0            # request to reply, as the host measured it: what the wall limit counts
    queued_s: float = 0.0         # submit to request: waiting for a slot and a started sandbox (no limit counts it)
    sandbox_id: str = ""          # the sandbox's token (tests look for its processes after the call)
    dispatch_index: int = -1      # the n-th call this Sandbox took from its queue (-1: answered without a slot)

    def to_tool_dict(self) -> dict:
        if self.ok:
            return {"output": self.output, "error": None}
        return {"error": f"Tool call failed: {self.error}"}


@dataclass(frozen=True)
class SandboxStatus:
    available: bool
    detail: str       # how calls are isolated, or why they cannot be

    def line(self) -> str:
        if self.available:
            return f"python_execute sandbox: {self.detail}"
        return f"python_execute sandbox unavailable: {self.detail}; python_execute calls will fail"


def sandbox_identity() -> tuple[str, int]:
    """A new sandbox's token (in its argv: how the sweep and the tests find its processes) and its uid in root
    mode. Numbered per process, not per Sandbox object: with a counter per object, two objects in one process
    (a test's and an environment's) gave their sandboxes the same token, so one's live worker passed for the
    other's orphan. The uid is offset by the pid so that hosts on one machine start on different uids."""
    number = next(_SANDBOX_NUMBERS)
    return f"ecab-sandbox-{os.getpid()}-{number}", UID_BASE + (os.getpid() * 7919 + number) % UID_SPAN


# =========================================================================================================
# One sandbox: a bwrap process holding one worker, the pipes to it, and its teardown
# =========================================================================================================

class _Jail:
    """A started sandbox. Used for exactly one request, then destroyed with everything inside it."""

    def __init__(self, argv: list[str], pass_fds: tuple[int, ...], info_read: int, token: str):
        self.token = token
        self._info_read = info_read
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     pass_fds=pass_fds, close_fds=True, start_new_session=True, cwd="/",
                                     env={"PATH": "/usr/bin:/bin"})
        stdin, stdout, stderr = self.proc.stdin, self.proc.stdout, self.proc.stderr
        assert stdin is not None and stdout is not None and stderr is not None   # all three are PIPE
        self._stdin, self._stdout, self._stderr = stdin, stdout, stderr
        self._buffer = b""
        self._init_pid: int | None = None
        self._info = b""                    # what bwrap has written to the info pipe so far

    def wait_ready(self, deadline: float) -> bool:
        line = self._read_line(deadline, limit=64)
        return line == b"R"

    def send(self, code: str) -> bool:
        """Hand the request to the worker; False if it is gone (it died while waiting)."""
        data = code.encode("utf-8", "surrogatepass")
        if self.proc.poll() is not None:
            return False
        try:
            self._stdin.write(len(data).to_bytes(8, "big") + data)
            self._stdin.close()
        except OSError:
            return False
        return True

    def read_reply(self, deadline: float, reply_limit: int) -> tuple[bytes | None, bool]:
        """The reply line, or None; and whether the deadline passed. A line longer than `reply_limit` is
        answered with a reply made here that says so: left unread, the worker would block on the full pipe
        until the wall limit (reported as a timeout) or exit with the rest in the pipe (as a crash)."""
        line = self._read_line(deadline, reply_limit)
        if line is None and len(self._buffer) > reply_limit:
            return over_limit_reply(reply_limit), False
        return line, line is None and time.monotonic() >= deadline

    def _read_line(self, deadline: float, limit: int) -> bytes | None:
        fd = self._stdout.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or len(self._buffer) > limit:
                return None
            if not poller.poll(remaining * 1000):
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line

    def kill(self) -> None:
        """SIGKILL the sandbox's PID-1: the kernel then kills every process in its PID namespace.

        A sandbox still being set up is given up to INFO_WAIT_S to name its PID-1 first. Killed before that,
        bwrap (0.8) leaves its PID-1 blocked for ever on an eventfd that bwrap was about to write, before that
        child has set its own --die-with-parent: a process no one reaps (see sweep_orphans)."""
        alive = self.proc.poll() is None
        init_pid = self._read_init_pid(wait_s=INFO_WAIT_S if alive else 0.0)
        if self.proc.poll() is None:
            try:
                if init_pid:
                    os.kill(init_pid, signal.SIGKILL)
                else:  # no info from bwrap: kill bwrap itself; --die-with-parent does the rest
                    self.proc.kill()
            except ProcessLookupError:
                pass

    def reap(self) -> None:
        """Wait for bwrap, which exits only once the sandbox's namespace is empty, and close the pipes."""
        try:
            self.proc.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for stream in (self._stdin, self._stdout, self._stderr):
            try:
                stream.close()
            except OSError:
                pass
        os.close(self._info_read)

    def destroy(self) -> None:
        self.kill()
        self.reap()

    def _read_init_pid(self, wait_s: float = 0.0) -> int | None:
        """bwrap writes {"child-pid": N, ...} (N: the sandbox's PID-1, in host numbering) to the info pipe.

        It writes that document in several writes (the pid, then namespace ids, then the closing brace), so a
        read can see the first part only: the pid is taken from what has arrived, never from a parsed whole.
        (Parsing the whole document failed on such a read, and the sandbox was then killed through bwrap,
        which leaves its PID-1 waiting for ever.) The first write carries the whole number: pipe writes of
        under PIPE_BUF bytes are atomic."""
        deadline = time.monotonic() + wait_s
        while self._init_pid is None:
            readable = select.select([self._info_read], [], [], max(0.0, deadline - time.monotonic()))[0]
            chunk = b""
            if readable:
                try:
                    chunk = os.read(self._info_read, 4096)
                except OSError:
                    pass
            self._info += chunk
            found = INFO_CHILD_PID.search(self._info)
            if found:
                self._init_pid = int(found.group(1)) or None
            if not chunk or time.monotonic() >= deadline:   # end of file (bwrap gone) or out of time
                break
        return self._init_pid

    def failure_text(self) -> str:
        """bwrap's own complaint (first line), for a sandbox that never got ready. Never blocks for long:
        a process left in the sandbox could keep the pipe open."""
        try:
            self.proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            pass
        text = ""
        fd = self._stderr.fileno()
        if select.select([fd], [], [], 0.2)[0]:
            os.set_blocking(fd, False)
            try:
                text = os.read(fd, 4096).decode("utf-8", "replace").strip()
            except OSError:
                pass
        return text.splitlines()[0] if text else f"sandbox exited with status {self.proc.returncode}"


def over_limit_reply(reply_limit: int) -> bytes:
    """The reply line the host puts in place of a worker's reply line longer than `reply_limit` bytes (the
    worker caps what it sends below it, so only a broken or subverted worker gets here)."""
    return repr({"ok": False, "error": f"sandbox reply over the {reply_limit}-byte limit",
                 "kind": "internal"}).encode()


def _result_from_reply(line: bytes) -> SandboxResult:
    """The worker's reply is a Python literal; anything else (a hostile call can write its own channel) is
    reported as a bad reply, never trusted beyond these four fields."""
    try:
        fields = ast.literal_eval(line.decode("utf-8", "replace"))
        if not isinstance(fields, dict) or not set(fields) <= REPLY_FIELDS or not isinstance(fields.get("ok"), bool):
            raise ValueError("unexpected fields")
        return SandboxResult(ok=fields["ok"], output=str(fields.get("output") or ""),
                             error=None if fields.get("error") is None else str(fields["error"]),
                             kind=str(fields.get("kind") or ("ok" if fields["ok"] else "exception")))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
        return SandboxResult(False, error=f"bad sandbox reply: {type(exc).__name__}", kind="internal")


def _describe_death(returncode: int | None, timed_out: bool, limits: SandboxLimits) -> SandboxResult:
    if timed_out:
        return SandboxResult(False, error=f"TimeoutError: execution exceeded {limits.wall_seconds} s wall-clock "
                                          "limit", kind="timeout")
    # bwrap exits with the worker's status, 128 + N for a worker killed by signal N (-N if bwrap itself was).
    sig = None
    if returncode is not None and returncode > 128:
        sig = returncode - 128
    elif returncode is not None and returncode < 0:
        sig = -returncode
    if sig == signal.SIGXCPU:
        return SandboxResult(False, error=f"TimeoutError: execution exceeded {limits.cpu_seconds} s CPU limit",
                             kind="cpu_limit")
    if sig == signal.SIGKILL:
        return SandboxResult(False, error="sandbox process was killed (CPU or memory limit)", kind="crash")
    if sig is not None:
        return SandboxResult(False, error=f"sandbox process crashed ({signal.Signals(sig).name})", kind="crash")
    return SandboxResult(False, error=f"sandbox process exited with code {returncode} without a result",
                         kind="crash")


# =========================================================================================================
# Orphans: sandboxes whose host died while they were being set up
# =========================================================================================================

def sweep_orphans() -> int:
    """Kill orphaned sandboxes; returns how many.

    bwrap (0.8) is two processes while it sets a sandbox up: bwrap, the host's child, and its clone, the
    sandbox's PID-1, which waits on an eventfd for bwrap's go-ahead before it sets its own --die-with-parent.
    If bwrap dies first (its host died, taking bwrap with it, or bwrap was killed), the clone waits for ever,
    re-parented. A process is one of our sandboxes when argv[0] is bwrap and an argument carries our token,
    which names the host's pid. It is an orphan when that host is gone, or when its parent is neither the host
    nor a process of the same sandbox. Every new spawner and every close sweeps, so orphans never pile up on a
    machine that keeps running ecab."""
    sandboxes = {}   # pid -> (host pid, parent pid, token)
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and (found := _sandbox_process(int(entry.name))):
            sandboxes[int(entry.name)] = found
    killed = 0
    for pid, (host, parent, token) in sandboxes.items():
        # A parent started after the scan passed its pid is looked up now (a sandbox being set up meanwhile).
        parent_sandbox = sandboxes.get(parent) or _sandbox_process(parent)
        related = parent == host or (parent_sandbox is not None and parent_sandbox[2] == token)
        if _alive(host) and related:
            continue
        try:
            os.kill(pid, signal.SIGKILL)
            killed += 1
        except OSError:     # gone already, or not ours to kill
            pass
    return killed


def _sandbox_process(pid: int) -> tuple[int, int, bytes] | None:
    """(host pid, parent pid, token) of a sandbox process of ours; None for any other process."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            argv = handle.read().split(b"\0")
        with open(f"/proc/{pid}/stat", "rb") as handle:
            parent = int(handle.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None
    match = next(filter(None, map(HOST_TOKEN.search, argv)), None)
    if not match or os.path.basename(argv[0]) != b"bwrap":
        return None
    return int(match.group(1)), parent, match.group(0)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# Sandboxes with a spawner running; closed at interpreter exit so that no warm sandbox is left mid-start.
_open_sandboxes: "weakref.WeakSet[Sandbox]" = weakref.WeakSet()


@atexit.register
def _close_open_sandboxes() -> None:
    for sandbox in list(_open_sandboxes):
        sandbox.close()


# =========================================================================================================
# The pool: warm sandboxes, a spawner thread, call threads
# =========================================================================================================

@dataclass
class _Pending:
    """A submitted call waiting in the queue."""
    code: str
    future: concurrent.futures.Future
    submitted: float      # time.monotonic() at submit: where queued_s starts
    dispatch_index: int = -1


class Sandbox:
    """Runs python_execute calls, each in a fresh OS sandbox. Thread-safe; usable from any thread and loop."""

    def __init__(self, limits: SandboxLimits | None = None, *, python_guard: bool = True, scheduler: str = "fair"):
        """`python_guard=False` drops the Python-level first layer (builtins allow-list, AST check) and runs
        plain Python: for the red-team tests only, which show the operating-system wall holds on its own.
        `scheduler="fifo"` is the pool before issue 30 (first come, first served), for the bench's comparison."""
        if scheduler not in SCHEDULERS:
            raise ValueError(f"unknown scheduler {scheduler!r}; expected one of {list(SCHEDULERS)}")
        self.limits = limits or SandboxLimits()
        self.python_guard = python_guard
        self.scheduler = scheduler
        self._status_lock = threading.Lock()
        self._status: SandboxStatus | None = None
        self._status_at = 0.0
        self._reset_pool()

    def _reset_pool(self) -> None:
        self._owner_pid = os.getpid()
        self._cond = threading.Condition()
        self._idle: collections.deque[_Jail] = collections.deque()
        self._waiting = 0
        self._closed = False
        self._spawn_error: str | None = None
        self._queue: FairQueue[_Pending] = FairQueue(
            self.limits.max_parallel, heavy_run_s=HEAVY_SHARE * self.limits.wall_seconds,
            fair=self.scheduler == "fair")
        self._callers: list[threading.Thread] = []   # max_parallel call threads, started with the first call
        self._dispatched = 0
        self._spawner: threading.Thread | None = None
        self._reaper: threading.Thread | None = None
        self._reaped: queue.SimpleQueue[_Jail | None] | None = None   # None (after the jails): the reaper's stop

    # -- public ------------------------------------------------------------------------------------------

    def status(self) -> SandboxStatus:
        """Whether calls can be isolated here, found by starting one sandbox and running `print(6*7)`. A success
        is kept; a failure is checked again after STATUS_RETRY_S, so a passing glitch (a machine too loaded to
        start a sandbox in time) does not turn python_execute off for the rest of a long run."""
        with self._status_lock:
            stale = (self._status is not None and not self._status.available
                     and time.monotonic() - self._status_at > STATUS_RETRY_S)
            if self._status is None or stale:
                self._status, self._status_at = self._check(), time.monotonic()
            return self._status

    def submit(self, code: str, owner: Hashable = DIRECT_OWNER) -> concurrent.futures.Future:
        """Queue one run for `owner` (an episode's key; calls naming none share one owner); the future resolves
        to a SandboxResult (never raises for bad code). Cancelling the future before its turn drops the call."""
        future: concurrent.futures.Future = concurrent.futures.Future()
        if not isinstance(code, str):
            future.set_result(SandboxResult(False, error=f"TypeError: code must be a string, got "
                                                          f"{type(code).__name__}", kind="exception"))
            return future
        if len(code) > self.limits.max_code_chars:
            future.set_result(SandboxResult(False, error=f"code is longer than {self.limits.max_code_chars} "
                                                          "characters", kind="forbidden"))
            return future
        with self._cond:
            self._ensure_callers()
            if self._closed:
                future.set_result(SandboxResult(False, error="sandbox unavailable: closed", kind="unavailable"))
                return future
            self._queue.put(owner, _Pending(code, future, time.monotonic()))
            self._cond.notify_all()
        return future

    def execute(self, code: str, owner: Hashable = DIRECT_OWNER) -> SandboxResult:
        return self.submit(code, owner).result()

    async def execute_async(self, code: str, owner: Hashable = DIRECT_OWNER) -> SandboxResult:
        return await asyncio.wrap_future(self.submit(code, owner))

    def run_code(self, code: str, owner: Hashable = DIRECT_OWNER) -> dict:
        return self.execute(code, owner).to_tool_dict()

    async def run_code_async(self, code: str, owner: Hashable = DIRECT_OWNER) -> dict:
        return (await self.execute_async(code, owner)).to_tool_dict()

    def close(self) -> None:
        """Stop the spawner and kill the warm sandboxes (running calls finish first)."""
        if os.getpid() != self._owner_pid:
            return
        with self._cond:
            self._closed = True
            idle, self._idle = list(self._idle), collections.deque()
            callers = list(self._callers)
            self._cond.notify_all()
        for caller in callers:   # they answer the calls still queued ("closed") before they exit
            caller.join()
        for jail in idle:
            jail.destroy()
        if self._spawner is not None:
            self._spawner.join(timeout=5)
        if self._reaper is not None and self._reaped is not None:   # started together
            self._reaped.put(None)
            self._reaper.join(timeout=10)
        sweep_orphans()

    # -- the queue: call threads take the next call from the fair queue ----------------------------------------

    def _ensure_callers(self) -> None:
        """Start the call threads once (again after a fork: the parent's threads and pipes are not ours).
        Holds self._cond."""
        if os.getpid() != self._owner_pid:
            self._reset_pool()
        while not self._closed and len(self._callers) < self.limits.max_parallel:
            caller = threading.Thread(target=self._caller_loop, name=f"ecab-sandbox-{len(self._callers)}",
                                      daemon=True)
            self._callers.append(caller)
            caller.start()

    def _caller_loop(self) -> None:
        """One slot: take the next call the queue allows, run it, report its run time; until closed and empty."""
        while (turn := self._next_turn()) is not None:
            pending, run_s = turn.item, None
            try:
                result = self._call(pending.code, pending.submitted)
                result.dispatch_index, run_s = pending.dispatch_index, result.run_s
                pending.future.set_result(result)
            except BaseException as exc:   # a bug here must reach the caller, not end the slot's thread
                pending.future.set_exception(exc)
            finally:
                with self._cond:
                    self._queue.done(turn, run_s)
                    self._cond.notify_all()

    def _next_turn(self) -> Turn[_Pending] | None:
        """The next call to run (None once closed with nothing queued); calls cancelled while queued are
        dropped here, without a slot."""
        with self._cond:
            while True:
                turn = self._queue.get()
                if turn is None:
                    if self._closed and not len(self._queue):
                        return None
                    self._cond.wait()
                elif turn.item.future.set_running_or_notify_cancel():
                    turn.item.dispatch_index, self._dispatched = self._dispatched, self._dispatched + 1
                    return turn
                else:
                    self._queue.done(turn, None)

    # -- a call --------------------------------------------------------------------------------------------

    def _call(self, code: str, submitted: float) -> SandboxResult:
        """Run one call in a fresh sandbox. `queued_s` runs from `submitted` until the request is sent (until
        the answer, for a call that failed before one was sent); the wall limit counts only from the request."""
        result, sent = self._call_in_jail(code)
        result.queued_s = round((sent or time.monotonic()) - submitted, 4)
        return result

    def _call_in_jail(self, code: str) -> tuple[SandboxResult, float | None]:
        """The result, and when the request was sent (None: no sandbox took it)."""
        status = self.status()
        if not status.available:
            return SandboxResult(False, error=f"sandbox unavailable: {status.detail}", kind="unavailable"), None
        # A warm sandbox that died while waiting (the OOM killer, say) is skipped; a dead one answers at once.
        for _ in range(self.limits.warm_workers + 2):
            jail = self._acquire()
            if jail is None:
                return SandboxResult(False, error=f"sandbox unavailable: {self._spawn_error or 'closed'}",
                                     kind="unavailable"), None
            try:
                if not jail.wait_ready(time.monotonic() + START_TIMEOUT_S):
                    failure = jail.failure_text()
                    continue
                # The run starts as the request is handed over: the sandbox's child may answer before send()
                # returns to this thread, so a clock read after it would miss the run.
                sent = time.monotonic()
                if not jail.send(code):
                    failure = jail.failure_text()
                    continue
                return self._run_in(jail, sent), sent
            finally:
                # The kill is sent before the call returns; waiting for the namespace to empty (~7 ms) is the
                # reaper's, so a caller does not wait for it.
                jail.kill()
                self._reaper_queue().put(jail)
        return SandboxResult(False, error=f"sandbox could not start: {failure}", kind="internal"), None

    def _run_in(self, jail: _Jail, started: float | None = None) -> SandboxResult:
        """Wait for the reply of a request sent at `started` (default: now); the wall limit runs from then."""
        started = time.monotonic() if started is None else started
        reply_limit = 8 * self.limits.max_output_chars + 65_536
        line, timed_out = jail.read_reply(started + self.limits.wall_seconds, reply_limit)
        elapsed = time.monotonic() - started
        if line is not None:
            result = _result_from_reply(line)
        else:
            if not timed_out:
                try:
                    jail.proc.wait(timeout=max(0.0, started + self.limits.wall_seconds - time.monotonic()))
                except subprocess.TimeoutExpired:
                    timed_out = True
            result = _describe_death(jail.proc.poll(), timed_out, self.limits)
        result.run_s = round(elapsed, 6)
        result.sandbox_id = jail.token
        return result

    # -- warm sandboxes --------------------------------------------------------------------------------------

    def _reaper_queue(self) -> "queue.SimpleQueue[_Jail | None]":
        with self._cond:
            if self._reaper is None or self._reaped is None:   # started together
                self._reaped = queue.SimpleQueue()
                self._reaper = threading.Thread(target=self._reap_loop, args=(self._reaped,),
                                                name="ecab-sandbox-reaper", daemon=True)
                self._reaper.start()
            return self._reaped

    @staticmethod
    def _reap_loop(jails: "queue.SimpleQueue[_Jail | None]") -> None:
        while (jail := jails.get()) is not None:
            jail.reap()

    def _acquire(self) -> _Jail | None:
        with self._cond:
            if self._spawner is None:
                # bwrap's --die-with-parent follows the thread that started it: one long-lived thread starts
                # every sandbox, so they all die with this process but not with a short-lived call thread.
                self._spawner = threading.Thread(target=self._spawn_loop, name="ecab-sandbox-spawner",
                                                 daemon=True)
                self._spawner.start()
                _open_sandboxes.add(self)
            self._waiting += 1
            self._cond.notify_all()
            try:
                while not self._idle and not self._closed and self._spawn_error is None:
                    self._cond.wait()
                return self._idle.popleft() if self._idle else None
            finally:
                self._waiting -= 1
                self._cond.notify_all()

    def _spawn_loop(self) -> None:
        sweep_orphans()
        while True:
            with self._cond:
                while not self._closed and len(self._idle) >= self.limits.warm_workers + self._waiting:
                    self._cond.wait()
                if self._closed:
                    return
            try:
                jail = self._start_jail()
            except (OSError, isolation.IsolationUnavailable) as exc:
                with self._cond:
                    self._spawn_error = f"sandbox could not start: {exc}"
                    self._cond.notify_all()
                time.sleep(0.5)
                with self._cond:
                    self._spawn_error = None
                continue
            with self._cond:
                if not self._closed:
                    self._idle.append(jail)
                    self._cond.notify_all()
                    continue
            jail.destroy()     # started while close() ran: close has taken the idle list already
            return

    def _start_jail(self) -> _Jail:
        runtime = isolation.probe_runtime()
        program, _ = isolation.seccomp_program()
        token, root_uid = sandbox_identity()
        uid = root_uid if isolation.runs_as_root() else None
        settings: dict[str, int | str | None] = {
            "uid": uid, "cpu_seconds": self.limits.cpu_seconds, "memory_mb": self.limits.memory_mb,
            "max_output_chars": self.limits.max_output_chars, "max_processes": self.limits.max_processes,
            "file_bytes": self.limits.tmp_mb << 20, "guard": int(self.python_guard)}
        call_filter, _ = isolation.call_filter_program()
        settings["call_filter"] = call_filter.hex() if call_filter else None
        info_read, info_write = os.pipe()
        filter_fd = isolation.seccomp_fd(program) if program else None
        settings["token"] = token
        argv = isolation.bwrap_command(runtime, worker_settings=settings, tmp_bytes=self.limits.tmp_mb << 20,
                                       info_fd=info_write, seccomp=filter_fd)
        try:
            fds = (info_write,) + ((filter_fd,) if filter_fd is not None else ())
            return _Jail(argv, fds, info_read, token)
        except BaseException:
            os.close(info_read)
            raise
        finally:
            os.close(info_write)
            if filter_fd is not None:
                os.close(filter_fd)

    def _check(self) -> SandboxStatus:
        try:
            _, seccomp_line = isolation.seccomp_program()
            seccomp_line += "; " + isolation.call_filter_program()[1]
            jail = self._start_jail()  # finds bwrap and probes the interpreter's files, or says why not
        except (OSError, isolation.IsolationUnavailable) as exc:
            return SandboxStatus(False, str(exc))
        try:
            if not jail.wait_ready(time.monotonic() + START_TIMEOUT_S) or not jail.send("print(6 * 7)"):
                return SandboxStatus(False, f"bubblewrap could not build the sandbox: {jail.failure_text()}")
            result = self._run_in(jail)
        finally:
            jail.destroy()
        if result.output != "42\n":
            return SandboxStatus(False, f"a test call failed: {result.error or result.output!r}")
        who = ("root drops to an unprivileged uid" if isolation.runs_as_root()
               else "user namespace, all capabilities dropped")
        return SandboxStatus(True, f"bubblewrap (own mount, PID, network and IPC namespaces; {who}; "
                                   f"{seccomp_line})")


# The process-wide sandbox with default limits (created on first use).
default_sandbox: Callable[[], Sandbox] = process_wide(Sandbox)


def sandbox_status() -> SandboxStatus:
    """Whether python_execute can run here (one line for a run's start-up)."""
    return default_sandbox().status()


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

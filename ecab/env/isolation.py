"""How one python_execute sandbox is walled off from the host: the bubblewrap command line and its seccomp filter.

The wall is the kernel's, set up by bubblewrap (Debian package `bubblewrap`), not Python's (the choice and its
measurements: docs/decisions.md#sandbox):
- a mount namespace holding only the interpreter, its standard library (site-packages hidden), the shared
  libraries the allowed modules load, the worker script, a minimal /dev and a private size-capped /tmp; the
  root is read-only and neither /proc nor /sys is mounted;
- its own network namespace (no interface but its own loopback), PID namespace (it sees only itself, and
  every process in it dies with the sandbox), IPC and UTS namespaces;
- no privileges: run by root, the worker drops to an unprivileged uid (all capabilities cleared, bwrap's
  no_new_privs keeps them out); run by a normal user, bwrap maps that user into a user namespace with every
  capability dropped and further user namespaces disabled;
- a seccomp filter (libseccomp through pyseccomp) refusing what no calculation needs: ptrace and other
  processes' memory, mounts, namespaces, keyrings, BPF, perf, kernel modules, io_uring, sockets, memfd and
  System V / POSIX IPC (memory RLIMIT_AS does not count), and making any file executable (chmod, or a create
  with an execute bit);
- and, right before the call's code runs, a second filter the worker's child installs: an allow-list of the
  few syscalls the code needs (memory, writing its result, exiting), so the code opens no file, maps nothing
  executable, starts no process and executes nothing (call_filter_program), which also stands in for a
  noexec /tmp.
"""
from __future__ import annotations

import ast
import errno
import functools
import os
import shutil
import struct
import subprocess
import sys
from dataclasses import dataclass

from ecab.env import sandbox_worker

WORKER_DIR_INSIDE = "/ecab"
# Imported as a module (not run as a script) so that its compiled .pyc, bound beside it, is used.
WORKER_ENTRY = f"import sys; sys.path[:0] = [{WORKER_DIR_INSIDE!r}]; import sandbox_worker; sandbox_worker.start()"

# What the probe imports to learn which shared libraries the sandbox needs: the allowed modules and what the
# worker itself uses.
_PROBE = """
import os, sys, sysconfig, ast, resource, _string
for name in {modules!r}:
    __import__(name)
libs = sorted({{line.split()[-1] for line in open('/proc/self/maps') if '.so' in line.split()[-1]}})
paths = sysconfig.get_paths()
print(repr(dict(executable=os.path.realpath(sys.executable), stdlib=paths['stdlib'],
                platstdlib=paths['platstdlib'], site=[paths['purelib'], paths['platlib']], libs=libs)))
"""
# _ctypes is how the worker's child installs the call filter (its libffi must be in the sandbox); the child drops
# it from sys.modules before the code runs, and with no file to open the code cannot import it again.


class IsolationUnavailable(RuntimeError):
    """The sandbox cannot be built on this machine; the message says why (python_execute then fails closed)."""


@dataclass(frozen=True)
class Runtime:
    """The host files a sandbox needs, at the paths the interpreter expects them."""
    executable: str
    stdlib_dirs: tuple[str, ...]
    hidden_dirs: tuple[str, ...]     # site-packages inside the stdlib tree: mounted over with an empty dir
    libraries: tuple[tuple[str, str], ...]  # (host real path, path inside)


@functools.lru_cache(maxsize=1)
def probe_runtime() -> Runtime:
    """Run the interpreter once (unsandboxed, trusted code) to list what it loads; cached per process."""
    executable = os.path.realpath(sys.executable)
    try:
        modules = sandbox_worker.ALLOWED_MODULES + (("_ctypes",) if call_filter_program()[0] else ())
        out = subprocess.run([executable, "-I", "-S", "-c", _PROBE.format(modules=modules)], capture_output=True,
                             text=True, timeout=60, check=True).stdout
        found = ast.literal_eval(out.strip())
    except (OSError, subprocess.SubprocessError, ValueError, SyntaxError) as exc:
        raise IsolationUnavailable(f"could not list the interpreter's files: {exc}") from None
    stdlib_dirs = tuple(dict.fromkeys(os.path.realpath(p) for p in (found["stdlib"], found["platstdlib"])))
    hidden = tuple(sorted({os.path.realpath(p) for p in found["site"]
                           if any(os.path.realpath(p).startswith(d + os.sep) for d in stdlib_dirs)
                           and os.path.isdir(p)}))
    loaded = [lib for lib in found["libs"] if not any(lib.startswith(d + os.sep) for d in stdlib_dirs)]
    libraries = {(os.path.realpath(lib), lib) for lib in loaded} | set(soname_links(loaded))
    interpreter = elf_interpreter(found["executable"])
    if interpreter:
        libraries.add((os.path.realpath(interpreter), interpreter))
    return Runtime(found["executable"], stdlib_dirs, hidden, tuple(sorted(libraries)))


def soname_links(libraries: list[str]) -> list[tuple[str, str]]:
    """(real path, link) for the symlinks beside each loaded library that point to it: /proc/self/maps names
    the file (libz.so.1.2.13), but the loader asks for the soname link (libz.so.1)."""
    links = []
    real = {os.path.realpath(lib) for lib in libraries}
    for directory in sorted({os.path.dirname(lib) for lib in libraries}):
        stems = {os.path.basename(lib).split(".so")[0] for lib in libraries if os.path.dirname(lib) == directory}
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            if entry.is_symlink() and entry.name.split(".so")[0] in stems:
                target = os.path.realpath(entry.path)
                if target in real:
                    links.append((target, entry.path))
    return links


def elf_interpreter(path: str) -> str | None:
    """The dynamic loader an ELF64 little-endian executable names (PT_INTERP), or None (static or other)."""
    try:
        with open(path, "rb") as f:
            header = f.read(64)
            if header[:4] != b"\x7fELF" or header[4] != 2 or header[5] != 1:
                return None
            phoff, = struct.unpack_from("<Q", header, 0x20)
            phentsize, phnum = struct.unpack_from("<HH", header, 0x36)
            for index in range(phnum):
                f.seek(phoff + index * phentsize)
                p_type, _, p_offset, _, _, p_filesz = struct.unpack("<IIQQQQ", f.read(40))
                if p_type == 3:  # PT_INTERP
                    f.seek(p_offset)
                    return f.read(p_filesz).rstrip(b"\0").decode()
    except (OSError, struct.error, UnicodeDecodeError):
        return None
    return None


# --- seccomp ------------------------------------------------------------------------------------------------

DENIED_SYSCALLS = (
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd", "pidfd_open",
    "mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen", "fsmount", "fsconfig",
    "fspick", "mount_setattr", "unshare", "setns", "keyctl", "add_key", "request_key", "bpf", "perf_event_open",
    "userfaultfd", "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot",
    "swapon", "swapoff", "syslog", "acct", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "open_by_handle_at", "name_to_handle_at", "quotactl", "lookup_dcookie", "vhangup", "personality",
    # Memory RLIMIT_AS does not count: memfd pages, System V and POSIX message queues and shared memory.
    # (Socket buffers: `socket` is refused below.) No calculation needs them.
    "memfd_create", "memfd_secret", "shmget", "shmat", "msgget", "msgsnd", "semget", "mq_open",
    # No file may become executable: /tmp cannot be mounted noexec by bwrap 0.8 (see exec_bit_rules).
    "chmod", "fchmod", "fchmodat", "fchmodat2", "mknod", "mknodat",
)
NAMESPACE_CLONE_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000,
                         0x00000080)  # NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWTIME
TIOCSTI = 0x5412
F_SETPIPE_SZ = 1031        # a pipe's buffer grown to 1 MB: kernel memory outside RLIMIT_AS
O_CREAT, O_TMPFILE_FLAG = 0o100, 0o20000000   # the flags with which open/openat use their mode argument
EXEC_BITS = (0o100, 0o010, 0o001)
# (syscall, index of its flags argument or None if it always creates, index of its mode argument)
CREATING_OPENS = (("open", 1, 2), ("openat", 2, 3), ("creat", None, 1))


@functools.lru_cache(maxsize=1)
def seccomp_program() -> tuple[bytes | None, str]:
    """The compiled BPF filter and a one-line status; (None, why) where libseccomp is missing."""
    try:
        import pyseccomp as seccomp
        rules = seccomp.SyscallFilter(seccomp.ALLOW)
    except (ImportError, OSError, RuntimeError) as exc:
        return None, f"seccomp unavailable ({exc}); namespaces and the uid drop still apply"
    deny = seccomp.ERRNO(errno.EPERM)
    for name in DENIED_SYSCALLS:
        try:
            rules.add_rule(deny, name)
        except (OSError, ValueError, RuntimeError):
            continue  # a syscall this architecture or libseccomp does not know
    # clone3 passes its flags in memory the filter cannot read: ENOSYS makes libc fall back to clone.
    rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    for flag in NAMESPACE_CLONE_FLAGS:
        rules.add_rule(deny, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    # No sockets at all, local ones included: the sandbox has no network, and socket buffers are memory
    # RLIMIT_AS does not count (the red team held 284 MB in them).
    rules.add_rule(seccomp.ERRNO(errno.EAFNOSUPPORT), "socket")
    rules.add_rule(deny, "socketpair")
    rules.add_rule(deny, "ioctl", seccomp.Arg(1, seccomp.MASKED_EQ, 0xFFFFFFFF, TIOCSTI))
    rules.add_rule(deny, "fcntl", seccomp.Arg(1, seccomp.EQ, F_SETPIPE_SZ))
    exec_bit_rules(seccomp, rules, deny)
    read_fd, write_fd = os.pipe()
    try:
        with os.fdopen(write_fd, "wb") as sink:
            rules.export_bpf(sink)
        with os.fdopen(read_fd, "rb") as source:
            return source.read(), "seccomp filter on"
    except OSError as exc:
        return None, f"seccomp unavailable ({exc}); namespaces and the uid drop still apply"


def exec_bit_rules(seccomp, rules, deny) -> None:
    """Refuse creating a file with an execute bit: with chmod refused too, nothing written in the sandbox
    (its /tmp is the only writable place) can be run by execve. A noexec /tmp would be the kernel's own way,
    but bwrap 0.8 mounts its tmpfs with no way to ask for noexec, and a mount by the worker needs privileges
    it must not have. openat2 passes its mode in memory the filter cannot read: ENOSYS, as libc does not
    need it (like clone3)."""
    rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "openat2")
    for name, flags_arg, mode_arg in CREATING_OPENS:
        for bit in EXEC_BITS:
            mode_has_bit = seccomp.Arg(mode_arg, seccomp.MASKED_EQ, bit, bit)
            conditions = ([[mode_has_bit]] if flags_arg is None else
                          [[seccomp.Arg(flags_arg, seccomp.MASKED_EQ, flag, flag), mode_has_bit]
                           for flag in (O_CREAT, O_TMPFILE_FLAG)])
            for condition in conditions:
                try:
                    rules.add_rule(deny, name, *condition)
                except (OSError, ValueError, RuntimeError):
                    break   # open and creat do not exist on every architecture (aarch64 has only openat)


# --- the call's own filter: an allow-list -------------------------------------------------------------------
# The filter above is bwrap's, on from the interpreter's start: a deny-list, as start-up needs much (execve of the
# interpreter, opening the standard library, loading its extensions). The worker's child installs a second one
# right before the call's code runs (sandbox_worker.serve_call), once every module the code imports is loaded:
# an allow-list, refusing with EPERM every syscall not below (docs/decisions.md#sandbox-allow-list). So the code
# opens no file (none written, none read), maps nothing executable (no new code: the /tmp + ld.so route and
# every C extension not loaded yet), starts no process and executes nothing.
#
# Measured (strace -f of the child from the filter's place on, guard on, running arithmetic, 3**100000,
# json/re/statistics/decimal/fractions/math calls, sorting 2 M ints, a 300 k-key dict, exceptions,
# RecursionError, 50 k prints, 50 MB strings, MemoryError, a 3 M-item list and a growing string): exactly
# write, brk, mmap, munmap, mremap and exit_group.
CALL_SYSCALLS = (
    # -- measured --
    "write",          # the result frame, to the pipe the child inherited (never opened)
    "brk",            # malloc's main heap
    "mmap",           # obmalloc arenas and big blocks; anonymous and never executable only (below)
    "munmap",         # their release
    "mremap",         # realloc of a big block (a growing list or string)
    "exit_group",     # os._exit once the frame is written
    # -- not seen, kept: harmless, and on paths the measurement did not take --
    "mprotect",       # glibc growing a non-main arena's heap; never executable (below)
    "madvise",        # glibc's free returning pages of a big block
    "read", "close",  # on the descriptors the child holds already (/dev/null, its frame pipe): nothing to open
    "rt_sigreturn",   # the return from any signal handler (Python's SIGINT one): refused, the process would crash
    "rt_sigprocmask",  # glibc's abort() on a fatal error blocks signals first
    "exit",           # a thread's end (the child has one thread; exit_group is the process's)
    "clock_gettime", "clock_getres", "gettimeofday",   # the vDSO's fallbacks when it cannot answer alone
    "getpid", "gettid", "getppid", "getuid", "geteuid", "getgid", "getegid",   # read-only identity
)
# Refused, among the rest: execve, execveat, fork, vfork, clone, clone3 (no process, no thread: the child needs
# none), open, openat, openat2, creat, stat and its kin (every module the code imports is loaded before),
# socket*, kill, tgkill, ioctl, fcntl, prctl, seccomp, futex (one thread never waits on a lock), getrandom.
PROT_EXEC, MAP_ANONYMOUS = 0x4, 0x20


@functools.lru_cache(maxsize=1)
def call_filter_program() -> tuple[bytes | None, str]:
    """The compiled allow-list the worker's child installs before the call's code, and a one-line status;
    (None, why) where libseccomp is missing (the child then runs the code under bwrap's filter alone)."""
    try:
        import pyseccomp as seccomp
        rules = seccomp.SyscallFilter(seccomp.ERRNO(errno.EPERM))
    except (ImportError, OSError, RuntimeError) as exc:
        return None, f"no per-call syscall allow-list (libseccomp unavailable: {exc})"
    no_exec = seccomp.Arg(2, seccomp.MASKED_EQ, PROT_EXEC, 0)
    for name in CALL_SYSCALLS:
        if name == "mmap":
            rules.add_rule(seccomp.ALLOW, name, no_exec, seccomp.Arg(3, seccomp.MASKED_EQ, MAP_ANONYMOUS,
                                                                     MAP_ANONYMOUS))
        elif name == "mprotect":
            rules.add_rule(seccomp.ALLOW, name, no_exec)
        else:
            try:
                rules.add_rule(seccomp.ALLOW, name)
            except (OSError, ValueError, RuntimeError):
                continue  # a syscall this architecture does not have
    read_fd, write_fd = os.pipe()
    try:
        with os.fdopen(write_fd, "wb") as sink:
            rules.export_bpf(sink)
        with os.fdopen(read_fd, "rb") as source:
            program = source.read()
    except OSError as exc:
        return None, f"no per-call syscall allow-list ({exc})"
    return program, f"per-call syscall allow-list of {len(CALL_SYSCALLS)} (no exec, fork or open)"


def seccomp_fd(program: bytes) -> int:
    """A fresh readable fd holding the filter (bwrap reads it once per sandbox)."""
    fd = os.memfd_create("ecab-seccomp", 0)
    os.write(fd, program)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


# --- the command line ---------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def worker_files() -> tuple[tuple[str, str], ...]:
    """The worker's source and, when the host has compiled it, its .pyc (saves compiling it in every sandbox);
    found once per process, not at every sandbox start."""
    import importlib.util

    source = os.path.abspath(sandbox_worker.__file__)
    files = [(source, f"{WORKER_DIR_INSIDE}/sandbox_worker.py")]
    compiled = importlib.util.cache_from_source(source)
    if os.path.exists(compiled):
        files.append((compiled, f"{WORKER_DIR_INSIDE}/__pycache__/{os.path.basename(compiled)}"))
    return tuple(files)


def ancestors(path: str) -> list[str]:
    """'/a/b/c' -> ['/a', '/a/b']."""
    parts = path.strip("/").split("/")[:-1]
    return ["/" + "/".join(parts[:i + 1]) for i in range(len(parts))]


def bwrap_path() -> str:
    path = shutil.which("bwrap")
    if path is None:
        raise IsolationUnavailable("bubblewrap (bwrap) is not installed; on Debian: apt-get install bubblewrap")
    return path


def runs_as_root() -> bool:
    return os.geteuid() == 0


def bwrap_command(runtime: Runtime, *, worker_settings: dict, tmp_bytes: int, info_fd: int,
                  seccomp: int | None) -> list[str]:
    """The argv that starts one sandboxed worker."""
    argv = [bwrap_path()]
    if runs_as_root():
        # No user namespace: the worker starts as real root inside its namespaces (to set up), then drops
        # to the unprivileged uid in worker_settings, which a user namespace mapping could not give.
        argv += ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
    else:
        argv += ["--unshare-all", "--unshare-user", "--disable-userns", "--cap-drop", "ALL"]
    argv += ["--die-with-parent", "--new-session", "--clearenv", "--hostname", "sandbox", "--info-fd", str(info_fd)]
    binds = [(runtime.executable, runtime.executable), *((d, d) for d in runtime.stdlib_dirs),
             *runtime.libraries, *worker_files()]
    # bwrap would create the parents of a mount point 0700, which the dropped uid cannot enter.
    for directory in sorted({parent for _, inside in binds for parent in ancestors(inside)}):
        argv += ["--perms", "0755", "--dir", directory]
    for host_path, inside in binds:
        argv += ["--ro-bind", host_path, inside]
    for directory in runtime.hidden_dirs:
        argv += ["--tmpfs", directory, "--remount-ro", directory]
    argv += [
             "--dev", "/dev",
             "--size", str(tmp_bytes), "--perms", "1777", "--tmpfs", "/tmp",
             "--remount-ro", "/", "--chdir", "/tmp"]  # the root read-only last: the mounts above create dirs
    if seccomp is not None:
        argv += ["--seccomp", str(seccomp)]
    argv += [runtime.executable, "-I", "-S", "-B", "-X", "utf8", "-c", WORKER_ENTRY,
             ",".join(f"{key}={'none' if value is None else value}" for key, value in worker_settings.items())]
    return argv

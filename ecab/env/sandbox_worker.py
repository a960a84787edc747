"""The process inside one python_execute sandbox: drop privileges, wait for one request, run it, reply, exit.

This file (and its .pyc) is bind-mounted read-only into each sandbox (docs/decisions.md#sandbox), imported and
started by `start()`; it imports only the standard library. The operating system is
the wall (namespaces, no host filesystem, unprivileged uid, seccomp: ecab/env/isolation.py); the Python guard
here is a first layer that gives agents clear errors for what they must not do (imports, dunders, files).

Protocol on the two pipes the host created for this sandbox alone:
  worker -> host  b"R\\n" once set up (the sandbox is warm), then one reply line `repr(dict)\\n`
  host -> worker  8-byte big-endian length, then the code as UTF-8
The reply is a Python literal (the host reads it with `ast.literal_eval`): with no json, re or ast import,
the worker is ready ~20 ms after its interpreter starts, and imports an allowed module only when the code
asks for it. The settings come as `key=value,...` integers on the command line for the same reason.

Two processes: the worker forks, before it says it is ready, a child that reads the request and runs the code.
Only the worker holds the reply pipe; the child sends its result to the worker over a pipe of its own (a
`frame`), which the worker checks and caps before it writes the one reply. Code that bypasses the guard can
write anything to its own pipe but never reaches the host's (docs/decisions.md#sandbox). Right before the code
runs, the child installs the call's seccomp allow-list (call_filter_installer): from then on it can write, manage
its memory and exit, and little else (docs/decisions.md#sandbox-allow-list).
"""
import _ast  # the AST node classes without the `ast` module, whose imports cost ~25 ms at every start
import os
import sys

TYPE_CHECKING = False   # mypy reads it as True; `typing` is not imported at run time (~2 ms at every start)
if TYPE_CHECKING:
    from typing import NoReturn

ALLOWED_MODULES = ("math", "statistics", "decimal", "fractions", "json", "re")

# The original's builtins (docs/original-harness.md §2.2 tool 9) ...
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
MATCHABLE_TYPES = ("bool", "bytes", "complex", "dict", "float", "frozenset", "int", "list", "set", "str",
                   "tuple")
FORBIDDEN_ATTRIBUTES = frozenset({
    "gi_frame", "gi_code", "gi_yieldfrom", "cr_frame", "cr_code", "cr_await", "cr_origin", "ag_frame",
    "ag_code", "ag_await", "f_back", "f_globals", "f_locals", "f_builtins", "f_code", "f_trace", "tb_frame",
    "tb_next", "co_code", "co_consts", "mro", "func_globals", "format_map",
})


class ForbiddenCode(Exception):
    pass


def _forbidden_name(name: str | None) -> bool:
    return name is not None and name.startswith("_")


def _forbidden_attribute(name: str) -> bool:
    return name.startswith("_") or name in FORBIDDEN_ATTRIBUTES


def walk(node: _ast.AST):
    """Every node under `node`, itself included (ast.walk, without importing ast)."""
    pending = [node]
    while pending:
        node = pending.pop()
        yield node
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, _ast.AST):
                pending.append(value)
            elif isinstance(value, list):
                pending.extend(item for item in value if isinstance(item, _ast.AST))


def check_code(tree: _ast.AST) -> None:
    """Reject constructs that lead out of Python's restrictions; raises ForbiddenCode naming the first one."""
    # A class pattern trusts that `int` is the builtin int: rebound anywhere in the code (to a namedtuple,
    # say), its __match_args__ would decide what the pattern reads. Any scope counts: a conservative check.
    rebound = {name for node in walk(tree) for name in _stored_names(node)}
    for node in walk(tree):
        line = getattr(node, "lineno", "?")
        if isinstance(node, _ast.Attribute) and _forbidden_attribute(node.attr):
            raise ForbiddenCode(f"access to attribute '{node.attr}' is not allowed (line {line})")
        if isinstance(node, _ast.MatchClass):
            # `case C(x)` reads the attributes C.__match_args__ names, which the AST cannot see: only the
            # builtin value types (whose positional pattern matches the value itself) may be used.
            if not (isinstance(node.cls, _ast.Name) and node.cls.id in MATCHABLE_TYPES):
                raise ForbiddenCode(f"class patterns are allowed only for {', '.join(MATCHABLE_TYPES)} "
                                    f"(line {line})")
            if node.cls.id in rebound:
                raise ForbiddenCode(f"class pattern '{node.cls.id}(...)' after the code rebinds "
                                    f"'{node.cls.id}': only the builtin type may be matched (line {line})")
            bad = [name for name in node.kwd_attrs if _forbidden_attribute(name)]
            if bad:
                raise ForbiddenCode(f"access to attribute '{bad[0]}' is not allowed (line {line})")
        if isinstance(node, _ast.Attribute) and node.attr == "format":
            check_format_call(node.value, line)
        if isinstance(node, _ast.ClassDef):
            raise ForbiddenCode(f"class definitions are not allowed (line {line})")
        if isinstance(node, (_ast.AsyncFunctionDef, _ast.Await, _ast.AsyncFor, _ast.AsyncWith)):
            raise ForbiddenCode(f"async code is not allowed (line {line})")
        for name in _bound_names(node):
            if _forbidden_name(name):
                raise ForbiddenCode(f"names starting with '_' are not allowed: '{name}' (line {line})")


def check_format_call(receiver: _ast.AST, line) -> None:
    """str.format resolves '{0.attr}' and '{0[key]}' at run time, out of the AST's sight: allowed only on a
    string literal whose fields (nested ones in format specs included) read no forbidden attribute."""
    if not (isinstance(receiver, _ast.Constant) and isinstance(receiver.value, str)):
        raise ForbiddenCode(f".format() is allowed only on a string literal; use an f-string (line {line})")
    check_format_fields(receiver.value, line)


def check_format_fields(template: str, line) -> None:
    import _string  # what string.Formatter.parse uses, without string's import of re

    try:
        parsed = list(_string.formatter_parser(template))
    except ValueError as exc:
        raise ForbiddenCode(f"bad format string: {exc} (line {line})") from None
    for _, field, spec, _ in parsed:
        for attribute in (field or "").split(".")[1:]:
            if _forbidden_attribute(attribute.split("[")[0]):
                raise ForbiddenCode(f"access to attribute '{attribute}' in a format string is not allowed "
                                    f"(line {line})")
        if spec and "{" in spec:
            check_format_fields(spec, line)


def _bound_names(node: _ast.AST) -> list[str]:
    """Every identifier a node reads or binds (names, arguments, functions, match captures, imports)."""
    if isinstance(node, _ast.Name):
        return [node.id]
    if isinstance(node, (_ast.FunctionDef, _ast.AsyncFunctionDef)):
        return [node.name]
    if isinstance(node, _ast.arg):
        return [node.arg]
    if isinstance(node, (_ast.MatchAs, _ast.MatchStar)):
        return [node.name] if node.name else []
    if isinstance(node, _ast.MatchMapping):
        return [node.rest] if node.rest else []
    if isinstance(node, (_ast.Global, _ast.Nonlocal)):
        return list(node.names)
    if isinstance(node, _ast.alias):
        return node.name.split(".") + ([node.asname] if node.asname else [])
    if isinstance(node, _ast.keyword):
        return [node.arg] if node.arg else []
    if isinstance(node, _ast.ExceptHandler):   # `except E as name` binds name (`as __builtins__`, say)
        return [node.name] if node.name else []
    return []


def _stored_names(node: _ast.AST) -> list[str]:
    """The names a node binds or deletes (the reads of _bound_names left out): what may not shadow a builtin."""
    if isinstance(node, _ast.Name):
        return [] if isinstance(node.ctx, _ast.Load) else [node.id]
    if isinstance(node, _ast.alias) and node.name == "*":
        return list(MATCHABLE_TYPES)   # a star import may bind any name: counted as rebinding them all
    if isinstance(node, _ast.alias):
        return [node.asname or node.name.split(".")[0]]
    if isinstance(node, _ast.keyword):
        return []
    return _bound_names(node)


class ModuleProxy:
    """A read-only view of an allowed module: its public, non-module attributes only (the real `json`
    exposes `json.codecs`, whose `sys` reaches `os`)."""

    def __init__(self, module):
        public = {name: getattr(module, name) for name in dir(module)
                  if not name.startswith("_") and not isinstance(getattr(module, name), type(sys))}
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


class CappedStdout:
    """In-memory stdout that keeps the first `limit` characters and counts the rest."""

    def __init__(self, limit: int):
        self.parts: list[str] = []
        self.limit, self.size, self.dropped = limit, 0, 0

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
        return fitted("output", "".join(self.parts), self.dropped, self.limit)


def cap_text(text: str, limit: int) -> tuple[str, int]:
    """The first `limit` characters of `text` and how many were cut (the rule CappedStdout applies)."""
    return text[:limit], max(len(text) - limit, 0)


def make_builtins(stdout: CappedStdout) -> dict:
    import builtins

    proxies: dict[str, ModuleProxy] = {}

    def safe_import(name, globals=None, locals=None, fromlist=(), level=0):
        if level != 0 or name not in ALLOWED_MODULES:
            raise ImportError(f"import of '{name}' is not allowed; allowed modules: {', '.join(ALLOWED_MODULES)}")
        if name not in proxies:  # imported on first use: a call that needs only math does not pay for re
            proxies[name] = ModuleProxy(builtins.__import__(name))
        return proxies[name]

    def safe_print(*args, sep=" ", end="\n", file=None, flush=False):
        builtins.print(*args, sep=sep, end=end, file=stdout)  # `file` is ignored: stdout is the only sink

    def safe_type(obj):
        """type(x) of a value only: `type` itself (from type(int)) would build classes with any dunder."""
        kind = builtins.type(obj)
        if issubclass(kind, builtins.type):
            raise TypeError("type() of a class is not available in python_execute")
        return kind

    table = {name: getattr(builtins, name) for name in SPEC_BUILTINS + EXTRA_BUILTINS}
    table.update(print=safe_print, type=safe_type, __import__=safe_import)
    return table


def run_restricted(code: str, max_output_chars: int, guard: bool = True, before_run=None) -> dict:
    """Check, compile and run `code`; returns the SandboxResult fields (without timing). `guard=False` runs
    plain Python with every builtin: only the red-team tests use it, to show the OS wall holds on its own.
    `before_run(tree)`, called once the code is compiled and right before it runs, is where the sandbox's child
    locks itself down (its errors are not the code's: they propagate)."""
    stdout = CappedStdout(max_output_chars)
    try:
        # typeshed types an AST-only compile as returning AST; with mode "exec" it is always a Module
        tree: _ast.Module = compile(code, "<python_execute>", "exec", _ast.PyCF_ONLY_AST)  # type: ignore[assignment]
        if guard:
            check_code(tree)
        compiled = compile(tree, "<python_execute>", "exec")
    except ForbiddenCode as exc:
        return {"ok": False, "error": f"Forbidden: {exc}", "kind": "forbidden"}
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}", "kind": "exception"}
    if guard:
        namespace = {"__builtins__": make_builtins(stdout), "__name__": "__main__"}
    else:
        namespace = {"__name__": "__main__"}
        sys.stdout = stdout
    if before_run is not None:
        before_run(tree)
    try:
        exec(compiled, namespace)
    except MemoryError:
        return {"ok": False, "error": "MemoryError: memory limit exceeded", "kind": "memory",
                "output": stdout.getvalue()}
    except BaseException as exc:  # SystemExit and KeyboardInterrupt included: the worker reports and exits
        return {"ok": False, "error": describe_exception(exc, max_output_chars), "kind": "exception",
                "output": stdout.getvalue()}
    return {"ok": True, "output": stdout.getvalue(), "kind": "ok"}


def describe_exception(exc: BaseException, limit: int) -> str:
    """'<ExcType>: <message>', capped like stdout: a 10 MB message must not become a 10 MB reply."""
    try:
        text = f"{type(exc).__name__}: {exc}"
    except BaseException:  # str() of the exception failed (guard off: its own __str__ raised)
        text = f"{type(exc).__name__}: <message could not be shown>"
    kept, cut = cap_text(text, limit)
    return fitted("error", kept, cut, limit)


# The host reads at most 8 * max_output_chars + 64 KiB of reply (sandbox.py: Sandbox._run_in). repr() writes a
# character as up to 10 bytes ('\U000e0001'), so `limit` characters of output and of error could still make a
# reply of 20 * limit bytes: each is cut further, to REPLY_BYTES_PER_CHAR * limit bytes as repr() writes it.
REPLY_BYTES_PER_CHAR = 4
NOTE_ROOM = 100    # a truncation note's characters, on top of a text's budget


def fitted(what: str, kept: str, cut: int, limit: int, budget: int | None = None) -> str:
    """`kept` (whose next `cut` characters were dropped already) cut to fit `budget` bytes of reply, with a
    note saying how many characters were cut in all."""
    budget = REPLY_BYTES_PER_CHAR * limit if budget is None else budget
    size = reply_size(kept)
    count = len(kept)
    while size > budget:   # count strictly shrinks: count * budget // size < count
        count = count * budget // size
        size = reply_size(kept[:count])
    return kept[:count] + truncation_note(what, cut + len(kept) - count)


def reply_size(text: str) -> int:
    return len(repr(text).encode("utf-8", "backslashreplace"))


def truncation_note(what: str, cut: int) -> str:
    return f"\n[{what} truncated: {cut} more characters]" if cut else ""


# =========================================================================================================
# The worker's life: set up, signal ready, read one request, run it, reply, exit
# =========================================================================================================

def drop_privileges(uid: int) -> None:
    """Root in the sandbox (the host ran bwrap as root) becomes `uid`: setresuid to a non-zero uid clears
    every capability, and bwrap's no_new_privs keeps them from coming back."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)


def set_limits(settings: dict) -> None:
    """The limits of both processes, set by the worker before it forks (the child inherits them); the
    process count is the child's alone (set_process_limit), as the fork itself must pass it."""
    import resource

    memory = settings["memory_mb"] * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    cpu = settings["cpu_seconds"]
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (settings["file_bytes"], settings["file_bytes"]))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # Pipes are kernel memory RLIMIT_AS does not count (64 KiB each): few descriptors, few pipes.
    resource.setrlimit(resource.RLIMIT_NOFILE, (MAX_OPEN_FILES, MAX_OPEN_FILES))


MAX_OPEN_FILES = 64


def set_process_limit(settings: dict) -> None:
    """RLIMIT_NPROC, counted per uid: with the sandbox's own uid (root mode) the number of processes the
    sandbox may hold. The worker is one of them, so a limit of n > 0 becomes n + 1 (n - 1 more processes for
    the code, as when the code ran in the worker itself). As a normal user it counts all of the user's
    processes, so 0 (the default) refuses every fork."""
    import resource

    wanted = settings["max_processes"]
    limit = wanted + 1 if wanted else 0
    resource.setrlimit(resource.RLIMIT_NPROC, (limit, limit))


def read_exactly(fd: int, size: int) -> bytes:
    chunks, remaining = [], size
    while remaining:
        chunk = os.read(fd, remaining)
        if not chunk:
            raise EOFError("host closed the request pipe")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


TEXT_SETTINGS = ("token", "call_filter")


def parse_settings(text: str) -> dict:
    """'uid=5,cpu_seconds=1,...' -> {'uid': 5, 'cpu_seconds': 1, ...}; 'none' is None, TEXT_SETTINGS stay text
    (`call_filter`: the call's seccomp program in hex, built by the host: ecab/env/isolation.py)."""
    settings = {}
    for item in text.split(","):
        key, value = item.split("=", 1)
        settings[key] = None if value == "none" else value if key in TEXT_SETTINGS else int(value)
    return settings


def main(settings: dict) -> None:
    if settings["uid"] is not None and os.getuid() == 0:
        drop_privileges(settings["uid"])
    reply_fd = os.dup(1)
    devnull = os.open("/dev/null", os.O_RDWR, 0)
    os.dup2(devnull, 1)
    set_limits(settings)
    frame_read, frame_write = os.pipe()
    child = os.fork()
    if child == 0:
        close_all_but(devnull, frame_write)   # the reply pipe first of all, and whatever else was inherited
        serve_call(settings, frame_write, devnull)   # never returns
    os.close(frame_write)
    os.dup2(devnull, 0)   # the request is the child's to read
    write_all(reply_fd, b"R\n")
    fields = read_frame(frame_read, settings["max_output_chars"])
    if fields is None:
        mirror_exit(child)
    write_all(reply_fd, reply_line(fields, settings["max_output_chars"]))


def close_all_but(*kept: int) -> None:
    """Close every descriptor above stderr except `kept` (os.closerange uses close_range: one syscall)."""
    start = 3
    for fd in sorted(kept):
        os.closerange(start, fd)
        start = fd + 1
    os.closerange(start, 1 << 16)


def serve_call(settings: dict, frame_write: int, devnull: int) -> "NoReturn":
    """The child: read the request, run it, send the result as a frame, exit. It holds no reply pipe."""
    try:
        set_process_limit(settings)
        # Made ready while the sandbox waits for its call (~0.5 ms), installed once the call is compiled.
        guard = settings["guard"] != 0
        lock_down = call_filter_installer(settings.get("call_filter"),
                                          ALLOWED_MODULES if guard else ALLOWED_MODULES + UNGUARDED_PRELOAD)
        size = int.from_bytes(read_exactly(0, 8), "big")
        # surrogatepass: the host encodes the code so; compile() then reports a lone surrogate as an error
        code = read_exactly(0, size).decode("utf-8", "surrogatepass")
        os.dup2(devnull, 0)
        os.dup2(devnull, 2)
        os.close(devnull)
        result = run_restricted(code, settings["max_output_chars"], guard=guard, before_run=lock_down)
        frame = encode_frame(result)
    except MemoryError:
        frame = encode_frame({"ok": False, "error": "MemoryError: memory limit exceeded", "kind": "memory"})
    except BaseException as exc:   # set-up failed: say why on stderr, if it is still bwrap's
        os.write(2, f"sandbox worker: {type(exc).__name__}: {exc}\n".encode())
        os._exit(1)
    write_all(frame_write, frame)
    os._exit(0)


PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2


# What the allowed modules import inside their functions, on first use (found by reading their sources and
# measured): loaded with them, as no import can open a file once the call's filter is on. statistics: its Counter's
# most_common (statistics.mode) imports heapq; re: warnings (a deprecated pattern), unicodedata (\N{...});
# json: the codecs json.loads picks for bytes with a BOM or in UTF-16/32 (utf-8, utf-16, utf-32 need none).
LAZY_IMPORTS = {
    "statistics": ("heapq",),
    "re": ("warnings", "unicodedata"),
    "json": ("encodings.utf_8_sig", "encodings.utf_16_be", "encodings.utf_16_le", "encodings.utf_32_be",
             "encodings.utf_32_le"),
}
# With the guard off (the red-team tests), the code's `import` statements of these load them too, so that attacks
# meet the filter's refusals rather than an ImportError (modules whose import has no side effect; importlib's
# import_module can then return only modules already loaded, as no file can be opened).
UNGUARDED_PRELOAD = ("importlib", "signal", "socket", "subprocess")


def call_filter_installer(program_hex: str | None, preload: tuple[str, ...] = ALLOWED_MODULES):
    """A `before_run(tree)` that loads the `preload` modules the code imports, then installs the call's seccomp
    allow-list (ecab/env/isolation.py: call_filter_program): from then on the process can open no file, map
    nothing executable and start nothing, so every module the code needs must be loaded first. None when the
    host sent no filter (libseccomp missing there: the sandbox's status line says so).

    prctl is reached through _ctypes (the ctypes package on top of it costs 2.5-7 ms more at every sandbox start),
    made ready here; _ctypes then leaves sys.modules, and with no file to open the code cannot import it (nor
    anything else) again. (Code that rebuilt it from the loaded extension would reach only the syscalls the filter
    allows.)"""
    if program_hex is None:
        return None
    import _ctypes

    class Int(_ctypes._SimpleCData):     # ctypes.c_int
        _type_ = "i"

    class ULong(_ctypes._SimpleCData):   # ctypes.c_ulong
        _type_ = "L"

    class Char(_ctypes._SimpleCData):    # ctypes.c_char
        _type_ = "c"

    class Prctl(_ctypes.CFuncPtr):       # CFUNCTYPE(c_int, c_int, c_ulong, c_ulong, c_ulong, c_ulong, use_errno=True)
        _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO
        _restype_ = Int
        _argtypes_ = (Int, ULong, ULong, ULong, ULong)

    def buffer(data: bytes):
        """A C copy of `data` (ctypes.create_string_buffer)."""
        class Buffer(_ctypes.Array):
            _type_ = Char
            _length_ = len(data)

        return Buffer.from_buffer_copy(data)

    program = bytes.fromhex(program_hex)
    instructions = buffer(program)
    pointer = 8 if sys.maxsize > 2 ** 32 else 4
    # struct sock_fprog { unsigned short len; struct sock_filter *filter; }: the pointer aligned after the length
    fprog = buffer((len(program) // 8).to_bytes(2, sys.byteorder) + bytes(pointer - 2)
                   + _ctypes.addressof(instructions).to_bytes(pointer, sys.byteorder))
    program_itself = _ctypes.dlopen(None)   # type: ignore[arg-type]
    prctl = Prctl(_ctypes.dlsym(program_itself, "prctl"))
    fprog_address, get_errno = _ctypes.addressof(fprog), _ctypes.get_errno
    del sys.modules["_ctypes"]

    def lock_down(tree: _ast.AST) -> None:
        for name in imported_modules(tree):
            if name in preload:
                for module in (name,) + LAZY_IMPORTS.get(name, ()):
                    __import__(module)
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                or prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, fprog_address, 0, 0) != 0):
            raise OSError(get_errno(), "the call's seccomp filter could not be installed")

    # the program and its header stay alive until the kernel has copied them (at the install)
    lock_down.buffers = (instructions, fprog)   # type: ignore[attr-defined]
    return lock_down


def imported_modules(tree: _ast.AST) -> set[str]:
    """The top-level modules `import` and `from ... import` statements anywhere in the code name."""
    names: set[str] = set()
    for node in walk(tree):
        if isinstance(node, _ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, _ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


# What the child may say about its run; timeouts, CPU and crashes are for the worker and the host to report.
FRAME_KINDS = ("ok", "exception", "forbidden", "memory")
FRAME_SLACK = 65_536


def encode_frame(result: dict) -> bytes:
    """8-byte length, then `kind output-bytes error-bytes-or--1` and the two texts (UTF-8; a lone surrogate
    is written as its escape, so the reply holds only valid text)."""
    output = str(result.get("output") or "").encode("utf-8", "backslashreplace")
    error = result.get("error")
    error_bytes = b"" if error is None else str(error).encode("utf-8", "backslashreplace")
    header = f"{result['kind']} {len(output)} {-1 if error is None else len(error_bytes)}\n".encode()
    body = header + output + error_bytes
    return len(body).to_bytes(8, "big") + body


def read_frame(fd: int, limit: int) -> dict | str | None:
    """The child's result: its fields, a complaint (text) if the frame is malformed or too long, or None if
    the child ended without sending one. The child runs the code, so its frame is checked, never trusted."""
    try:
        size = int.from_bytes(read_exactly(fd, 8), "big")
        if size > 2 * REPLY_BYTES_PER_CHAR * limit + FRAME_SLACK:
            return f"the code's result is over the {2 * REPLY_BYTES_PER_CHAR * limit + FRAME_SLACK}-byte limit"
        body = read_exactly(fd, size)
    except EOFError:
        return None
    return decode_frame(body)


def decode_frame(body: bytes) -> dict | str:
    try:
        header, rest = body.split(b"\n", 1)
        kind, output_text, error_text = header.decode("ascii").split(" ")
        output_size, error_size = int(output_text), int(error_text)
        if kind not in FRAME_KINDS or output_size < 0 or len(rest) != output_size + max(error_size, 0):
            raise ValueError("bad header")
    except ValueError:
        return "the code's process sent a malformed result"
    output = rest[:output_size].decode("utf-8", "replace")
    error = None if error_size < 0 else rest[output_size:].decode("utf-8", "replace")
    return {"ok": kind == "ok", "kind": kind, "output": output, "error": error}


def reply_line(fields: dict | str, limit: int) -> bytes:
    """The one reply, built by the worker: a frame that broke the child's own caps is cut again here."""
    if isinstance(fields, str):
        fields = {"ok": False, "error": fields, "kind": "internal"}
    for what in ("output", "error"):
        text = fields.get(what)
        if isinstance(text, str):
            kept, cut = cap_text(text, limit + NOTE_ROOM)
            fields[what] = fitted(what, kept, cut, limit, REPLY_BYTES_PER_CHAR * limit + NOTE_ROOM)
    return repr(fields).encode("utf-8", "backslashreplace") + b"\n"


def mirror_exit(child: int) -> "NoReturn":
    """The child ended without a result: end the same way, so that bwrap reports its signal or exit code
    to the host (SIGXCPU: the CPU limit) as when the code ran in the worker itself."""
    import _signal

    _, status = os.waitpid(child, 0)
    if os.WIFSIGNALED(status):
        signal_number = os.WTERMSIG(status)
        _signal.signal(signal_number, _signal.SIG_DFL)
        os.kill(os.getpid(), signal_number)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)
    raise AssertionError("unreachable")   # os.kill of itself with a signal that is ignored (none is)


def start() -> None:
    """The sandbox's entry point (ecab/env/isolation.py: WORKER_ENTRY); settings in argv[1]."""
    try:
        main(parse_settings(sys.argv[1]))
    except BaseException as exc:  # set-up failed: say why on stderr (bwrap's, which the host reads)
        os.write(2, f"sandbox worker: {type(exc).__name__}: {exc}\n".encode())
    finally:
        os._exit(0)  # no interpreter teardown: the sandbox ends here, with whatever it started

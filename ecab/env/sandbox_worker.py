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
"""
import _ast  # the AST node classes without the `ast` module, whose imports cost ~25 ms at every start
import os
import sys

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
    return []


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
        text = "".join(self.parts)
        if self.dropped:
            text += f"\n[output truncated: {self.dropped} more characters]"
        return text


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


def run_restricted(code: str, max_output_chars: int, guard: bool = True) -> dict:
    """Check, compile and run `code`; returns the SandboxResult fields (without timing). `guard=False` runs
    plain Python with every builtin: only the red-team tests use it, to show the OS wall holds on its own."""
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
    try:
        exec(compiled, namespace)
    except MemoryError:
        return {"ok": False, "error": "MemoryError: memory limit exceeded", "kind": "memory",
                "output": stdout.getvalue()}
    except BaseException as exc:  # SystemExit and KeyboardInterrupt included: the worker reports and exits
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}", "kind": "exception",
                "output": stdout.getvalue()}
    return {"ok": True, "output": stdout.getvalue(), "kind": "ok"}


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
    import resource

    memory = settings["memory_mb"] * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    cpu = settings["cpu_seconds"]
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (settings["file_bytes"], settings["file_bytes"]))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # Counted per uid: with the sandbox's own uid (root mode) this is the number of processes it may start.
    # As a normal user it counts all of the user's processes, so 0 (the default) refuses every fork.
    resource.setrlimit(resource.RLIMIT_NPROC, (settings["max_processes"], settings["max_processes"]))


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


def parse_settings(text: str) -> dict:
    """'uid=5,cpu_seconds=1,...' -> {'uid': 5, 'cpu_seconds': 1, ...}; 'none' is None, `token` stays text."""
    settings = {}
    for item in text.split(","):
        key, value = item.split("=", 1)
        settings[key] = value if key == "token" else (None if value == "none" else int(value))
    return settings


def main(settings: dict) -> None:
    if settings["uid"] is not None and os.getuid() == 0:
        drop_privileges(settings["uid"])
    reply_fd = os.dup(1)
    devnull = os.open("/dev/null", os.O_RDWR)
    os.dup2(devnull, 1)
    set_limits(settings)
    write_all(reply_fd, b"R\n")
    size = int.from_bytes(read_exactly(0, 8), "big")
    code = read_exactly(0, size).decode("utf-8")
    os.dup2(devnull, 0)
    os.dup2(devnull, 2)
    try:
        result = run_restricted(code, settings["max_output_chars"], guard=settings["guard"] != 0)
        payload = repr(result).encode("utf-8", "backslashreplace")
    except MemoryError:
        payload = b"{'ok': False, 'error': 'MemoryError: memory limit exceeded', 'kind': 'memory'}"
    write_all(reply_fd, payload + b"\n")


def start() -> None:
    """The sandbox's entry point (ecab/env/isolation.py: WORKER_ENTRY); settings in argv[1]."""
    try:
        main(parse_settings(sys.argv[1]))
    except BaseException as exc:  # set-up failed: say why on stderr (bwrap's, which the host reads)
        os.write(2, f"sandbox worker: {type(exc).__name__}: {exc}\n".encode())
    finally:
        os._exit(0)  # no interpreter teardown: the sandbox ends here, with whatever it started

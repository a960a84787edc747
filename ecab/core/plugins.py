"""Named extension points: where ecab looks up the agents, judges, catalog sources and tools a config names.

Every extension point is one `Registry`. ecab's own implementations register in it exactly as a user's do, so
there is no second path for built-ins (docs/extending.md). A config reaches a user's code in two ways:
- by a registered name (`model.kind: my-agent`), registered in Python (`ecab.register_agent`) or by an installed
  package through the `ecab.plugins` entry-point group, loaded on the first lookup;
- by an import path (`target: my_pkg.agents:make_agent`), imported by name in whichever process needs it, so Ray
  and process workers find it without the driver shipping any code.
"""
from __future__ import annotations

import importlib
import threading
import traceback
from importlib.metadata import entry_points
from typing import Any, Callable, Generic, TypeVar

from ecab.config import ConfigError

T = TypeVar("T")

ENTRY_POINT_GROUP = "ecab.plugins"
PYTHON_KIND = "python"      # a section's kind (model.kind, judge.kind) that names user code by `target` import path


class PluginError(ConfigError):
    """A name no registry holds, an import path that does not import, or a plugin that failed to load."""


class Registry(Generic[T]):
    """Names to implementations of one extension point (`what`: "agent", "judge", "catalog source", "tool")."""

    def __init__(self, what: str, config_key: str):
        self.what = what
        self.config_key = config_key       # the config key that names an entry, for error messages
        self._entries: dict[str, T] = {}
        self._lock = threading.Lock()

    def register(self, name: str, entry: T, *, replace: bool = False) -> T:
        """Add `entry` under `name`; registering a taken name again is an error unless `replace`."""
        if not isinstance(name, str) or not name:
            raise PluginError(f"a {self.what} needs a non-empty name, got {name!r}")
        with self._lock:
            if name in self._entries and not replace and self._entries[name] is not entry:
                raise PluginError(f"{self.what} {name!r} is already registered (pass replace=True to replace it)")
            self._entries[name] = entry
        return entry

    def unregister(self, name: str) -> None:
        """Remove `name` (a test's or a notebook's registration); absent names are ignored."""
        with self._lock:
            self._entries.pop(name, None)

    def get(self, name: str) -> T:
        """The entry registered under `name` (installed plugins loaded first); one line naming the choices."""
        if name not in self._entries:
            load_installed_plugins()
        try:
            return self._entries[name]
        except KeyError:
            raise PluginError(f"unknown {self.config_key} {name!r}; choose one of: {', '.join(self.names())} "
                              f"(or name your own with {self.config_key}=python and a target: module:function)") from None

    def resolve(self, kind: str, target: Any) -> Any:
        """What a config section names: its registered `kind`, or for kind `python` the callable its `target`
        import path names (a missing or uncallable target is one line naming the key)."""
        if kind != PYTHON_KIND:
            return self.get(kind)
        section = self.config_key.split(".")[0]
        if not target:
            raise PluginError(f"{self.config_key}=python needs {section}.target: the import path of your "
                              f"{self.what} factory (package.module:function)")
        found = import_target(target, key=f"{section}.target")
        if not callable(found):
            raise PluginError(f"{section}.target {target!r} is not callable")
        return found

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def names(self) -> list[str]:
        load_installed_plugins()
        return sorted(self._entries)


def describe_exception(exc: BaseException) -> str:
    """`KeyError: 'x' (my_agent.py:12 in act)`: what a user's code raised and where, on one line."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" ({frames[-1].filename}:{frames[-1].lineno} in {frames[-1].name})" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"


def import_target(spec: Any, *, key: str) -> Any:
    """The object an import path `package.module:attribute` names (`key`: the config key that gave it)."""
    if not isinstance(spec, str) or spec.count(":") != 1 or not all(spec.split(":")):
        raise PluginError(f"{key} must be an import path 'package.module:attribute', got {spec!r}")
    module_name, attribute = spec.split(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - any failure to import is the user's target failing
        raise PluginError(f"{key}: cannot import {module_name!r} ({type(exc).__name__}: {exc})") from None
    target: Any = module
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise PluginError(f"{key}: module {module_name!r} has no attribute {attribute!r}")
        target = getattr(target, part)
    return target


_loaded = False
_load_lock = threading.Lock()


def load_installed_plugins() -> None:
    """Call every `ecab.plugins` entry point once per process: each is a function that registers what its
    package brings (`ecab.register_agent(...)` and so on). A plugin that fails names itself."""
    global _loaded
    with _load_lock:
        if _loaded:
            return
        _loaded = True
        for point in entry_points(group=ENTRY_POINT_GROUP):
            try:
                hook: Callable[[], Any] = point.load()
                hook()
            except Exception as exc:  # noqa: BLE001 - a broken plugin is named, not a traceback
                raise PluginError(f"plugin {point.name!r} ({point.value}) failed to load: "
                                  f"{type(exc).__name__}: {exc}") from None

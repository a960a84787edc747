"""`process_wide(factory)`: a getter for an object each process builds once, on first use, and then shares
(the embedding model, the review checker, the sandbox): loading it takes seconds or probes the machine, and
threads that ask for it at the same moment must get one and the same."""
from __future__ import annotations

import threading
from typing import Callable, TypeVar

T = TypeVar("T")


def process_wide(factory: Callable[[], T]) -> Callable[[], T]:
    """A getter that calls `factory()` the first time it is called (once, even when threads race; a factory
    that raises is tried again on the next call) and returns that object from then on."""
    lock = threading.Lock()
    built: list[T] = []

    def get() -> T:
        with lock:
            if not built:
                built.append(factory())
            return built[0]

    get.__doc__ = factory.__doc__
    return get

"""SIGTERM as an interrupt: how an entry point stops when `ray job stop`, `kill` or Kubernetes ends it.

Python's default for SIGTERM is to die at once, silently, without `finally` blocks (the run folder's lock, the
part files' last flush). An entry point that calls `stop_on_sigterm()` first instead takes the path Ctrl-C
takes: the signal is handed to the current SIGINT handler, so inside `asyncio.run` the main task is cancelled
(the runners' cancellation path: finished episodes are already on disk, the ones in flight are dropped), and
KeyboardInterrupt reaches the entry point's `except KeyboardInterrupt`, which prints `interrupted()`'s one
line and exits with its status.
"""
from __future__ import annotations

import signal

RESUME_HINT = "finished episodes are saved, re-run the same command to resume"

_received: int | None = None   # the signal that stopped the process, when one did (read by `interrupted`)


def stop_on_sigterm() -> None:
    """Turn SIGTERM into the KeyboardInterrupt path. Call it from the main thread of an entry point (only
    there can Python install a signal handler)."""
    signal.signal(signal.SIGTERM, _as_interrupt)


def _as_interrupt(signum: int, frame) -> None:
    global _received
    _received = signum
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler):
        # asyncio.run's handler cancels the main task first, as for Ctrl-C; outside a loop this is
        # signal.default_int_handler, which raises KeyboardInterrupt here.
        handler(signal.SIGINT, frame)
    else:   # SIGINT ignored or left at the OS default: still stop through the interrupt path
        raise KeyboardInterrupt


def interrupted() -> tuple[str, int]:
    """(the one line, the exit status) for an entry point stopped by KeyboardInterrupt: 128 + the signal's
    number, the shell's convention (130 for Ctrl-C, 143 for SIGTERM)."""
    if _received == signal.SIGTERM:
        return f"stopped by SIGTERM; {RESUME_HINT}", 128 + signal.SIGTERM
    return f"interrupted; {RESUME_HINT}", 128 + signal.SIGINT

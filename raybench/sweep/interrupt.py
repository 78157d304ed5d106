"""Ctrl-C that cannot be swallowed: the SIGINT handler of `raybench run` raises KeyboardInterrupt as Python's
default does, and also remembers the request, which the driver checks at every step boundary and every
half-second of a step's wait. A KeyboardInterrupt that some library catches on its way up (a callback run
from C, a `finally` that raises something else) therefore still stops the run, at the next check.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["check_interrupt", "interruptible"]

_requested = threading.Event()


def _on_sigint(_signum: int, _frame: FrameType | None) -> None:
    _requested.set()
    raise KeyboardInterrupt


@contextmanager
def interruptible() -> Iterator[None]:
    """Within: SIGINT raises KeyboardInterrupt and is remembered for `check_interrupt`. Only the main thread
    can own signal handlers; elsewhere (a driver embedded in a thread) Python's own handling is left as is."""
    _requested.clear()
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, _on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        _requested.clear()


def check_interrupt() -> None:
    """Raise KeyboardInterrupt if Ctrl-C was pressed since `interruptible()` was entered."""
    if _requested.is_set():
        raise KeyboardInterrupt

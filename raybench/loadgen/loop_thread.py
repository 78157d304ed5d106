"""A private event loop in its own thread (uvloop when available), so timing never shares Ray's loop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["LoopThread", "new_event_loop"]

T = TypeVar("T")


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop's loop when installed: its timers are not rounded up to whole milliseconds as the
    stock selector loop's are, so the 10 ms lag probe measures blocking, not timer granularity."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop ships with ray[serve]
        return asyncio.new_event_loop()
    loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
    return loop


class LoopThread:
    """Runs coroutines on a dedicated loop thread; `run()` blocks the caller until the result."""

    def __init__(self, name: str = "raybench-loadgen") -> None:
        self.loop = new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)

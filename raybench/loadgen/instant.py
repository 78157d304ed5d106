"""Acting at an instant: MonotonicClock waits for (or runs a callback at) a perf-clock instant to within
tens of microseconds, where event-loop timers are millisecond-grained.

Loop timers alone are off by ~0.5 ms typically (uvloop's clock counts whole ms). The loop timer sleeps
to about 2 ms before the instant; the rest is a precise OS sleep in a helper thread, which hands the loop
back its wake-up: no spinning on the loop, which keeps serving other streams meanwhile. `run_at` goes one
step further for open-loop sends: the callback runs inside the wake-up itself, so no task hop (each one
a pass over every ready stream) sits between the instant and the request's write.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol, TypeVar

__all__ = ["MonotonicClock", "at_instant"]

T = TypeVar("T")

_COARSE_NS = 2_000_000  # loop timers wake up to ~1 ms off: they cover all but the last 2 ms
_FINE_MIN_NS = 100_000  # below this, waiting in place is cheaper than a thread handoff
_HANDOFF_NS = 60_000  # typical time from the helper thread's wake to the loop running the callback


class MonotonicClock:
    """perf_counter_ns, a wait that returns at `target_ns`, and `run_at` (see the module docstring)."""

    def __init__(self) -> None:
        self._waker: ThreadPoolExecutor | None = None

    def now_ns(self) -> int:
        return time.perf_counter_ns()

    async def sleep_until(self, target_ns: int) -> None:
        remaining = await self._coarse(target_ns)
        if remaining > _FINE_MIN_NS:
            await asyncio.get_running_loop().run_in_executor(self._pool(), _sleep_until, target_ns)
        while time.perf_counter_ns() < target_ns:  # the last few microseconds
            await asyncio.sleep(0)

    async def run_at(self, target_ns: int, fn: Callable[[], T]) -> T:
        """Run `fn` on the loop at `target_ns` (never before it) and return its result."""
        remaining = await self._coarse(target_ns)
        if remaining <= _FINE_MIN_NS:
            return _spin_then(target_ns, fn)
        loop = asyncio.get_running_loop()
        done: asyncio.Future[T] = loop.create_future()

        def fire() -> None:
            if done.cancelled():
                return
            try:
                done.set_result(_spin_then(target_ns, fn))
            except BaseException as exc:  # handed to the awaiting task, which re-raises it
                done.set_exception(exc)

        self._pool().submit(_wake_at, loop, target_ns, fire)
        return await done

    async def _coarse(self, target_ns: int) -> int:
        """Sleep on the loop timer to about 2 ms before `target_ns`; the ns then left."""
        remaining = target_ns - time.perf_counter_ns()
        if remaining > _COARSE_NS:
            await asyncio.sleep((remaining - _COARSE_NS) / 1e9)
            remaining = target_ns - time.perf_counter_ns()
        return remaining

    def _pool(self) -> ThreadPoolExecutor:
        if self._waker is None:
            self._waker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="raybench-waker")
        return self._waker

    def close(self) -> None:
        if self._waker is not None:
            self._waker.shutdown(wait=False)
            self._waker = None


class _Sleeper(Protocol):
    async def sleep_until(self, target_ns: int) -> None: ...


async def at_instant(clock: _Sleeper, target_ns: int, fn: Callable[[], T]) -> T:
    """`fn()` at `target_ns`: inside the precise wake-up with a MonotonicClock, after `sleep_until` with
    any other clock (raybench.testing.FakeClock in tests)."""
    if isinstance(clock, MonotonicClock):
        return await clock.run_at(target_ns, fn)
    await clock.sleep_until(target_ns)
    return fn()


def _sleep_until(target_ns: int) -> None:
    remaining = target_ns - time.perf_counter_ns()
    if remaining > _HANDOFF_NS:
        time.sleep((remaining - _HANDOFF_NS) / 1e9)  # wake the loop a little early: the handoff takes time


def _wake_at(loop: asyncio.AbstractEventLoop, target_ns: int, fire: Callable[[], None]) -> None:
    _sleep_until(target_ns)
    loop.call_soon_threadsafe(fire)


def _spin_then(target_ns: int, fn: Callable[[], T]) -> T:
    while time.perf_counter_ns() < target_ns:  # at most the handoff margin (tens of microseconds)
        pass
    return fn()

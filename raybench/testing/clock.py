"""FakeClock: an injected virtual clock whose waits return at once, so schedule tests are exact and instant."""

from __future__ import annotations

import asyncio
import heapq

__all__ = ["FakeClock"]

_SETTLE_YIELDS = 20  # loop turns given to ready tasks before time jumps to the next waiter


class FakeClock:
    """Virtual time: it jumps to the earliest pending wait only once every ready task has run,
    so concurrent waiters wake in instant order, exactly at their instants."""

    def __init__(self, start_ns: int = 0) -> None:
        self.t_ns = start_ns
        self._waiters: list[tuple[int, int, asyncio.Future[None]]] = []
        self._seq = 0
        self._ticker: asyncio.Task[None] | None = None

    def now_ns(self) -> int:
        return self.t_ns

    def advance(self, delta_ns: int) -> None:
        self.t_ns += delta_ns

    async def sleep_until(self, target_ns: int) -> None:
        if target_ns <= self.t_ns:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._seq += 1
        heapq.heappush(self._waiters, (target_ns, self._seq, future))
        if self._ticker is None or self._ticker.done():
            self._ticker = asyncio.get_running_loop().create_task(self._tick())
        await future

    async def _tick(self) -> None:
        while self._waiters:
            for _ in range(_SETTLE_YIELDS):
                await asyncio.sleep(0)
            target_ns, _, future = heapq.heappop(self._waiters)
            self.t_ns = max(self.t_ns, target_ns)
            if not future.done():
                future.set_result(None)

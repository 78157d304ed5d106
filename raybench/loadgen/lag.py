"""Self-monitoring of a generator: event-loop lag (10 ms timer lateness) and process CPU share."""

from __future__ import annotations

import asyncio
import contextlib
import time

import numpy as np

__all__ = ["LoopLagMonitor"]


class LoopLagMonitor:
    """Schedules a tick every `interval_ms` at absolute instants and records how late each one ran."""

    def __init__(self, interval_ms: float = 10.0) -> None:
        self._interval_ns = int(interval_ms * 1e6)
        self._lateness_ns: list[int] = []
        self._task: asyncio.Task[None] | None = None
        self._cpu_start_s = 0.0
        self._wall_start_s = 0.0

    def start(self) -> None:
        """Begin sampling (idempotent per step: call stop() before the next start())."""
        self._lateness_ns = []
        self._cpu_start_s = time.process_time()
        self._wall_start_s = time.perf_counter()
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> dict[str, float]:
        """Stop sampling; return lag percentiles (ms) and the CPU share of this process."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        wall = max(time.perf_counter() - self._wall_start_s, 1e-9)
        lag = np.asarray(self._lateness_ns, dtype=np.float64) / 1e6
        cpu = time.process_time() - self._cpu_start_s
        stats = {"cpu_share": cpu / wall, "cpu_s": cpu, "wall_s": wall, "lag_samples": float(lag.size)}
        for name, q in (("lag_p50_ms", 50), ("lag_p99_ms", 99), ("lag_max_ms", 100)):
            stats[name] = float(np.percentile(lag, q)) if lag.size else 0.0
        return stats

    async def _run(self) -> None:
        target = time.perf_counter_ns() + self._interval_ns
        while True:
            await asyncio.sleep(max(target - time.perf_counter_ns(), 0) / 1e9)
            now = time.perf_counter_ns()
            self._lateness_ns.append(max(now - target, 0))
            target += self._interval_ns
            if target < now:  # fell behind by more than a tick: lateness already recorded once
                target = now + self._interval_ns

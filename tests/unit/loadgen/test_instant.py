"""Acting at an instant: `run_at` runs its callback on the loop, never before the instant, and the open
loop sends through it with the lean client (the write happens inside the wake-up)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from raybench.loadgen.closed_loop import Shard
from raybench.loadgen.endpoint import Endpoint
from raybench.loadgen.instant import MonotonicClock, at_instant
from raybench.loadgen.open_loop import run_open_loop
from raybench.loadgen.session import new_session, warm_connections
from raybench.testing import FakeClock, FakeOpenAIServer, Script
from raybench.testing.prompts import FixedPrompts


@pytest.mark.parametrize("ahead_ns", [0, 50_000, 1_000_000, 5_000_000])
async def test_run_at_never_early(ahead_ns: int) -> None:
    clock = MonotonicClock()
    try:
        target = time.perf_counter_ns() + ahead_ns
        ran = await clock.run_at(target, time.perf_counter_ns)
    finally:
        clock.close()
    assert target <= ran < target + 50_000_000  # late only by scheduling, never early


async def test_run_at_passes_exceptions_on() -> None:
    clock = MonotonicClock()

    def boom() -> None:
        raise RuntimeError("from the callback")

    try:
        with pytest.raises(RuntimeError, match="from the callback"):
            await clock.run_at(time.perf_counter_ns() + 1_000_000, boom)
    finally:
        clock.close()


async def test_at_instant_with_a_fake_clock_sleeps_then_calls() -> None:
    clock = FakeClock(start_ns=0)
    assert await at_instant(clock, 5_000, clock.now_ns) == 5_000


async def test_open_loop_sends_on_schedule_through_the_lean_client() -> None:
    async with FakeOpenAIServer(Script(ttft_ms=2, itl_ms=1)) as fake:
        session = new_session()
        endpoint = Endpoint((fake.base_url,), fake.model)
        shard = Shard(0, None, 30, 0, 1, 0, 5.0, "o:", rate_per_s=300.0, arrival="constant")
        rows: list[dict[str, Any]] = []
        try:
            await warm_connections(session, endpoint, 8)
            start = time.perf_counter_ns() + 20_000_000
            result = await run_open_loop(session, endpoint, FixedPrompts(4, 3), shard, start, rows.append)
        finally:
            await session.close()
    assert result.issued == 30 and len(rows) == 30 and {r["status"] for r in rows} == {"ok"}
    lags = [r["sent_ns"] - r["scheduled_ns"] for r in rows]
    assert min(lags) >= 0 and sorted(lags)[15] < 20_000_000  # never early; typically far under a millisecond
    assert session.pool.opened <= 8 + 2  # warmed connections were reused

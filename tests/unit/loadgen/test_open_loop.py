"""Open-loop runner: sends on the schedule's instants (injected clock), caps in flight, counts queue time."""

from __future__ import annotations

import time
from typing import Any

import aiohttp
import pytest

from raybench.loadgen.client import RequestOutcome
from raybench.loadgen.closed_loop import Shard
from raybench.loadgen.endpoint import Endpoint
from raybench.loadgen.open_loop import run_open_loop
from raybench.loadgen.schedule import arrival_offsets_ns
from raybench.testing import FakeClock, FakeOpenAIServer, Script
from raybench.testing.prompts import FixedPrompts

ENDPOINT = Endpoint(("http://127.0.0.1:1",), "m")
START_NS = 1_000_000_000


def _shard(
    rate: float, *, requests: int | None = None, duration_s: float | None = None, cap: int = 0, **kw: Any
) -> Shard:
    defaults: dict[str, Any] = {"prompt_base": 0, "prompt_stride": 1, "prompt_offset": 0, "arrival": "poisson"}
    defaults.update(kw)
    return Shard(cap, duration_s, requests, timeout_s=5.0, request_id_prefix="e:0:", rate_per_s=rate, **defaults)


class FakeSender:
    """Answers each request after `service_ns` of fake time; records when each was sent."""

    def __init__(self, clock: FakeClock, service_ns: int) -> None:
        self.clock = clock
        self.service_ns = service_ns
        self.in_flight = 0
        self.max_in_flight = 0

    async def __call__(self, _s: Any, _e: Endpoint, _url: str, _body: bytes, _t: float) -> RequestOutcome:
        out = RequestOutcome(sent_ns=self.clock.now_ns())
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        await self.clock.sleep_until(out.sent_ns + self.service_ns)
        self.in_flight -= 1
        out.first_token_ns = out.sent_ns + self.service_ns // 2
        out.done_ns = self.clock.now_ns()
        return out


async def _run(shard: Shard, service_ns: int = 0) -> tuple[list[dict[str, Any]], Any, FakeSender]:
    clock = FakeClock(start_ns=0)
    sender = FakeSender(clock, service_ns)
    rows: list[dict[str, Any]] = []
    session: Any = None
    result = await run_open_loop(
        session, ENDPOINT, FixedPrompts(4, 2), shard, START_NS, rows.append, clock=clock, send=sender
    )
    return rows, result, sender


async def test_sends_exactly_on_the_schedule() -> None:
    rows, result, _ = await _run(_shard(50.0, requests=200, seed=5))
    expected = (START_NS + arrival_offsets_ns(50.0, "poisson", 200, seed=5)).tolist()
    assert sorted(r["scheduled_ns"] for r in rows) == expected
    assert all(r["sent_ns"] == r["scheduled_ns"] for r in rows)
    assert (
        result.issued == 200 and result.reached_target_ns == expected[0] and result.stopped_issuing_ns == expected[-1]
    )


async def test_duration_stops_at_deadline_and_keeps_late_answers() -> None:
    rows, result, _ = await _run(_shard(100.0, duration_s=2.0, arrival="constant"), service_ns=500_000_000)
    assert len(rows) == 200 == result.issued
    assert max(r["scheduled_ns"] for r in rows) < START_NS + 2_000_000_000
    assert result.stopped_issuing_ns == START_NS + 2_000_000_000


async def test_cap_queues_without_coordinated_omission() -> None:
    # 100/s constant, each answer takes 100 ms: 10 in flight needed, only 2 allowed.
    rows, _, sender = await _run(_shard(100.0, requests=50, arrival="constant", cap=2), service_ns=100_000_000)
    assert sender.max_in_flight == 2 and len(rows) == 50
    rows.sort(key=lambda r: r["scheduled_ns"])
    assert [r["scheduled_ns"] - START_NS for r in rows] == [k * 10_000_000 for k in range(50)]
    queue_ms = [(r["sent_ns"] - r["scheduled_ns"]) / 1e6 for r in rows]
    assert queue_ms[:2] == [0.0, 0.0] and queue_ms[-1] > 1000  # the backlog is visible as queue time
    assert [r["sent_ns"] for r in rows] == sorted(r["sent_ns"] for r in rows)  # FIFO


async def test_shard_sends_its_slice_with_global_prompt_numbers() -> None:
    rows, _, _ = await _run(_shard(30.0, requests=4, prompt_stride=3, prompt_offset=1, prompt_base=100, seed=2))
    assert sorted(r["request_id"] for r in rows) == sorted(f"e:0:{100 + n}" for n in (1, 4, 7, 10))
    whole = arrival_offsets_ns(30.0, "poisson", 12, seed=2)
    assert sorted(r["scheduled_ns"] - START_NS for r in rows) == [int(whole[n]) for n in (1, 4, 7, 10)]


async def test_closed_loop_shard_is_refused() -> None:
    shard = Shard(1, None, 1, 0, 1, 0, 1.0, "x")
    with pytest.raises(ValueError, match="run_closed_loop"):
        await run_open_loop(None, ENDPOINT, FixedPrompts(), shard, 0, print)  # type: ignore[arg-type]


async def test_real_clock_against_the_fake_server_loses_nothing() -> None:
    rows: list[dict[str, Any]] = []
    async with FakeOpenAIServer(Script(ttft_ms=5, itl_ms=1)) as fake, aiohttp.ClientSession() as session:
        endpoint = Endpoint((fake.base_url,), fake.model)
        start = time.perf_counter_ns() + 20_000_000
        result = await run_open_loop(
            session, endpoint, FixedPrompts(8, 4), _shard(200.0, requests=60), start, rows.append
        )
    assert len(rows) == 60 == result.issued == len(fake.streams)
    assert all(r["status"] == "ok" for r in rows)
    assert all(r["sent_ns"] >= r["scheduled_ns"] for r in rows)

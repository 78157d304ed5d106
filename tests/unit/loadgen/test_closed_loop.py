"""Closed-loop runner: exact request counts, slots refilled at once, the generator's own window."""

from __future__ import annotations

import socket
import time
from itertools import pairwise
from typing import Any

import aiohttp
import pytest

from raybench.loadgen.closed_loop import CONNECT_FAILURE_PAUSE_S, Shard, run_closed_loop
from raybench.loadgen.endpoint import Endpoint
from raybench.loadgen.session import new_session
from raybench.testing import FakeOpenAIServer, Script
from raybench.testing.prompts import FixedPrompts

PROMPTS = FixedPrompts(input_words=16, output_tokens=4)


def _shard(concurrency: int, requests: int | None = None, duration_s: float | None = None) -> Shard:
    return Shard(
        concurrency,
        duration_s,
        requests,
        prompt_base=1000,
        prompt_stride=2,
        prompt_offset=1,
        timeout_s=5.0,
        request_id_prefix="e:0:",
    )


async def _run(shard: Shard) -> tuple[list[dict[str, Any]], Any, int]:
    rows: list[dict[str, Any]] = []
    async with FakeOpenAIServer(Script(ttft_ms=5, itl_ms=2)) as fake, aiohttp.ClientSession() as session:
        endpoint = Endpoint((fake.base_url,), fake.model)
        start = time.perf_counter_ns() + 20_000_000
        result = await run_closed_loop(session, endpoint, PROMPTS, shard, start, rows.append)
    return rows, result, start


async def test_request_budget_is_exact() -> None:
    rows, result, start = await _run(_shard(4, requests=21))
    assert len(rows) == 21 == result.issued
    assert all(r["status"] == "ok" for r in rows)
    ids = [r["request_id"] for r in rows]
    assert len(set(ids)) == 21
    assert {int(i.split(":")[-1]) for i in ids} == {1000 + k * 2 + 1 for k in range(21)}
    assert min(r["scheduled_ns"] for r in rows) >= start
    assert result.reached_target_ns is not None and result.stopped_issuing_ns is not None
    assert result.reached_target_ns <= result.stopped_issuing_ns


async def test_slot_is_refilled_immediately() -> None:
    rows, _, _ = await _run(_shard(1, requests=5))
    rows.sort(key=lambda r: r["sent_ns"])
    for prev, nxt in pairwise(rows):
        assert nxt["scheduled_ns"] >= prev["done_ns"]
        assert (nxt["sent_ns"] - prev["done_ns"]) < 5_000_000  # under 5 ms between requests on one slot
        assert nxt["sent_ns"] >= nxt["scheduled_ns"]


async def test_duration_stops_issuing_at_deadline() -> None:
    rows, result, start = await _run(_shard(3, duration_s=0.3))
    assert rows and result.stopped_issuing_ns == start + 300_000_000
    assert all(r["scheduled_ns"] < start + 300_000_000 for r in rows)


async def test_zero_share_generator_idles() -> None:
    rows, result, _ = await _run(_shard(0, requests=5))
    assert rows == [] and result.issued == 0 and result.reached_target_ns is None


def _closed_port() -> int:
    with socket.socket() as sock:  # bound, never listening: connections to it are refused
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("client", ["lean", "aiohttp"])
async def test_a_refusing_server_is_not_hammered(client: str) -> None:
    """A dead engine refuses at once; each slot pauses between refusals instead of flooding the records."""
    rows: list[dict[str, Any]] = []
    endpoint = Endpoint((f"http://127.0.0.1:{_closed_port()}",), "m")
    session = new_session(client)
    try:
        start = time.perf_counter_ns() + 5_000_000
        await run_closed_loop(session, endpoint, PROMPTS, _shard(4, duration_s=0.5), start, rows.append)
    finally:
        await session.close()
    assert rows and all(r["status"] == "disconnect" for r in rows)
    per_slot_bound = 0.5 / CONNECT_FAILURE_PAUSE_S + 2
    assert len(rows) <= 4 * per_slot_bound, f"{len(rows)} requests in 0.5 s against a refusing port"

"""The fake OpenAI server: per-request scripts, stalls, continuous usage, control endpoints, and fault
records through the open-loop runner with nothing lost (records == requests sent)."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import aiohttp

from raybench.loadgen.client import build_payload, send_streaming
from raybench.loadgen.closed_loop import Shard
from raybench.loadgen.endpoint import Endpoint
from raybench.loadgen.open_loop import run_open_loop
from raybench.testing import FakeOpenAIServer, Script
from raybench.testing.prompts import FixedPrompts

FAULTS = [
    (Script(ttft_ms=2, itl_ms=1), "ok"),
    (Script(http_status=429), "http_error"),
    (Script(http_status=500), "http_error"),
    (Script(ttft_ms=2, itl_ms=1, reset_after_chunks=2), "disconnect"),
    (Script(ttft_ms=2, itl_ms=1, malformed_after_chunks=1), "protocol_error"),
    (Script(ttft_ms=2, itl_ms=1, error_event_after_chunks=1), "http_error"),
    (Script(ttft_ms=3000), "timeout"),
]


async def test_every_fault_is_the_right_record_and_none_is_lost() -> None:
    rows: list[dict[str, Any]] = []
    scripts = {}

    def script_for(number: int, body: dict[str, Any]) -> Script:
        scripts[body["prompt"].split()[0]] = number % len(FAULTS)
        return FAULTS[number % len(FAULTS)][0]

    shard = Shard(0, None, 28, 0, 1, 0, 0.5, "r:", rate_per_s=200.0, arrival="constant")
    async with FakeOpenAIServer(script_for=script_for) as fake, aiohttp.ClientSession() as session:
        endpoint = Endpoint((fake.base_url,), fake.model)
        start = time.perf_counter_ns() + 10_000_000
        result = await run_open_loop(session, endpoint, FixedPrompts(4, 4), shard, start, rows.append)
    assert len(rows) == result.issued == 28 == len(fake.streams)
    got = Counter((FAULTS[scripts[r["request_id"].split(":")[1]]][1], r["status"]) for r in rows)
    assert all(expected == status for expected, status in got), got


async def test_per_request_script_and_written_truth() -> None:
    def script_for(number: int, _body: dict[str, Any]) -> Script:
        return Script(ttft_ms=5 + 20 * number, itl_ms=3)

    async with FakeOpenAIServer(script_for=script_for) as fake, aiohttp.ClientSession() as session:
        endpoint = Endpoint((fake.base_url,), fake.model)
        outs = [
            await send_streaming(session, endpoint, endpoint.url(0), build_payload(endpoint, "a b c", 4), 5)
            for _ in range(2)
        ]
    for out, truth in zip(outs, fake.streams):
        assert len(truth.chunk_ns) == 4 and truth.received_ns > 0 and truth.done_ns >= truth.chunk_ns[-1]
        assert out.first_token_ns is not None and out.first_token_ns >= truth.chunk_ns[0]
    ttfts = [(t.chunk_ns[0] - t.received_ns) / 1e6 for t in fake.streams]
    assert 5 <= ttfts[0] < 20 and 25 <= ttfts[1] < 40


async def test_stall_holds_every_stream() -> None:
    async with FakeOpenAIServer(Script(ttft_ms=5, itl_ms=5)) as fake, aiohttp.ClientSession() as session:
        endpoint = Endpoint((fake.base_url,), fake.model)
        fake.stall(300, after_ms=0)
        out = await send_streaming(session, endpoint, endpoint.url(0), build_payload(endpoint, "p", 3), 5)
    assert out.status == "ok" and out.first_token_ns is not None
    assert (out.first_token_ns - out.sent_ns) / 1e6 >= 290


async def test_stream_stall_after_chunks() -> None:
    script = Script(ttft_ms=2, itl_ms=2, stall_after_chunks=2, stall_ms=200)
    async with FakeOpenAIServer(script) as fake, aiohttp.ClientSession() as session:
        endpoint = Endpoint((fake.base_url,), fake.model)
        out = await send_streaming(session, endpoint, endpoint.url(0), build_payload(endpoint, "p", 4), 5)
    gaps_ms = [(b - a) / 1e6 for a, b in zip(out.chunk_ns, out.chunk_ns[1:])]
    assert out.status == "ok" and gaps_ms[1] >= 190 and gaps_ms[0] < 100


async def test_continuous_usage_and_multi_token_chunks() -> None:
    script = Script(ttft_ms=1, itl_ms=1, tokens_per_chunk=3)
    async with FakeOpenAIServer(script) as fake, aiohttp.ClientSession() as session:
        endpoint = Endpoint((fake.base_url,), fake.model, api="chat", continuous_usage_stats=True)
        out = await send_streaming(session, endpoint, endpoint.url(0), build_payload(endpoint, "p q", 8), 5)
    assert out.status == "ok" and out.chunk_tokens == [3, 3, 2] and out.output_tokens == 8
    assert out.input_tokens == 2


async def test_control_endpoints() -> None:
    async with FakeOpenAIServer() as fake, aiohttp.ClientSession() as session:
        async with session.post(fake.base_url + "/_fake/script", json={"ttft_ms": 1, "itl_ms": 1}) as r:
            assert r.status == 200
        endpoint = Endpoint((fake.base_url,), fake.model)
        await send_streaming(session, endpoint, endpoint.url(0), build_payload(endpoint, "p", 2), 5)
        async with session.get(fake.base_url + "/_fake/truth") as r:
            truth = await r.json()
        assert len(truth["streams"]) == 1 and truth["streams"][0]["chunk_tokens"] == [1, 1]
        async with session.post(fake.base_url + "/_fake/reset") as r:
            assert r.status == 200
        assert fake.streams == [] and fake.script.ttft_ms == 1

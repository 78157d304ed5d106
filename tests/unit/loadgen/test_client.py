"""The streaming client against the loopback fake: timings, token counts, and failures as records; every
test runs with both HTTP clients (the lean default and the aiohttp baseline)."""

from __future__ import annotations

from itertools import pairwise

import pytest

from raybench.loadgen.client import build_payload, send_streaming
from raybench.loadgen.endpoint import Endpoint
from raybench.loadgen.session import new_session
from raybench.testing import FakeOpenAIServer, Script

_CHOICE = {"client": "auto"}


@pytest.fixture(autouse=True, params=["lean", "aiohttp"])
def client(request: pytest.FixtureRequest) -> str:
    _CHOICE["client"] = request.param
    return str(request.param)


async def _send(
    script: Script, api: str = "completions", max_tokens: int = 8, timeout_s: float = 5.0, continuous: bool = False
):  # type: ignore[no-untyped-def]
    async with FakeOpenAIServer(script) as fake:
        session = new_session(_CHOICE["client"])
        endpoint = Endpoint((fake.base_url,), fake.model, api=api, continuous_usage_stats=continuous)  # type: ignore[arg-type]
        body = build_payload(endpoint, "hello world", max_tokens)
        try:
            out = await send_streaming(session, endpoint, endpoint.url(0), body, timeout_s)
        finally:
            await session.close()
        return out, fake


@pytest.mark.parametrize("api", ["completions", "chat"])
async def test_ok_stream_times_every_token(api: str) -> None:
    out, fake = await _send(Script(ttft_ms=20, itl_ms=5), api=api)
    assert out.status == "ok", out.error_message
    assert out.output_tokens == 8 and out.token_count_source == "server_usage"
    assert out.input_tokens == 2  # the fake counts the words of "hello world"
    assert len(out.chunk_ns) == 8 and out.chunk_tokens == [1] * 8
    assert out.first_token_ns == out.chunk_ns[0] and out.last_token_ns == out.chunk_ns[-1]
    assert out.first_chunk_ns is not None and out.first_chunk_ns <= out.first_token_ns
    ttft_ms = (out.first_token_ns - out.sent_ns) / 1e6
    assert 18 <= ttft_ms < 60
    truth = fake.streams[0].chunk_ns
    gaps = [(b - a) for a, b in pairwise(out.chunk_ns)]
    true_gaps = [(b - a) for a, b in pairwise(truth)]
    assert abs(sum(gaps) - sum(true_gaps)) / 1e6 < 5
    assert out.done_ns >= out.last_token_ns


async def test_payload_pins_output_length() -> None:
    endpoint = Endpoint(("http://127.0.0.1:1",), "m", api="chat", continuous_usage_stats=True)
    body = build_payload(endpoint, "p", 12)
    assert body["max_tokens"] == 12 and body["min_tokens"] == 12 and body["ignore_eos"] is True
    assert body["stream_options"] == {"include_usage": True, "continuous_usage_stats": True}
    assert body["messages"] == [{"role": "user", "content": "p"}]


async def test_multi_token_chunks_counted_without_usage() -> None:
    out, _ = await _send(Script(tokens_per_chunk=3, include_usage=False), max_tokens=8)
    assert out.status == "ok"
    assert out.token_count_source == "chunk_count"
    assert out.output_tokens == 3  # one per event: the reason continuous usage stats are asked for


async def test_http_error_is_a_record() -> None:
    out, _ = await _send(Script(http_status=503))
    assert out.status == "http_error" and out.http_status == 503 and out.error_type == "http_503"
    assert out.first_token_ns is None


async def test_reset_mid_stream_is_disconnect() -> None:
    out, _ = await _send(Script(reset_after_chunks=3))
    assert out.status == "disconnect"
    assert len(out.chunk_ns) == 3


async def test_malformed_event_is_protocol_error() -> None:
    out, _ = await _send(Script(malformed_after_chunks=2))
    assert out.status == "protocol_error" and out.error_type == "malformed_event"


async def test_error_event_mid_stream() -> None:
    out, _ = await _send(Script(error_event_after_chunks=2))
    assert out.status == "http_error" and out.error_type == "server_error_event"


async def test_timeout() -> None:
    out, _ = await _send(Script(ttft_ms=2000), timeout_s=0.2)
    assert out.status == "timeout"
    assert out.done_ns - out.sent_ns < 1_000_000_000


async def test_stream_ending_without_done_but_with_finish_is_ok() -> None:
    out, _ = await _send(Script(send_done=False))
    assert out.status == "ok"


async def test_connection_refused_is_disconnect() -> None:
    endpoint = Endpoint(("http://127.0.0.1:9",), "m")
    session = new_session(_CHOICE["client"])
    try:
        out = await send_streaming(session, endpoint, endpoint.url(0), build_payload(endpoint, "p", 2), 2.0)
    finally:
        await session.close()
    assert out.status == "disconnect"

"""The fake server's fault modes against the real streaming client (no Ray): each fault gives the record
status and error type docs/reliability.md promises, whichever HTTP read path raybench uses."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest

from raybench.loadgen.client import RequestOutcome, build_payload, not_event_stream, send_streaming
from raybench.loadgen.endpoint import Endpoint
from raybench.loadgen.session import new_session
from raybench.testing.fake_openai import FakeOpenAIServer, FakeServerThread, Script

TOKENS = 5


def _s(**faults: Any) -> Script:
    return Script(ttft_ms=2, itl_ms=1, **faults)


CASES = [
    ("http-429", _s(http_status=429), "http_error", "http_429"),
    ("error-event", _s(error_event_after_chunks=1), "http_error", "server_error_event"),
    ("reset", _s(reset_after_chunks=2), "disconnect", None),
    ("stall-resume", _s(stall_after_chunks=2, stall_ms=150), "ok", None),
    ("stall-timeout", _s(stall_after_chunks=2, stall_ms=3000), "timeout", "timeout"),
    ("malformed", _s(malformed_after_chunks=1), "protocol_error", "malformed_event"),
    ("no-done", _s(send_done=False), "ok", None),
    ("no-done-no-usage", _s(send_done=False, include_usage=False), "ok", None),
    ("truncated", _s(end_after_chunks=2), "disconnect", "stream_incomplete"),
    ("oversize-1mib", _s(oversize_event_bytes=1 << 20), "ok", None),
    ("oversize-4mib", _s(oversize_event_bytes=4 << 20), "ok", None),
    ("html", _s(content_type="text/html; charset=utf-8"), "protocol_error", "wrong_content_type"),
    ("plain-json", _s(plain_json=True), "protocol_error", "not_streaming"),
    ("sse-with-charset", _s(content_type="text/event-stream; charset=utf-8"), "ok", None),
    ("slow-headers", _s(header_delay_ms=150), "ok", None),
    ("headers-timeout", _s(header_delay_ms=3000), "timeout", "timeout"),
]


async def _send(
    fake: FakeOpenAIServer, client: str = "auto", chat: bool = False, api_key: str | None = None, timeout_s: float = 5.0
) -> RequestOutcome:
    endpoint = Endpoint((fake.base_url,), fake.model, api="chat" if chat else "completions", api_key=api_key)
    session = new_session(client)
    try:
        return await send_streaming(
            session, endpoint, endpoint.url(0), build_payload(endpoint, "a b c", TOKENS), timeout_s
        )
    finally:
        await session.close()


@pytest.mark.parametrize(("script", "status", "error_type"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
@pytest.mark.parametrize(("client", "chat"), [("lean", False), ("lean", True), ("aiohttp", False)])
async def test_fault_gives_the_promised_record(
    script: Script, status: str, error_type: str | None, client: str, chat: bool
) -> None:
    async with FakeOpenAIServer(script) as fake:
        out = await _send(fake, client, chat, timeout_s=1.0 if status == "timeout" else 5.0)
    assert out.status == status, (out.error_type, out.error_message)
    assert out.done_ns >= out.sent_ns > 0
    if status == "ok":
        assert out.error_type is None and out.output_tokens == TOKENS and sum(out.chunk_tokens) == TOKENS
    else:
        assert out.error_message and (out.error_type == error_type or error_type is None), out.error_type


async def test_stall_and_slow_headers_are_in_the_timings() -> None:
    async with FakeOpenAIServer(_s(stall_after_chunks=2, stall_ms=150)) as fake:
        out = await _send(fake)
    assert max(b - a for a, b in zip(out.chunk_ns, out.chunk_ns[1:])) >= 140e6
    async with FakeOpenAIServer(_s(header_delay_ms=150)) as fake:
        out = await _send(fake)
    assert out.first_token_ns is not None and out.first_token_ns - out.sent_ns >= 140e6


async def test_burst_answers_its_window_then_recovers() -> None:
    async with FakeOpenAIServer(_s(burst_status=503, burst_from=1, burst_requests=2)) as fake:
        outs = [await _send(fake) for _ in range(4)]
    assert [(o.status, o.http_status) for o in outs] == [("ok", 200), ("http_error", 503), ("http_error", 503),
                                                         ("ok", 200)]  # fmt: skip
    assert "scripted failure" in (outs[1].error_message or "")


async def test_api_key_is_required_when_set() -> None:
    async with FakeOpenAIServer(_s(), api_key="k-1") as fake:
        refused, missing, accepted = (
            await _send(fake, api_key="wrong"),
            await _send(fake),
            await _send(fake, api_key="k-1"),
        )
    assert (refused.status, refused.http_status) == ("http_error", 401)
    assert (missing.status, missing.http_status) == ("http_error", 401)
    assert accepted.status == "ok"


def test_content_type_rule() -> None:
    assert not_event_stream("text/event-stream") is None
    assert not_event_stream("Text/Event-Stream; charset=utf-8") is None
    assert not_event_stream(None) is None  # no header: parsed as SSE, judged by what arrives
    assert not_event_stream("application/json") == "not_streaming"
    assert not_event_stream("text/plain") == "wrong_content_type"


def test_server_thread_serves_a_blocking_caller() -> None:
    with FakeServerThread([FakeOpenAIServer(_s()), FakeOpenAIServer(_s(http_status=500))]) as fakes:
        first, second = (asyncio.run(_plain_post(f.base_url)) for f in fakes.servers)
    assert (first, second) == (200, 500)
    assert len(fakes[0].streams) == len(fakes[1].streams) == 1


async def _plain_post(base_url: str) -> int:
    async with aiohttp.ClientSession() as session:
        body = {"model": "fake-model", "prompt": "x", "max_tokens": 2, "stream": True}
        async with session.post(f"{base_url}/v1/completions", json=body) as response:
            await response.read()
            return response.status


async def test_a_client_gone_before_the_headers_is_noted_not_crashed_on() -> None:
    async with FakeOpenAIServer(_s(header_delay_ms=700)) as fake:
        out = await _send(fake, timeout_s=0.3)
        await asyncio.sleep(0.6)
        assert out.status == "timeout"
        assert fake.streams[0].status == "client_gone"

"""The lean client on loopback sockets: keep-alive reuse, the request bytes, timeouts, cancellation, resets,
and the automatic choice between the lean client and aiohttp."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import pytest

from raybench.loadgen.client import build_payload, encode_body, send_streaming
from raybench.loadgen.endpoint import Endpoint
from raybench.loadgen.session import StreamSession, new_session, warm_connections
from raybench.loadgen.wire_pool import send_wire
from raybench.testing import FakeOpenAIServer, Script

SSE = (
    b'data: {"choices":[{"text":"a","finish_reason":null}]}\n\n'
    b'data: {"choices":[{"text":"b","finish_reason":"length"}],"usage":{"prompt_tokens":1,"completion_tokens":2}}\n\n'
    b"data: [DONE]\n\n"
)


class RawServer(asyncio.Protocol):
    """Answers each request (once its head and Content-Length body are in) with `answer(request bytes)`."""

    def __init__(self, answer: Callable[[bytes, asyncio.Transport], None], seen: list[bytes]) -> None:
        self.answer = answer
        self.seen = seen
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            return
        length = int(self.buffer.lower().split(b"content-length:")[1].split(b"\r\n")[0])
        if len(self.buffer) >= end + 4 + length:
            request, self.buffer = self.buffer[: end + 4 + length], self.buffer[end + 4 + length :]
            self.seen.append(request)
            assert self.transport is not None
            self.answer(request, self.transport)


@asynccontextmanager
async def raw_server(answer: Callable[[bytes, asyncio.Transport], None]) -> AsyncIterator[tuple[str, list[bytes]]]:
    seen: list[bytes] = []
    server = await asyncio.get_running_loop().create_server(lambda: RawServer(answer, seen), "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}", seen
    finally:
        server.close()


def _endpoint(base: str, **kw: object) -> Endpoint:
    return Endpoint((base,), "m", **kw)  # type: ignore[arg-type]


async def test_keep_alive_reuses_one_connection_per_slot() -> None:
    async with FakeOpenAIServer(Script(ttft_ms=2, itl_ms=1)) as fake:
        session = new_session()
        endpoint = _endpoint(fake.base_url)
        body = encode_body(build_payload(endpoint, "p", 4))
        try:
            for _ in range(5):
                out = await send_streaming(session, endpoint, endpoint.url(0), body, 5)
                assert out.status == "ok" and len(out.chunk_ns) == 4
            assert session.pool.opened == 1
            outs = await asyncio.gather(
                *(send_streaming(session, endpoint, endpoint.url(0), body, 5) for _ in range(3))
            )
            assert [o.status for o in outs] == ["ok"] * 3 and session.pool.opened == 3
        finally:
            await session.close()


async def test_warm_connections_opens_them_before_any_request() -> None:
    async with FakeOpenAIServer() as fake:
        session = new_session()
        try:
            await warm_connections(session, _endpoint(fake.base_url), 6)
            assert session.pool.opened == 6 and session.pool.idle_count() == 6
        finally:
            await session.close()


async def test_request_is_one_write_with_key_and_length() -> None:
    def answer(_request: bytes, transport: asyncio.Transport) -> None:
        transport.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n" % len(SSE))
        transport.write(SSE)

    async with raw_server(answer) as (base, seen):
        session = new_session("lean")
        endpoint = _endpoint(base, api_key="sk-test")
        try:
            out = await send_streaming(session, endpoint, endpoint.url(0), b'{"x": 1}', 5)
        finally:
            await session.close()
    assert out.status == "ok" and out.output_tokens == 2 and out.input_tokens == 1
    head, _, body = seen[0].partition(b"\r\n\r\n")
    assert head.startswith(b"POST /v1/completions HTTP/1.1\r\n") and body == b'{"x": 1}'
    assert b"\r\nAuthorization: Bearer sk-test\r\n" in head and b"\r\nContent-Length: 8" in head
    assert out.first_token_ns is not None and out.sent_ns < out.first_token_ns <= out.done_ns


async def test_close_delimited_answer() -> None:
    def answer(_request: bytes, transport: asyncio.Transport) -> None:
        transport.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + SSE)
        transport.close()

    async with raw_server(answer) as (base, _):
        session = new_session()
        endpoint = _endpoint(base)
        try:
            out = await send_streaming(session, endpoint, endpoint.url(0), b"{}", 5)
            again = await send_streaming(session, endpoint, endpoint.url(0), b"{}", 5)
        finally:
            await session.close()
    assert out.status == again.status == "ok" and session.pool.opened == 2  # not reused after a close


async def test_reset_mid_stream() -> None:
    async with FakeOpenAIServer(Script(reset_after_chunks=3, itl_ms=1)) as fake:
        session = new_session()
        endpoint = _endpoint(fake.base_url)
        try:
            out = await send_streaming(session, endpoint, endpoint.url(0), build_payload(endpoint, "p", 8), 5)
        finally:
            await session.close()
    assert out.status == "disconnect" and len(out.chunk_ns) == 3


async def test_timeout_then_a_fresh_connection() -> None:
    async with FakeOpenAIServer(Script(ttft_ms=2000)) as fake:
        session = new_session()
        endpoint = _endpoint(fake.base_url)
        try:
            out = await send_wire(session.pool, endpoint, endpoint.url(0), b"{}", 0.2)
            assert out.status == "timeout" and out.done_ns - out.sent_ns < 1_000_000_000
            fake.script = Script(ttft_ms=1, itl_ms=1)
            out = await send_wire(session.pool, endpoint, endpoint.url(0), encode_body({"max_tokens": 2}), 5)
            assert out.status == "ok" and session.pool.opened == 2  # the timed-out connection was closed
        finally:
            await session.close()


async def test_cancellation_propagates_and_closes_the_connection() -> None:
    async with FakeOpenAIServer(Script(ttft_ms=5, itl_ms=50)) as fake:
        session = new_session()
        endpoint = _endpoint(fake.base_url)
        try:
            task = asyncio.create_task(send_streaming(session, endpoint, endpoint.url(0), b'{"max_tokens": 50}', 5))
            await asyncio.sleep(0.1)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert session.pool.idle_count() == 0
            out = await send_streaming(session, endpoint, endpoint.url(0), b'{"max_tokens": 2}', 5)
            assert out.status == "ok" and session.pool.opened == 2
        finally:
            await session.close()


async def test_connection_refused() -> None:
    session = new_session()
    endpoint = _endpoint("http://127.0.0.1:9")
    try:
        out = await send_streaming(session, endpoint, endpoint.url(0), b"{}", 2)
    finally:
        await session.close()
    assert out.status == "disconnect" and out.error_type is not None and out.sent_ns <= out.done_ns


def test_client_choice() -> None:
    plain, tls = "http://h:1", "https://h:1"
    assert StreamSession("auto").lean_for(plain) and not StreamSession("auto").lean_for(tls)
    assert not StreamSession("aiohttp").lean_for(plain)
    assert StreamSession("auto").impl_for(Endpoint((plain, tls), "m")) == "lean+aiohttp"
    assert StreamSession("aiohttp").impl_for(Endpoint((plain,), "m")) == "aiohttp"
    with pytest.raises(ValueError, match="auto or aiohttp"):
        StreamSession("lean").lean_for(tls)
    with pytest.raises(ValueError, match="auto, lean, aiohttp"):
        StreamSession("fast")


@pytest.mark.parametrize("client", ["lean", "aiohttp"])
async def test_both_clients_give_the_same_record(client: str) -> None:
    async with FakeOpenAIServer(Script(ttft_ms=3, itl_ms=1, tokens_per_chunk=2), model="m") as fake:
        session = new_session(client)
        endpoint = _endpoint(fake.base_url, continuous_usage_stats=True)
        try:
            out = await send_streaming(session, endpoint, endpoint.url(0), build_payload(endpoint, "a b c", 7), 5)
        finally:
            await session.close()
    assert out.status == "ok" and out.chunk_tokens == [2, 2, 2, 1] and out.output_tokens == 7
    assert out.input_tokens == 3 and out.http_status == 200 and out.token_count_source == "server_usage"

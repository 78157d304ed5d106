"""The lean HTTP/1.1 protocol, fed bytes directly (no sockets): framing, heads, and the record it builds."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raybench.loadgen import wire
from raybench.loadgen.events import RequestOutcome, finish_outcome, read_events
from raybench.loadgen.wire import WireConnection, WireError, parse_head

SSE_OK = (
    b": keep-alive\r\n\r\n"
    b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}\r\n\r\n'
    b'data: {"choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}\n\n'
    b'data: {"choices":[{"index":0,"delta":{"content":""},"finish_reason":null}]}\n\n'
    b'data: {"choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}\n\n'
    b'data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}\n\n'
    b"data: [DONE]\n\n"
)
SSE_NO_DONE = (
    b'data: {"choices":[{"text":"a","finish_reason":null}]}\n\n'
    b'data: {"choices":[{"text":"b","finish_reason":"length"}]}'
)
SSE_MALFORMED = b'data: {"choices":[{"text":"a","finish_reason":null}]}\n\ndata: {oops\n\ndata: [DONE]\n\n'
SSE_TRUNCATED = b'data: {"choices":[{"text":"a","finish_reason":null}]}\n\ndata: {"choices":[{"te'
SSE_ERROR = (
    b'data: {"choices":[{"text":"a","finish_reason":null}]}\n\nevent: error\ndata: {"error":{"message":"x"}}\n\n'
)
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
COMPARED = ("status", "error_type", "http_status", "chunk_ns", "chunk_tokens", "first_token_ns", "output_tokens")


class FakeTransport:
    """What WireConnection needs of a transport; records writes and how it was closed."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.aborted = False
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def abort(self) -> None:
        self.aborted = True

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.aborted or self.closed


def chunked(body: bytes, sizes: list[int], ext: bool = False, trailers: bool = False) -> bytes:
    """`body` in HTTP chunks of the given sizes (cycled), with chunk extensions and trailers on request."""
    out, pos, i = [], 0, 0
    while pos < len(body):
        size = max(1, sizes[i % len(sizes)]) if sizes else len(body)
        piece = body[pos : pos + size]
        out.append(b"%x%b\r\n%b\r\n" % (len(piece), b";name=value" if ext else b"", piece))
        pos, i = pos + len(piece), i + 1
    out.append(b"0\r\nX-Trailer: 1\r\n\r\n" if trailers else b"0\r\n\r\n")
    return b"".join(out)


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)])]


def run_exchange(
    reads: list[bytes], lost: Exception | bool | None = False
) -> tuple[RequestOutcome, WireConnection, Any]:
    """Feed `reads` to a fresh connection after sending one request; then lose the connection if asked
    (`lost` = the exception, None for a clean close). Clock pinned to 7: timing is compared elsewhere."""
    idle: list[WireConnection] = []

    async def go() -> tuple[RequestOutcome, WireConnection, FakeTransport]:
        conn = WireConnection(idle.append)
        transport = FakeTransport()
        conn.connection_made(transport)  # type: ignore[arg-type]
        out = RequestOutcome()
        waiter = conn.send(out, b"POST / HTTP/1.1\r\n\r\n", 5.0)
        for piece in reads:
            conn.data_received(piece)
        if lost is not False:
            conn.connection_lost(lost)  # type: ignore[arg-type]
        await asyncio.sleep(0)  # reads are parsed from a call_soon, after the poll's arrivals are stamped
        assert waiter.done(), "the exchange did not complete"
        finish_outcome(out)
        return out, conn, transport

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(wire, "_clock", lambda: 7)
        out, conn, transport = asyncio.run(go())
    return out, conn, (transport, idle)


def reference(sse: bytes) -> RequestOutcome:
    """The record the aiohttp path builds from the same SSE bytes in one read."""

    async def reads() -> AsyncIterator[bytes]:
        yield sse

    out = RequestOutcome()
    asyncio.run(read_events(reads(), out, clock=lambda: 7))
    finish_outcome(out)
    out.http_status = 200
    return out


def same(a: RequestOutcome, b: RequestOutcome) -> bool:
    return all(getattr(a, k) == getattr(b, k) for k in COMPARED)


def test_parse_head_folds_lowercases_and_joins() -> None:
    status, headers = parse_head(
        b"HTTP/1.1 503 Service Unavailable\r\nCONTENT-type:  text/plain \r\nX-Long: a\r\n  b\r\n\tc\r\n"
        b"Set-Cookie: x=1\r\nset-cookie: y=2\r\nRetry-After:5"
    )
    assert status == 503
    assert headers["content-type"] == "text/plain" and headers["x-long"] == "a b c"
    assert headers["set-cookie"] == "x=1, y=2" and headers["retry-after"] == "5" and headers[":version"] == "HTTP/1.1"


@pytest.mark.parametrize("head", [b"HTP/1.1 200 OK", b"HTTP/1.1 abc OK", b"HTTP/1.1 200 OK\r\nno colon here"])
def test_parse_head_rejects_garbage(head: bytes) -> None:
    with pytest.raises(WireError):
        parse_head(head)


@pytest.mark.parametrize("sse", [SSE_OK, SSE_NO_DONE, SSE_MALFORMED, SSE_TRUNCATED, SSE_ERROR])
def test_chunked_record_equals_the_aiohttp_paths(sse: bytes) -> None:
    out, _, _ = run_exchange([HEAD + chunked(sse, [17, 3, 64], ext=True, trailers=True)])
    assert same(out, reference(sse)), (out, reference(sse))


def test_ok_stream_leaves_the_connection_idle_for_reuse() -> None:
    out, conn, (transport, idle) = run_exchange([HEAD + chunked(SSE_OK, [40], ext=True, trailers=True)])
    assert out.status == "ok" and out.saw_done and len(out.chunk_ns) == 2 and out.output_tokens == 2
    assert idle == [conn] and conn.usable and not transport.is_closing()
    assert transport.writes == [b"POST / HTTP/1.1\r\n\r\n"]  # the request went out in one write


def test_every_byte_split_of_the_framing() -> None:
    data = HEAD + chunked(SSE_OK, [5, 300, 1], ext=True, trailers=True)
    whole, _, _ = run_exchange([data])
    for cut in range(1, len(data)):
        out, conn, (_, idle) = run_exchange([data[:cut], data[cut:]])
        assert same(out, whole) and idle == [conn], cut
    out, _, _ = run_exchange([data[i : i + 1] for i in range(len(data))])
    assert same(out, whole)


CASES = st.sampled_from([SSE_OK, SSE_NO_DONE, SSE_MALFORMED, SSE_TRUNCATED, SSE_ERROR])


@settings(max_examples=120, deadline=None)
@given(
    CASES,
    st.lists(st.integers(1, 200), min_size=1, max_size=8),
    st.booleans(),
    st.lists(st.integers(0, 5000), max_size=30),
)
def test_any_split_of_chunked_sse_yields_the_identical_record(
    sse: bytes, sizes: list[int], extras: bool, cuts: list[int]
) -> None:
    data = HEAD + chunked(sse, sizes, ext=extras, trailers=extras)
    out, _, _ = run_exchange(split(data, cuts))
    assert same(out, reference(sse))


def test_content_length_body() -> None:
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: %d\r\n\r\n" % len(SSE_OK)
    out, conn, (_, idle) = run_exchange(split(head + SSE_OK, [30, 200, 201]))
    assert same(out, reference(SSE_OK)) and idle == [conn]


def test_close_delimited_body_ends_at_eof_and_is_not_reused() -> None:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
    out, conn, (_, idle) = run_exchange([head + SSE_NO_DONE[:40], SSE_NO_DONE[40:]], lost=None)
    assert same(out, reference(SSE_NO_DONE)) and out.status == "ok"
    assert idle == [] and not conn.usable


def test_http_error_keeps_status_and_body_excerpt() -> None:
    body = b'{"error": {"message": "overloaded, retry later"}}'
    head = b"HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
    out, conn, (_, idle) = run_exchange([head, body[:10], body[10:]])
    assert out.status == "http_error" and out.http_status == 429 and out.error_type == "http_429"
    assert "overloaded" in (out.error_message or "") and idle == [conn]


def test_interim_100_continue_is_skipped() -> None:
    out, _, _ = run_exchange([b"HTTP/1.1 100 Continue\r\n\r\n" + HEAD + chunked(SSE_OK, [50])])
    assert out.status == "ok" and out.http_status == 200


def test_connection_close_header_is_honoured() -> None:
    head = HEAD.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n")
    out, _, (transport, idle) = run_exchange([head + chunked(SSE_OK, [50])])
    assert out.status == "ok" and idle == [] and transport.is_closing()


def test_reset_mid_stream_is_a_disconnect_with_what_arrived() -> None:
    data = HEAD + chunked(SSE_OK, [400])
    cut = data.index(b"[DONE]") - 60
    out, _, _ = run_exchange([data[:cut]], lost=ConnectionResetError("reset by peer"))
    assert out.status == "disconnect" and out.error_type == "ConnectionResetError" and len(out.chunk_ns) == 2


def test_clean_close_before_the_body_ends_is_a_disconnect() -> None:
    out, _, _ = run_exchange([HEAD + b"10\r\ndata: {}"], lost=None)
    assert out.status == "disconnect" and out.error_type == "ServerDisconnectedError"


@pytest.mark.parametrize("size_line", [b"zz\r\n", b"-5\r\n", b"\r\n"])
def test_bad_chunk_size_is_a_protocol_error(size_line: bytes) -> None:
    out, _, (transport, idle) = run_exchange([HEAD + size_line + b"data"])
    assert out.status == "protocol_error" and out.error_type == "http_protocol" and transport.aborted and idle == []


def test_json_answer_to_a_streaming_request_is_not_streaming() -> None:
    body = b'{"choices": [{"text": "whole answer"}]}'
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
    out, _, (transport, _) = run_exchange([head + body])
    assert out.status == "protocol_error" and out.error_type == "not_streaming"
    assert "whole answer" in (out.error_message or "") and transport.aborted


def test_wrong_content_type() -> None:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: 6\r\n\r\n"
    out, _, _ = run_exchange([head + b"<html>"])
    assert out.status == "protocol_error" and out.error_type == "wrong_content_type"


def test_large_event_has_no_line_limit() -> None:
    text = "x" * (300 << 10)
    big = b'data: {"choices":[{"text":"%b","finish_reason":"stop"}]}\n\ndata: [DONE]\n\n' % text.encode()
    out, _, _ = run_exchange(split(HEAD + chunked(big, [70_000]), list(range(0, 400_000, 65_536))))
    assert out.status == "ok" and len(out.chunk_ns) == 1


def test_unsolicited_bytes_on_an_idle_connection_close_it() -> None:
    async def go() -> Iterator[bool]:
        conn = WireConnection(lambda c: None)
        transport = FakeTransport()
        conn.connection_made(transport)  # type: ignore[arg-type]
        conn.data_received(b"HTTP/1.1 200 OK\r\n\r\n")
        await asyncio.sleep(0)
        return iter([transport.aborted, conn.usable])

    aborted, usable = asyncio.run(go())
    assert aborted and not usable

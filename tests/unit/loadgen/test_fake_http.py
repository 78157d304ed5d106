"""The fake's HTTP layer: the kernel's receive stamp is the request's truth even when the fake's loop is
late to read it, large responses survive a slow reader, and pipelined requests are answered in order."""

from __future__ import annotations

import asyncio
import json
import sys
import time

import pytest

from raybench.testing.fake_http import HttpRequest, Responder, serve

REQUEST = b"POST /x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}"


async def _read_response(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = int(
        next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length"))
    )
    return await reader.readexactly(length)


@pytest.mark.skipif(sys.platform != "linux", reason="SO_TIMESTAMPNS receive stamps are Linux's")
async def test_a_request_read_late_keeps_its_kernel_arrival_instant() -> None:
    seen: list[HttpRequest] = []

    async def handler(request: HttpRequest, out: Responder) -> None:
        seen.append(request)
        out.send_json({"ok": True})

    server = await serve(handler, "127.0.0.1", 0)
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        await asyncio.sleep(0.01)  # the fake has accepted the connection
        sent_ns = time.perf_counter_ns()
        writer.write(REQUEST)
        time.sleep(0.06)  # the fake shares this loop: it cannot read for 60 ms
        assert json.loads(await _read_response(reader)) == {"ok": True}
        writer.close()
    finally:
        server.close()
    (request,) = seen
    assert request.received_source == "kernel"
    assert 0 <= request.received_ns - sent_ns < 20_000_000  # arrived while the loop was blocked
    assert request.read_ns - request.received_ns >= 40_000_000  # read only after the block


async def test_a_large_response_reaches_a_slow_reader_whole() -> None:
    body = {"blob": "x" * (8 << 20)}  # more than the socket buffers hold: the rest waits for writability

    async def handler(_request: HttpRequest, out: Responder) -> None:
        out.send_json(body)

    server = await serve(handler, "127.0.0.1", 0)
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port, limit=1 << 16)
        writer.write(REQUEST)
        await asyncio.sleep(0.2)  # not reading yet
        assert json.loads(await _read_response(reader)) == body
        writer.close()
    finally:
        server.close()


async def test_pipelined_requests_are_answered_in_order_and_close_resets() -> None:
    async def handler(request: HttpRequest, out: Responder) -> None:
        await asyncio.sleep(0.01 if request.path == "/a" else 0)
        out.send_json(request.path)

    server = await serve(handler, "127.0.0.1", 0)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(REQUEST.replace(b"/x", b"/a") + REQUEST.replace(b"/x", b"/b"))
    answers = [json.loads(await _read_response(reader)) for _ in range(2)]
    assert answers == ["/a", "/b"]
    server.close()  # open connections are reset, not left hanging
    with pytest.raises((ConnectionResetError, asyncio.IncompleteReadError)):
        await reader.readexactly(1)
    writer.close()

"""A minimal HTTP/1.1 server on asyncio protocols for the fake OpenAI server: keep-alive, Content-Length
request bodies, chunked streaming responses, and the instant each request's first byte was read.

Why not aiohttp.web: at tens of thousands of chunks per second its per-write overhead made the fake
itself the bottleneck, and its handlers start after parsing, so the ground truth would hide the fake's
own queueing. Here a request is stamped in `data_received` and every chunk is one `transport.write`.
Parsing waits for a `call_soon`: when many requests arrive in one poll, each is stamped before any is
parsed, so a request's stamp does not include the fake's work on the others (at concurrency 64 that
work made the stamps up to 4 ms late, counted as client TTFT error; docs/benchmarks.md, issue 3).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, cast

__all__ = ["HttpRequest", "Responder", "serve"]

_MAX_HEADER_BYTES = 64 << 10
_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    429: "Too Many Requests",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


@dataclass
class HttpRequest:
    """One parsed request and the perf_counter_ns instant its first byte was read."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    received_ns: int

    def json(self) -> Any:
        return json.loads(self.body) if self.body else {}


class Responder:
    """Writes one response on the connection: whole (`send_json`) or streamed (`start_stream`, `chunk`, `end`)."""

    def __init__(self, transport: asyncio.Transport) -> None:
        self.transport = transport

    def send_json(self, payload: Any, status: int = 200) -> None:
        body = json.dumps(payload).encode()
        head = (
            f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: keep-alive\r\n\r\n"
        )
        self.transport.write(head.encode() + body)

    def start_stream(self, content_type: str = "text/event-stream") -> None:
        self.transport.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: %b\r\nCache-Control: no-cache\r\n"
            b"Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n" % content_type.encode("latin-1")
        )

    def chunk(self, data: bytes) -> None:
        self.transport.write(b"%x\r\n%b\r\n" % (len(data), data))

    def end(self) -> None:
        self.transport.write(b"0\r\n\r\n")

    def abort(self) -> None:
        self.transport.abort()

    @property
    def closed(self) -> bool:
        return self.transport.is_closing()


Handler = Callable[[HttpRequest, Responder], Awaitable[None]]


class _Connection(asyncio.Protocol):
    def __init__(self, handler: Handler, live: set[asyncio.Transport]) -> None:
        self._handler = handler
        self._live = live
        self._buffer = b""
        self._received_ns = 0
        self._transport: asyncio.Transport | None = None
        self._busy = False
        self._parse_pending = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's transports are not subclasses
        self._live.add(self._transport)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._transport is not None:
            self._live.discard(self._transport)

    def data_received(self, data: bytes) -> None:
        if not self._buffer:
            self._received_ns = time.perf_counter_ns()
        self._buffer += data
        if not self._parse_pending:  # parse after this poll's other sockets are stamped (module docstring)
            self._parse_pending = True
            asyncio.get_running_loop().call_soon(self._parse_soon)

    def _parse_soon(self) -> None:
        self._parse_pending = False
        if self._transport is not None and not self._transport.is_closing():
            self._next()

    def _next(self) -> None:
        if self._busy or self._transport is None:
            return
        request = self._parse()
        if request is not None:
            self._busy = True
            asyncio.get_running_loop().create_task(self._run(request))

    def _parse(self) -> HttpRequest | None:
        end = self._buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(self._buffer) > _MAX_HEADER_BYTES and self._transport is not None:
                self._transport.abort()
            return None
        lines = self._buffer[:end].decode("latin-1").split("\r\n")
        method, path, _ = ([*lines[0].split(" ", 2), "", ""])[:3]
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0") or 0)
        if len(self._buffer) < end + 4 + length:
            return None
        body = self._buffer[end + 4 : end + 4 + length]
        self._buffer = self._buffer[end + 4 + length :]
        request = HttpRequest(method, path.split("?", 1)[0], headers, body, self._received_ns)
        self._received_ns = time.perf_counter_ns() if self._buffer else 0
        return request

    async def _run(self, request: HttpRequest) -> None:
        assert self._transport is not None
        try:
            await self._handler(request, Responder(self._transport))
        except Exception as exc:  # a broken handler must show up in tests, not hang the client
            if not self._transport.is_closing():
                self._transport.abort()
            raise RuntimeError(f"fake server handler failed on {request.method} {request.path}") from exc
        finally:
            self._busy = False
        if self._buffer:
            self._next()


async def serve(handler: Handler, host: str, port: int, live: set[asyncio.Transport]) -> asyncio.Server:
    """Listen on host:port (0: any free port) and answer every request with `handler`; open
    connections are kept in `live` so that shutting down can abort them."""
    loop = asyncio.get_running_loop()
    return await loop.create_server(lambda: _Connection(handler, live), host, port, backlog=4096)

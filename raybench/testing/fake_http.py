"""A minimal HTTP/1.1 server on raw non-blocking sockets for the fake OpenAI server: keep-alive,
Content-Length request bodies, chunked streaming responses, and the instant each request reached the host.

Why not aiohttp.web: at tens of thousands of chunks per second its per-write overhead made the fake
itself the bottleneck, and its handlers start after parsing, so the ground truth would hide the fake's
own queueing. Why not asyncio transports either: they read with `recv`, so the earliest instant they
can give is when the fake's event loop got to the socket. At concurrency 64 the fake writes its chunks
in bursts (closed-loop streams stay phase-aligned) and a request arriving during a burst waited up to
about a millisecond for the loop, which the truth then left out and the client's TTFT error took in
(docs/benchmarks.md, issue 3). Here each socket is read with `recvmsg` and `SO_TIMESTAMPNS`: the kernel
stamps the segment when it reaches the receiving socket, before the fake's loop is involved, and that
stamp, moved onto `time.perf_counter_ns`'s clock, is the request's `received_ns`. Where the kernel gives
no stamp, `received_ns` falls back to the read instant (`received_source` says which).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import socket
import struct
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["HttpRequest", "HttpServer", "Responder", "serve"]

_MAX_HEADER_BYTES = 64 << 10
_READ_BYTES = 256 << 10
_SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # Linux value; the constant is missing from Python 3.11
_TIMESPEC = struct.Struct("@qq")
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
    """One parsed request. `received_ns` (perf_counter_ns clock): when its first byte reached the host
    (`received_source` "kernel") or, without a kernel stamp, when the fake read it ("read"); `read_ns`:
    when the fake's loop read it."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    received_ns: int
    read_ns: int = 0
    received_source: str = "read"

    def json(self) -> Any:
        return json.loads(self.body) if self.body else {}


class _RealtimeOffset:
    """CLOCK_REALTIME (the kernel's receive stamps) minus perf_counter_ns (CLOCK_MONOTONIC), re-measured
    every second: NTP slews both clocks alike, so the offset only moves when the wall clock is stepped."""

    def __init__(self) -> None:
        self._offset_ns = 0
        self._measured_ns = -(10**18)

    def monotonic(self, realtime_ns: int, now_ns: int) -> int:
        if now_ns - self._measured_ns > 1_000_000_000:
            best = None
            for _ in range(5):  # the narrowest bracket bounds the offset's error
                before = time.perf_counter_ns()
                wall = time.time_ns()
                after = time.perf_counter_ns()
                if best is None or after - before < best[0]:
                    best = (after - before, wall - (before + after) // 2)
            assert best is not None
            self._offset_ns, self._measured_ns = best[1], now_ns
        return realtime_ns - self._offset_ns


_OFFSET = _RealtimeOffset()


class Responder:
    """Writes one response on the connection: whole (`send_json`) or streamed (`start_stream`, `chunk`, `end`)."""

    def __init__(self, connection: _Connection) -> None:
        self._connection = connection

    def send_json(self, payload: Any, status: int = 200) -> None:
        body = json.dumps(payload).encode()
        head = (
            f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: keep-alive\r\n\r\n"
        )
        self._connection.write(head.encode() + body)

    def start_stream(self, content_type: str = "text/event-stream") -> None:
        self._connection.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: %b\r\nCache-Control: no-cache\r\n"
            b"Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n" % content_type.encode("latin-1")
        )

    def chunk(self, data: bytes) -> None:
        self._connection.write(b"%x\r\n%b\r\n" % (len(data), data))

    def end(self) -> None:
        self._connection.write(b"0\r\n\r\n")

    def abort(self) -> None:
        self._connection.abort()

    @property
    def closed(self) -> bool:
        return self._connection.closing


Handler = Callable[[HttpRequest, Responder], Awaitable[None]]


class _Connection:
    """One accepted socket: reads with recvmsg (kernel receive stamps), parses requests one at a time,
    and writes with `send`, buffering what the kernel does not take until the socket is writable."""

    def __init__(self, sock: socket.socket, handler: Handler, server: HttpServer) -> None:
        self._sock = sock
        self._fd = sock.fileno()
        self._handler = handler
        self._server = server
        self._loop = asyncio.get_running_loop()
        self._buffer = b""
        self._received = (0, 0, "read")  # (received_ns, read_ns, source) of the buffer's first byte
        self._last = (0, 0, "read")  # the same for the most recent read
        self._pending = bytearray()
        self._busy = False
        self._task: asyncio.Task[None] | None = None
        self.closing = False
        self._loop.add_reader(self._fd, self._on_readable)

    def _on_readable(self) -> None:
        try:
            data, ancillary, _flags, _address = self._sock.recvmsg(_READ_BYTES, 64)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self.abort()
            return
        read_ns = time.perf_counter_ns()
        if not data:  # the client closed its side
            self.abort()
            return
        self._last = (read_ns, read_ns, "read")
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == _SO_TIMESTAMPNS and len(payload) >= _TIMESPEC.size:
                seconds, nanos = _TIMESPEC.unpack_from(payload)
                stamp = _OFFSET.monotonic(seconds * 1_000_000_000 + nanos, read_ns)
                self._last = (min(stamp, read_ns), read_ns, "kernel")
        if not self._buffer:
            self._received = self._last
        self._buffer += data
        self._next()

    def _next(self) -> None:
        if self._busy or self.closing:
            return
        request = self._parse()
        if request is not None:
            self._busy = True
            self._task = self._loop.create_task(self._run(request))  # held: the loop keeps only weak references

    def _parse(self) -> HttpRequest | None:
        end = self._buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(self._buffer) > _MAX_HEADER_BYTES:
                self.abort()
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
        received_ns, read_ns, source = self._received
        self._received = self._last  # a pipelined request behind this one: the latest read is its best stamp
        return HttpRequest(method, path.split("?", 1)[0], headers, body, received_ns, read_ns, source)

    async def _run(self, request: HttpRequest) -> None:
        try:
            await self._handler(request, Responder(self))
        except Exception as exc:  # a broken handler must show up in tests, not hang the client
            self.abort()
            raise RuntimeError(f"fake server handler failed on {request.method} {request.path}") from exc
        finally:
            self._busy = False
        if self._buffer:
            self._next()

    def write(self, data: bytes) -> None:
        if self.closing:
            return
        if not self._pending:
            try:
                sent = self._sock.send(data)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError:
                self.abort()
                return
            if sent == len(data):
                return
            data = data[sent:]
            self._loop.add_writer(self._fd, self._on_writable)
        self._pending += data

    def _on_writable(self) -> None:
        try:
            sent = self._sock.send(self._pending)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self.abort()
            return
        del self._pending[:sent]
        if not self._pending:
            self._loop.remove_writer(self._fd)

    def abort(self) -> None:
        """Close at once with a reset (SO_LINGER 0), dropping unsent data, as a crashed server would."""
        if self.closing:
            return
        self.closing = True
        self._loop.remove_reader(self._fd)
        if self._pending:
            self._loop.remove_writer(self._fd)
            self._pending.clear()
        with contextlib.suppress(OSError):
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self._sock.close()
        self._server.connections.discard(self)


class HttpServer:
    """A listening socket on the running loop; `close()` stops accepting and resets every open connection."""

    def __init__(self, handler: Handler, sock: socket.socket) -> None:
        self._handler = handler
        self._sock = sock
        self._loop = asyncio.get_running_loop()
        self.port = int(sock.getsockname()[1])
        self.connections: set[_Connection] = set()
        self._loop.add_reader(sock.fileno(), self._on_accept)

    def _on_accept(self) -> None:
        for _ in range(64):  # a bounded batch per poll, so a connection storm cannot starve the streams
            try:
                conn, _address = self._sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    return  # out of descriptors: the client sees a refused/slow connect, the fake stays up
                raise
            conn.setblocking(False)
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            _stamp_receives(conn)
            self.connections.add(_Connection(conn, self._handler, self))

    def close(self) -> None:
        self._loop.remove_reader(self._sock.fileno())
        self._sock.close()
        for connection in list(self.connections):
            connection.abort()


def _stamp_receives(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # not Linux: `received_ns` falls back to the read instant
        sock.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)


async def serve(handler: Handler, host: str, port: int) -> HttpServer:
    """Listen on host:port (0: any free port) and answer every request with `handler`."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        _stamp_receives(sock)  # turns the kernel's receive stamping on before the first connection
        sock.bind((host, port))
        sock.listen(4096)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return HttpServer(handler, sock)

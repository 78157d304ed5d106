"""The lean transport's connection pool and request sender: keep-alive connections per host, one request in
flight on each, opened as the load needs them (or warmed before a step), requests prebuilt and written whole."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine
from typing import Any
from urllib.parse import urlsplit

from raybench.loadgen.endpoint import Endpoint
from raybench.loadgen.events import RequestOutcome, finish_outcome
from raybench.loadgen.wire import WireConnection

__all__ = ["WirePool", "begin_wire", "send_wire"]

_clock = time.perf_counter_ns
_Key = tuple[str, int]


class _Target:
    """A request URL split once: where to connect and the request head up to its Content-Length value."""

    __slots__ = ("head", "key")

    def __init__(self, url: str, api_key: str | None) -> None:
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"the lean client sends to http:// URLs only, got {url!r}")
        port = parts.port or 80
        self.key: _Key = (parts.hostname, port)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        auth = f"Authorization: Bearer {api_key}\r\n" if api_key else ""
        self.head = (
            f"POST {path} HTTP/1.1\r\nHost: {parts.netloc}\r\nUser-Agent: raybench\r\n"
            f"Accept: text/event-stream\r\nContent-Type: application/json\r\n{auth}Content-Length: "
        ).encode("latin-1")

    def request(self, body: bytes) -> bytes:
        return b"%b%d\r\n\r\n%b" % (self.head, len(body), body)


class WirePool:
    """Idle keep-alive connections per (host, port); a request takes one or opens a new one (no limit:
    the load decides how many are in flight), and a connection whose answer has ended comes back."""

    def __init__(self) -> None:
        self._idle: dict[_Key, list[WireConnection]] = {}
        self._open: set[WireConnection] = set()
        self._targets: dict[tuple[str, str | None], _Target] = {}
        self.opened = 0  # connections opened so far (reuse shows as few opens for many requests)

    def target(self, url: str, api_key: str | None) -> _Target:
        target = self._targets.get((url, api_key))
        if target is None:
            target = self._targets[(url, api_key)] = _Target(url, api_key)
        return target

    def take(self, key: _Key) -> WireConnection | None:
        """An idle, open connection to `key`, or None."""
        idle = self._idle.get(key)
        while idle:
            conn = idle.pop()
            if conn.usable:
                return conn
        return None

    async def connect(self, key: _Key) -> WireConnection:
        loop = asyncio.get_running_loop()
        _, conn = await loop.create_connection(lambda: WireConnection(lambda c: self._release(key, c)), *key)
        self.opened += 1
        if self.opened % 256 == 0:  # forget closed ones now and then; they are never handed out
            self._open = {c for c in self._open if not c.closed}
        self._open.add(conn)
        return conn

    def _release(self, key: _Key, conn: WireConnection) -> None:
        self._idle.setdefault(key, []).append(conn)

    async def warm(self, url: str, connections: int) -> None:
        """Have `connections` idle connections to `url`'s host open before the timed requests."""
        key = self.target(url, None).key
        have = sum(1 for c in self._idle.get(key, []) if c.usable)
        opened = await asyncio.gather(*(self.connect(key) for _ in range(connections - have)), return_exceptions=True)
        for conn in opened:
            if isinstance(conn, WireConnection):
                self._release(key, conn)

    def idle_count(self) -> int:
        return sum(1 for conns in self._idle.values() for c in conns if c.usable)

    def close(self) -> None:
        for conn in self._open:
            if conn.transport is not None and not conn.closed:
                conn.transport.close()
        self._open.clear()
        self._idle.clear()


async def send_wire(pool: WirePool, endpoint: Endpoint, url: str, body: bytes, timeout_s: float) -> RequestOutcome:
    """Send `body` to `url` on an idle (or new) connection and read the stream to its end; every failure
    becomes a status, never raises (cancellation re-raises after marking the record)."""
    started = begin_wire(pool, endpoint, url, body, timeout_s)
    if started is not None:
        return await started
    out = RequestOutcome(continuous_usage=endpoint.continuous_usage_stats)
    target = pool.target(url, endpoint.api_key)
    start = _clock()
    conn = await _connect(pool, target, out, timeout_s)
    if conn is None:
        return out
    timeout_s -= (_clock() - start) / 1e9  # the timeout covers the connection set-up too
    return await _exchange(conn, out, conn.send(out, target.request(body), max(timeout_s, 0.0)))


def begin_wire(
    pool: WirePool, endpoint: Endpoint, url: str, body: bytes, timeout_s: float
) -> Coroutine[Any, Any, RequestOutcome] | None:
    """When an idle connection is at hand: write the request now (synchronously, so an open-loop send goes
    out from the timer callback itself) and return the coroutine that waits for its record; else None."""
    target = pool.target(url, endpoint.api_key)
    conn = pool.take(target.key)
    if conn is None:
        return None
    out = RequestOutcome(continuous_usage=endpoint.continuous_usage_stats)
    return _exchange(conn, out, conn.send(out, target.request(body), timeout_s))


async def _exchange(conn: WireConnection, out: RequestOutcome, waiter: asyncio.Future[None]) -> RequestOutcome:
    try:
        await waiter
    except asyncio.CancelledError:
        out.fail("cancelled", "cancelled", "request cancelled before its stream ended")
        conn.abandon()
        out.done_ns = _clock()
        raise
    finish_outcome(out)
    return out


async def _connect(pool: WirePool, target: _Target, out: RequestOutcome, timeout_s: float) -> WireConnection | None:
    """A new connection, or None with `out` completed as a failure (connection refused, timeout)."""
    start = _clock()
    try:
        return await asyncio.wait_for(pool.connect(target.key), timeout_s)
    except asyncio.TimeoutError:
        out.fail("timeout", "timeout", f"no connection within {timeout_s:g} s")
    except OSError as exc:
        out.fail("disconnect", type(exc).__name__, str(exc) or "connection failed")
        out.connect_failed = True
    except asyncio.CancelledError:
        out.fail("cancelled", "cancelled", "request cancelled before it was sent")
        out.sent_ns = start
        out.done_ns = _clock()
        raise
    out.sent_ns = start
    out.done_ns = _clock()
    finish_outcome(out)
    return None

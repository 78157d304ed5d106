"""The lean HTTP/1.1 streaming transport: an asyncio Protocol per connection that parses the response and
times every SSE event in `data_received`, on arrival, before any event-loop hop.

Why not aiohttp on the hot path: its read path (protocol, payload parser, StreamReader, a task wake-up
per read) costs 20-28 us of CPU per chunk, so under bursts a stream's first chunk waits behind the other
streams' chunks; the TTFT error it adds was measured in docs/benchmarks.md (issue 3). Here a chunk costs
one `data_received` call: framing, SSE decoding and the record update run in it, stamped with the
instant the bytes were handed over. One request is in flight per connection; the request goes out in
one `transport.write` (prebuilt head and body). Plain http:// only: https endpoints use aiohttp.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import cast

from raybench.loadgen.events import RequestOutcome, apply_event, not_event_stream
from raybench.loadgen.sse import SSEDecoder

__all__ = ["WireConnection", "WireError"]

_clock = time.perf_counter_ns

_MAX_HEAD_BYTES = 64 << 10
_MAX_ERROR_BODY = 8 << 10  # of a non-200 answer, enough for the record's message excerpt
_MAX_CHUNK_LINE = 4 << 10

# parser states
_IDLE, _HEAD, _CHUNK_SIZE, _CHUNK_DATA, _CHUNK_END, _TRAILERS, _LENGTH, _UNTIL_CLOSE = range(8)


class WireError(Exception):
    """A response that is not legal HTTP/1.1 (becomes a `protocol_error` record)."""


class _Exchange:
    """One request on a connection: its record, SSE decoder, completion future and deadline."""

    __slots__ = ("decoder", "done", "error_body", "not_sse", "out", "stream_over", "timer", "waiter")

    def __init__(self, out: RequestOutcome, waiter: asyncio.Future[None]) -> None:
        self.out = out
        self.waiter = waiter
        self.decoder = SSEDecoder()
        self.timer: asyncio.TimerHandle | None = None
        self.error_body: bytearray | None = None  # set for a non-200 answer: its body is collected
        self.not_sse: tuple[str, str] | None = None  # a 200 answer that is not SSE: (error type, media type)
        self.stream_over = False  # the record is final ([DONE], a failure): later body bytes are framing only
        self.done = False


class WireConnection(asyncio.Protocol):
    """One keep-alive connection; `send` starts an exchange, `data_received` runs it to its end."""

    def __init__(self, on_idle: Callable[[WireConnection], None]) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self._on_idle = on_idle
        self._ex: _Exchange | None = None
        self._buffer = b""
        self._state = _IDLE
        self._remaining = 0
        self._keep_alive = True
        self._pending: list[tuple[int, bytes]] | None = None  # (arrival ns, bytes) not parsed yet

    @property
    def usable(self) -> bool:
        """Open, and no exchange on it (not even one whose body is still draining)."""
        return not self.closed and self._state == _IDLE and self.transport is not None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's transports are not subclasses

    def send(self, out: RequestOutcome, request: bytes, timeout_s: float) -> asyncio.Future[None]:
        """Write `request` (one write; `out.sent_ns` is the instant it is handed to the socket) and
        return the future that resolves when `out` is final."""
        assert self.transport is not None and self._state == _IDLE
        loop = asyncio.get_running_loop()
        ex = _Exchange(out, loop.create_future())
        ex.timer = loop.call_later(timeout_s, self._on_timeout, timeout_s)
        self._ex = ex
        self._state = _HEAD
        self._keep_alive = True
        out.sent_ns = _clock()
        self.transport.write(request)
        return ex.waiter

    def abandon(self) -> None:
        """The caller stopped waiting (cancelled): the connection is mid-response, so it is closed."""
        if self._ex is not None:
            self._complete(self._ex, _clock())
        self._abort()

    def data_received(self, data: bytes) -> None:
        """Stamp the arrival now; parse once this poll's other sockets are stamped too. A burst of first
        chunks for many streams arrives in one poll: parsed inline, the k-th would be stamped after k-1
        parses (the queueing this module exists to remove); deferred, each keeps its own arrival instant."""
        if self._pending is None:
            self._pending = [(_clock(), data)]
            asyncio.get_running_loop().call_soon(self._drain)
        else:
            self._pending.append((_clock(), data))

    def _drain(self) -> None:
        pending, self._pending = self._pending, None
        for now, data in pending or ():
            if self.closed:
                return  # closed by this side (a failure, a timeout): the rest is not read
            self._received(data, now)

    def _received(self, data: bytes, now: int) -> None:
        ex = self._ex
        if ex is None:  # bytes nobody asked for: the connection cannot be trusted any more
            self._abort()
            return
        buffer = self._buffer + data if self._buffer else data
        try:
            self._buffer = self._parse(buffer, now)
        except (WireError, ValueError) as exc:
            ex.out.fail("protocol_error", "http_protocol", str(exc))
            self._end_stream(ex, now)
            self._abort()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._pending:
            self._drain()  # what arrived before the close counts
        self.closed = True
        ex = self._ex
        if ex is None or ex.done:
            return
        now = _clock()
        if self._state == _UNTIL_CLOSE and exc is None:
            self._body_end(ex, now)
            return
        if not ex.stream_over:
            name = type(exc).__name__ if exc is not None else "ServerDisconnectedError"
            ex.out.fail("disconnect", name, str(exc or "") or "connection closed before the answer ended")
        self._complete(ex, now)

    def eof_received(self) -> bool | None:
        return False  # close our side too: connection_lost follows

    def _on_timeout(self, timeout_s: float) -> None:
        if self._pending:
            self._drain()
        ex = self._ex
        if ex is not None and not ex.done:
            ex.out.fail("timeout", "timeout", f"no complete answer within {timeout_s:g} s")
            self._complete(ex, _clock())
            self._abort()

    def _abort(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    # -- parsing -------------------------------------------------------------------------------------

    def _parse(self, buf: bytes, now: int) -> bytes:
        """Consume what `buf` completes; return the unconsumed rest."""
        pos = 0
        while pos < len(buf) and not self.closed:
            state = self._state
            if state in (_CHUNK_DATA, _LENGTH):
                take = min(self._remaining, len(buf) - pos)
                self._body(buf[pos : pos + take] if pos or take < len(buf) else buf, now)
                pos += take
                self._remaining -= take
                if self._remaining:
                    return b""
                if state == _LENGTH:
                    self._finish_body(now)
                    return self._leftover(buf, pos)
                self._state = _CHUNK_END
            elif state == _UNTIL_CLOSE:
                self._body(buf[pos:] if pos else buf, now)
                return b""
            elif state == _IDLE:
                raise WireError(f"{len(buf) - pos} bytes after the end of the answer")
            else:
                end = self._line_state(state, buf, pos, now)
                if end < 0:
                    return buf[pos:]
                pos = end
                if self._state == _IDLE:
                    return self._leftover(buf, pos)
        return b""

    def _line_state(self, state: int, buf: bytes, pos: int, now: int) -> int:
        """The head, a chunk-size line, a chunk's closing CRLF or a trailer line: the position after it,
        or -1 when `buf` does not hold it whole yet."""
        if state == _HEAD:
            return self._head(buf, pos, now)
        end = buf.find(b"\n", pos)
        if end < 0:
            if len(buf) - pos > _MAX_CHUNK_LINE:
                raise WireError("chunk-size line too long")
            return -1
        line = buf[pos:end]
        if line.endswith(b"\r"):
            line = line[:-1]
        if state == _CHUNK_END:
            if line:
                raise WireError(f"chunk not followed by CRLF: {line[:40]!r}")
            self._state = _CHUNK_SIZE
        elif state == _CHUNK_SIZE:
            size = int(line.split(b";", 1)[0].strip(), 16)  # chunk extensions are ignored
            if size < 0:
                raise WireError(f"negative chunk size {line[:40]!r}")
            self._remaining = size
            self._state = _CHUNK_DATA if size else _TRAILERS
        elif not line:  # _TRAILERS: a blank line ends them and the body
            self._finish_body(now)
        return end + 1

    def _head(self, buf: bytes, pos: int, now: int) -> int:
        end = buf.find(b"\r\n\r\n", pos)
        sep = 4
        if end < 0:
            end, sep = buf.find(b"\n\n", pos), 2  # tolerate bare-LF heads
            if end < 0:
                if len(buf) - pos > _MAX_HEAD_BYTES:
                    raise WireError("response head over 64 KiB")
                return -1
        status, headers = parse_head(buf[pos:end])
        if 100 <= status < 200:  # interim answer (100 Continue, 103 Early Hints): the real one follows
            return end + sep
        ex = self._ex
        assert ex is not None
        ex.out.http_status = status
        if status != 200:
            ex.error_body = bytearray()
        elif kind := not_event_stream(headers.get("content-type")):
            ex.not_sse = (kind, headers["content-type"].split(";", 1)[0].strip())
        self._body_mode(headers, now)
        return end + sep

    def _body_mode(self, headers: dict[str, str], now: int) -> None:
        connection = headers.get("connection", "").lower()
        version = headers.get(":version", "HTTP/1.1")
        self._keep_alive = "close" not in connection and (version != "HTTP/1.0" or "keep-alive" in connection)
        encoding = headers.get("transfer-encoding", "").lower()
        if encoding:
            if encoding.rsplit(",", 1)[-1].strip() != "chunked":
                raise WireError(f"unsupported transfer-encoding {encoding!r}")
            self._state = _CHUNK_SIZE
        elif "content-length" in headers:
            self._remaining = int(headers["content-length"])
            if self._remaining < 0:
                raise WireError("negative content-length")
            self._state = _LENGTH
            if self._remaining == 0:
                self._finish_body(now)
        else:
            self._keep_alive = False
            self._state = _UNTIL_CLOSE

    def _leftover(self, buf: bytes, pos: int) -> bytes:
        if pos < len(buf):
            raise WireError(f"{len(buf) - pos} bytes after the end of the answer")
        return b""

    # -- the body ------------------------------------------------------------------------------------

    def _body(self, piece: bytes, now: int) -> None:
        ex = self._ex
        if ex is None or ex.stream_over or not piece:
            return
        if ex.error_body is not None:
            if len(ex.error_body) < _MAX_ERROR_BODY:
                ex.error_body += piece[: _MAX_ERROR_BODY - len(ex.error_body)]
            return
        out = ex.out
        if ex.not_sse is not None:  # as the aiohttp path: fail on the first bytes, quoting them
            self._not_sse(ex, piece, now)
            return
        for event in ex.decoder.feed(piece):
            if not apply_event(event, now, out):
                self._end_stream(ex, now)
                if out.status != "ok":  # a failed stream is not drained: its connection is closed
                    self._abort()
                return

    def _not_sse(self, ex: _Exchange, head: bytes, now: int) -> None:
        assert ex.not_sse is not None
        kind, media = ex.not_sse
        text = head[:200].decode("utf-8", errors="replace")
        ex.out.fail("protocol_error", kind, f"{media} answer, not SSE: {text!r}")
        self._end_stream(ex, now)
        self._abort()

    def _finish_body(self, now: int) -> None:
        ex = self._ex
        self._state = _IDLE
        if ex is not None:
            self._body_end(ex, now)

    def _body_end(self, ex: _Exchange, now: int) -> None:
        """The whole answer has arrived: the record is completed and the connection released."""
        self._state = _IDLE
        self._ex = None
        out = ex.out
        if ex.error_body is not None:
            text = bytes(ex.error_body).decode("utf-8", errors="replace")
            out.fail("http_error", f"http_{out.http_status}", text)
        elif ex.not_sse is not None and not ex.stream_over:  # an empty body
            self._not_sse(ex, b"", now)
            return
        elif not ex.stream_over:
            for event in ex.decoder.close():
                if not apply_event(event, now, out):
                    break
            if not (out.saw_done or out.saw_finish):
                out.fail("disconnect", "stream_incomplete", "stream ended before [DONE] or a finish_reason")
        self._end_stream(ex, now)
        if self._keep_alive and not self.closed:
            self._on_idle(self)
        else:
            self._abort()

    def _end_stream(self, ex: _Exchange, now: int) -> None:
        """The record is final (the body may still be draining)."""
        if not ex.stream_over:
            ex.stream_over = True
            ex.out.done_ns = now
        self._complete(ex, now)

    def _complete(self, ex: _Exchange, now: int) -> None:
        if ex.done:
            return
        ex.done = True
        ex.stream_over = True
        if not ex.out.done_ns:
            ex.out.done_ns = now
        if ex.timer is not None:
            ex.timer.cancel()
        if not ex.waiter.done():
            ex.waiter.set_result(None)


def parse_head(head: bytes) -> tuple[int, dict[str, str]]:
    """Status code and headers (names lower-cased, folded lines joined, repeats comma-joined) of a
    response head without its blank line; the HTTP version is under the pseudo-name ':version'."""
    lines = head.decode("latin-1").split("\n")
    parts = lines[0].rstrip("\r").split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise WireError(f"not an HTTP status line: {lines[0][:80]!r}")
    headers: dict[str, str] = {":version": parts[0]}
    name = ""
    for raw in lines[1:]:
        line = raw.rstrip("\r")
        if not line:
            continue
        if line[0] in " \t":  # obsolete line folding: a continuation of the previous header
            if name:
                headers[name] = f"{headers[name]} {line.strip()}".strip()
            continue
        key, sep, value = line.partition(":")
        if not sep:
            raise WireError(f"malformed header line {line[:80]!r}")
        name = key.strip().lower()
        value = value.strip()
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return int(parts[1]), headers

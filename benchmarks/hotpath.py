"""Per-chunk CPU cost of the client's hot path (SSE decode + event handling), without network or server.

    python benchmarks/hotpath.py

Feeds a recorded completions stream (one token per event, as vLLM sends) through
raybench.loadgen.client.read_events (the aiohttp path's decoding, without aiohttp's own read path), and
through the lean client's protocol (raybench.loadgen.wire: HTTP chunk framing, SSE, record; everything
but the socket read), one read per event, and prints microseconds per event.
Deterministic apart from CPU speed: use it to measure before/after each hot-path optimisation.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Coroutine
from typing import Any

from raybench.loadgen.client import RequestOutcome, read_events
from raybench.loadgen.loop_thread import new_event_loop
from raybench.loadgen.wire import WireConnection
from raybench.testing.fake_stream import ChunkEncoder

EVENTS = 128
STREAMS = 400


def _stream(chat: bool) -> list[bytes]:
    enc = ChunkEncoder("fake-model", chat, continuous_usage=False)
    reads = [enc.role_chunk()] if chat else []
    reads += [enc.token_chunk(1, i == EVENTS - 1, i + 1, 128) for i in range(EVENTS)]
    return [*reads, enc.usage_chunk(128, EVENTS), b"data: [DONE]\n\n"]


async def _reads(pieces: list[bytes]) -> AsyncIterator[bytes]:
    for piece in pieces:
        yield piece


async def _run(pieces: list[bytes]) -> float:
    start = time.process_time()
    for _ in range(STREAMS):
        out = RequestOutcome()
        await read_events(_reads(pieces), out)
        assert out.status == "ok" and len(out.chunk_ns) == EVENTS
    return (time.process_time() - start) / (STREAMS * len(pieces)) * 1e6


class _Sink:
    """A transport that takes the request write and nothing else."""

    def write(self, _data: bytes) -> None:
        pass

    def is_closing(self) -> bool:
        return False


async def _run_wire(pieces: list[bytes]) -> float:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    reads = [head] + [b"%x\r\n%b\r\n" % (len(p), p) for p in pieces] + [b"0\r\n\r\n"]
    idle: list[WireConnection] = []
    conn = WireConnection(idle.append)
    conn.connection_made(_Sink())  # type: ignore[arg-type]
    start = time.process_time()
    for _ in range(STREAMS):
        out = RequestOutcome()
        waiter = conn.send(out, b"", 60.0)
        for read in reads:
            conn.data_received(read)
            await asyncio.sleep(0)  # one parse per read, as on a live loop
        await waiter
        assert out.status == "ok" and len(out.chunk_ns) == EVENTS and idle.pop() is conn
    return (time.process_time() - start) / (STREAMS * len(pieces)) * 1e6


def _on_uvloop(coro: Coroutine[Any, Any, float]) -> float:
    loop = new_event_loop()  # the generator's loop: uvloop
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()


def main() -> None:
    for chat in (False, True):
        best = min(asyncio.run(_run(_stream(chat))) for _ in range(5))
        wire = min(_on_uvloop(_run_wire(_stream(chat))) for _ in range(5))
        name = "chat" if chat else "completions"
        print(f"{name}: read_events {best:.2f} us, lean protocol {wire:.2f} us CPU per event (best of 5)")


if __name__ == "__main__":
    main()

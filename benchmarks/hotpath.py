"""Per-chunk CPU cost of the client's hot path (SSE decode + event handling), without network or server.

    python benchmarks/hotpath.py

Feeds a recorded completions stream (one token per event, as vLLM sends) through
raybench.loadgen.client.read_events, one read per event, and prints microseconds per event.
Deterministic apart from CPU speed: use it to measure before/after each hot-path optimisation.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

from raybench.loadgen.client import RequestOutcome, read_events
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


def main() -> None:
    for chat in (False, True):
        best = min(asyncio.run(_run(_stream(chat))) for _ in range(5))
        print(f"{'chat' if chat else 'completions'}: {best:.2f} us CPU per event (best of 5)")


if __name__ == "__main__":
    main()

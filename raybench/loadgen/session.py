"""The generator's HTTP session: an unbounded keep-alive pool, big read buffers, pre-warmed connections."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace

import aiohttp

from raybench.loadgen.endpoint import Endpoint

__all__ = ["new_session", "warm_connections"]

READ_BUFSIZE = 1 << 20  # long SSE events (big usage or logprobs payloads) never hit a line limit


def new_session() -> aiohttp.ClientSession:
    """No pool limit (the load sets how many connections), no total timeout (each request sets its own),
    and `sent_ns` stamped when the request body is handed to the socket (see `sent_trace`)."""
    connector = aiohttp.TCPConnector(limit=0, limit_per_host=0, keepalive_timeout=60)
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=30)
    return aiohttp.ClientSession(
        connector=connector, timeout=timeout, read_bufsize=READ_BUFSIZE, trace_configs=[sent_trace()]
    )


def sent_trace() -> aiohttp.TraceConfig:
    """Re-stamps a request's `sent_ns` (its trace_request_ctx) when its body chunk goes to the socket.

    Without it `sent_ns` is the instant the client began the request: connection set-up and request
    building would then count as server latency (TTFT), when they are the client's own queue time.
    """
    trace = aiohttp.TraceConfig()
    trace.on_request_chunk_sent.append(_stamp_sent)
    return trace


async def _stamp_sent(
    _session: aiohttp.ClientSession, context: SimpleNamespace, _params: aiohttp.TraceRequestChunkSentParams
) -> None:
    outcome = context.trace_request_ctx
    if outcome is not None:
        outcome.sent_ns = time.perf_counter_ns()


async def warm_connections(session: aiohttp.ClientSession, endpoint: Endpoint, connections: int) -> None:
    """Open `connections` keep-alive connections (round-robin over base URLs) before any timed request."""
    await asyncio.gather(*(_warm(session, endpoint, i) for i in range(connections)))


async def _warm(session: aiohttp.ClientSession, endpoint: Endpoint, index: int) -> None:
    base = endpoint.base_urls[index % len(endpoint.base_urls)]
    try:
        async with session.get(base + "/v1/models") as response:
            await response.read()
    except aiohttp.ClientError:
        pass  # a failing endpoint shows up as failed records, where it is counted

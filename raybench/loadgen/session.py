"""The generator's HTTP session: the lean keep-alive pool for http:// (wire.py), aiohttp for https:// or on
request, big read buffers, pre-warmed connections, and which client was used (recorded per step)."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import Literal, TypeAlias

import aiohttp

from raybench.loadgen.endpoint import Endpoint
from raybench.loadgen.wire_pool import WirePool

__all__ = ["CLIENTS", "ClientChoice", "HttpSession", "StreamSession", "new_session", "warm_connections"]

READ_BUFSIZE = 1 << 20  # long SSE events (big usage or logprobs payloads) never hit a line limit

ClientChoice = Literal["auto", "lean", "aiohttp"]
CLIENTS: tuple[str, ...] = ("auto", "lean", "aiohttp")


class StreamSession:
    """What the runners send through. `auto`: the lean client for http:// URLs, aiohttp for https://;
    `lean`: the lean client only (https:// refused); `aiohttp`: aiohttp for every URL (the A/B baseline)."""

    def __init__(self, client: str = "auto") -> None:
        if client not in CLIENTS:
            raise ValueError(f"unknown client {client!r}; use one of {', '.join(CLIENTS)}")
        self.client = client
        self.pool = WirePool()
        self._aiohttp: aiohttp.ClientSession | None = None

    def lean_for(self, url: str) -> bool:
        """Whether a request to `url` goes through the lean client."""
        if self.client == "aiohttp":
            return False
        if url.startswith("http://"):
            return True
        if self.client == "lean":
            raise ValueError(f"client 'lean' sends to http:// only, not {url!r}; set the client to auto or aiohttp")
        return False

    def impl_for(self, endpoint: Endpoint) -> str:
        """The client the endpoint's requests use: `lean`, `aiohttp`, or `lean+aiohttp` (mixed schemes)."""
        used = {"lean" if self.lean_for(base) else "aiohttp" for base in endpoint.base_urls}
        return "+".join(sorted(used, key=("lean", "aiohttp").index))

    def aiohttp_session(self) -> aiohttp.ClientSession:
        if self._aiohttp is None:
            self._aiohttp = _new_aiohttp_session()
        return self._aiohttp

    async def close(self) -> None:
        self.pool.close()
        if self._aiohttp is not None:
            await self._aiohttp.close()
            self._aiohttp = None


HttpSession: TypeAlias = aiohttp.ClientSession | StreamSession


def new_session(client: str = "auto") -> StreamSession:
    """A session for one generator; see StreamSession for the `client` choice."""
    return StreamSession(client)


def _new_aiohttp_session() -> aiohttp.ClientSession:
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


async def warm_connections(session: HttpSession, endpoint: Endpoint, connections: int) -> None:
    """Open `connections` keep-alive connections (round-robin over base URLs) before any timed request."""
    bases = endpoint.base_urls
    indices = list(range(connections))
    if isinstance(session, StreamSession):
        lean = {b for b in bases if session.lean_for(b)}
        shares = [len(range(i, connections, len(bases))) for i in range(len(bases))]
        await asyncio.gather(*(session.pool.warm(b + "/", n) for b, n in zip(bases, shares) if b in lean))
        indices = [i for i in indices if bases[i % len(bases)] not in lean]  # the https:// ones
        if not indices:
            return
        session = session.aiohttp_session()
    await asyncio.gather(*(_warm(session, endpoint, i) for i in indices))


async def _warm(session: aiohttp.ClientSession, endpoint: Endpoint, index: int) -> None:
    base = endpoint.base_urls[index % len(endpoint.base_urls)]
    try:
        async with session.get(base + "/v1/models") as response:
            await response.read()
    except aiohttp.ClientError:
        pass  # a failing endpoint shows up as failed records, where it is counted

"""OpenAI streaming client: sends one request, times every token-bearing SSE event, returns a record.

`send_streaming` takes the lean transport (wire.py) for a StreamSession's http:// URLs and aiohttp
otherwise (https://, `client: aiohttp`, or a plain aiohttp.ClientSession); both fill the same record
through events.py.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine
from typing import Any

import aiohttp
import orjson

from raybench.loadgen.endpoint import Endpoint
from raybench.loadgen.events import RequestOutcome, finish_outcome, not_event_stream, read_events
from raybench.loadgen.session import HttpSession, StreamSession
from raybench.loadgen.wire_pool import begin_wire, send_wire

__all__ = [
    "RequestOutcome",
    "begin_streaming",
    "build_payload",
    "encode_body",
    "not_event_stream",
    "read_events",
    "send_streaming",
]

_clock = time.perf_counter_ns
_finish = finish_outcome  # the name tests and older callers import


def encode_body(body: dict[str, Any]) -> bytes:
    """The request body as JSON bytes; open-loop sends encode it before the send instant."""
    return orjson.dumps(body)


def build_payload(endpoint: Endpoint, prompt: str, max_tokens: int) -> dict[str, Any]:
    """The JSON body: streaming, usage requested, output length pinned to `max_tokens`."""
    options: dict[str, Any] = {"include_usage": True}
    if endpoint.continuous_usage_stats:
        options["continuous_usage_stats"] = True
    body: dict[str, Any] = {
        "model": endpoint.model,
        "max_tokens": max_tokens,
        "stream": True,
        "stream_options": options,
    }
    if endpoint.api == "chat":
        body["messages"] = [{"role": "user", "content": prompt}]
    else:
        body["prompt"] = prompt
    if endpoint.supports_ignore_eos:
        body["ignore_eos"] = True
        body["min_tokens"] = max_tokens
    return body


async def send_streaming(
    session: HttpSession,
    endpoint: Endpoint,
    url: str,
    body: dict[str, Any] | bytes,
    timeout_s: float,
) -> RequestOutcome:
    """Send `body` (a payload, or one already encoded by `encode_body`) to `url` and read the stream
    to its end; every failure becomes a status, never raises."""
    data = body if isinstance(body, bytes) else encode_body(body)
    if isinstance(session, StreamSession):
        if session.lean_for(url):
            return await send_wire(session.pool, endpoint, url, data, timeout_s)
        session = session.aiohttp_session()
    return await _send_aiohttp(session, endpoint, url, data, timeout_s)


def begin_streaming(
    session: HttpSession, endpoint: Endpoint, url: str, body: bytes, timeout_s: float
) -> Coroutine[Any, Any, RequestOutcome] | None:
    """Send now, without waiting, when that is possible (the lean client with an idle connection): the
    request is written before this returns and the coroutine waits for its record. None otherwise
    (then use `send_streaming`)."""
    if isinstance(session, StreamSession) and session.lean_for(url):
        return begin_wire(session.pool, endpoint, url, body, timeout_s)
    return None


async def _send_aiohttp(
    session: aiohttp.ClientSession, endpoint: Endpoint, url: str, data: bytes, timeout_s: float
) -> RequestOutcome:
    out = RequestOutcome(continuous_usage=endpoint.continuous_usage_stats)
    headers = {"Content-Type": "application/json"}
    if endpoint.api_key:
        headers["Authorization"] = f"Bearer {endpoint.api_key}"
    try:
        out.sent_ns = _clock()
        timeout = aiohttp.ClientTimeout(total=timeout_s)  # covers the whole stream, not just headers
        async with session.post(url, data=data, headers=headers, timeout=timeout, trace_request_ctx=out) as response:
            out.http_status = response.status
            if response.status != 200:
                text = await response.text(errors="replace")
                out.fail("http_error", f"http_{response.status}", text)
            elif not_stream := not_event_stream(response.headers.get("Content-Type")):
                head = (await response.content.read(200)).decode("utf-8", errors="replace")
                out.fail("protocol_error", not_stream, f"{response.content_type} answer, not SSE: {head!r}")
            else:
                await _read_stream(response, out)
    except asyncio.TimeoutError:
        out.fail("timeout", "timeout", f"no complete answer within {timeout_s:g} s")
    except asyncio.CancelledError:
        out.fail("cancelled", "cancelled", "request cancelled before its stream ended")
        out.done_ns = _clock()
        raise
    except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError, ConnectionResetError) as exc:
        out.fail("disconnect", type(exc).__name__, str(exc) or "connection closed mid-stream")
    except aiohttp.ClientError as exc:
        out.fail("disconnect", type(exc).__name__, str(exc) or "connection failed")
        out.connect_failed = isinstance(exc, aiohttp.ClientConnectorError)
    out.done_ns = _clock()
    if out.sent_ns == 0:
        out.sent_ns = out.done_ns
    finish_outcome(out)
    return out


async def _read_stream(response: aiohttp.ClientResponse, out: RequestOutcome) -> None:
    await read_events(response.content.iter_any(), out)

"""OpenAI streaming client: sends one request, times every token-bearing SSE event, returns a record."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson

from raybench.loadgen.endpoint import Endpoint
from raybench.loadgen.sse import SSEDecoder, SSEEvent

__all__ = ["RequestOutcome", "build_payload", "encode_body", "read_events", "send_streaming"]

_clock = time.perf_counter_ns

# orjson: 4x faster than json on chunk-sized objects (benchmarks/hotpath.py); a declared dependency
_loads = orjson.loads


def encode_body(body: dict[str, Any]) -> bytes:
    """The request body as JSON bytes; open-loop sends encode it before the send instant."""
    return orjson.dumps(body)


_MAX_ERROR_CHARS = 500


@dataclass
class RequestOutcome:
    """The timing and token fields of one request, filled while its stream is read (MEASUREMENT.md)."""

    sent_ns: int = 0
    first_chunk_ns: int | None = None
    first_token_ns: int | None = None
    last_token_ns: int | None = None
    done_ns: int = 0
    chunk_ns: list[int] = field(default_factory=list)
    chunk_tokens: list[int] = field(default_factory=list)
    input_tokens: int | None = None
    output_tokens: int | None = None
    token_count_source: str = "chunk_count"
    status: str = "ok"
    http_status: int | None = None
    error_type: str | None = None
    error_message: str | None = None
    saw_done: bool = False
    saw_finish: bool = False
    usage_completion_tokens: int = 0
    continuous_usage: bool = False

    def fail(self, status: str, error_type: str, message: str) -> None:
        """Mark the request failed; the first failure wins."""
        if self.status == "ok":
            self.status = status
            self.error_type = error_type
            self.error_message = message[:_MAX_ERROR_CHARS]


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
    session: aiohttp.ClientSession,
    endpoint: Endpoint,
    url: str,
    body: dict[str, Any] | bytes,
    timeout_s: float,
) -> RequestOutcome:
    """Send `body` (a payload, or one already encoded by `encode_body`) to `url` and read the stream
    to its end; every failure becomes a status, never raises."""
    out = RequestOutcome(continuous_usage=endpoint.continuous_usage_stats)
    data = body if isinstance(body, bytes) else encode_body(body)
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
    out.done_ns = _clock()
    if out.sent_ns == 0:
        out.sent_ns = out.done_ns
    _finish(out)
    return out


async def _read_stream(response: aiohttp.ClientResponse, out: RequestOutcome) -> None:
    await read_events(response.content.iter_any(), out)


async def read_events(
    reads: AsyncIterator[bytes], out: RequestOutcome, clock: Callable[[], int] = time.perf_counter_ns
) -> None:
    """Fill `out` from a stream's raw reads (any split); each event is timed at the read that completed it."""
    decoder = SSEDecoder()
    async for chunk in reads:
        now = clock()
        for event in decoder.feed(chunk):
            if not _on_event(event, now, out):
                return
    for event in decoder.close():
        if not _on_event(event, clock(), out):
            return
    if not (out.saw_done or out.saw_finish):
        out.fail("disconnect", "stream_incomplete", "stream ended before [DONE] or a finish_reason")


def _on_event(event: SSEEvent, now: int, out: RequestOutcome) -> bool:
    """Apply one event; return False when the stream is over (done or failed)."""
    if event.data == "[DONE]":
        out.saw_done = True
        return False
    try:
        chunk = _loads(event.data)
    except ValueError:  # orjson.JSONDecodeError is a ValueError too
        out.fail("protocol_error", "malformed_event", f"event is not JSON: {event.data[:200]!r}")
        return False
    if event.event == "error" or (isinstance(chunk, dict) and "error" in chunk):
        out.fail("http_error", "server_error_event", json.dumps(chunk)[:_MAX_ERROR_CHARS])
        return False
    if not isinstance(chunk, dict):
        out.fail("protocol_error", "malformed_event", f"event is not a JSON object: {event.data[:200]!r}")
        return False
    _on_chunk(chunk, now, out)
    return True


def _on_chunk(chunk: dict[str, Any], now: int, out: RequestOutcome) -> None:
    usage = chunk.get("usage")
    new_tokens = 1
    if isinstance(usage, dict):
        completion = usage.get("completion_tokens")
        if isinstance(completion, int):
            if out.continuous_usage:
                new_tokens = completion - out.usage_completion_tokens
            out.usage_completion_tokens = completion
            out.output_tokens = completion
        prompt_tokens = usage.get("prompt_tokens")
        if isinstance(prompt_tokens, int):
            out.input_tokens = prompt_tokens
        out.token_count_source = "server_usage"
    choices = chunk.get("choices")
    if not choices:
        return
    if out.first_chunk_ns is None:
        out.first_chunk_ns = now
    choice = choices[0]
    if choice.get("finish_reason"):
        out.saw_finish = True
    if _has_output(choice):
        if out.first_token_ns is None:
            out.first_token_ns = now
        out.last_token_ns = now
        out.chunk_ns.append(now)
        out.chunk_tokens.append(max(new_tokens, 1))


def _has_output(choice: dict[str, Any]) -> bool:
    if choice.get("text"):
        return True
    delta = choice.get("delta")
    if isinstance(delta, dict):
        return bool(delta.get("content") or delta.get("reasoning_content") or delta.get("reasoning"))
    return False


def _finish(out: RequestOutcome) -> None:
    if out.output_tokens is None:
        out.output_tokens = sum(out.chunk_tokens)
        out.token_count_source = "chunk_count"

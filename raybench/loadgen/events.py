"""The request record while its stream is read: RequestOutcome, and SSE events applied to it (MEASUREMENT.md).

Shared by both transports (client.py's aiohttp path and wire.py's lean protocol), so a stream yields
the same record whichever one read it.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from raybench.loadgen.sse import SSEDecoder, SSEEvent

__all__ = ["RequestOutcome", "apply_event", "finish_outcome", "not_event_stream", "read_events"]

# orjson: 4x faster than json on chunk-sized objects (benchmarks/hotpath.py); a declared dependency
_loads = orjson.loads

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
    # no connection could be opened (refused, unreachable): nothing reached the server
    connect_failed: bool = False

    def fail(self, status: str, error_type: str, message: str) -> None:
        """Mark the request failed; the first failure wins."""
        if self.status == "ok":
            self.status = status
            self.error_type = error_type
            self.error_message = message[:_MAX_ERROR_CHARS]


async def read_events(
    reads: AsyncIterator[bytes], out: RequestOutcome, clock: Callable[[], int] = time.perf_counter_ns
) -> None:
    """Fill `out` from a stream's raw reads (any split); each event is timed at the read that completed it."""
    decoder = SSEDecoder()
    async for chunk in reads:
        now = clock()
        for event in decoder.feed(chunk):
            if not apply_event(event, now, out):
                return
    for event in decoder.close():
        if not apply_event(event, clock(), out):
            return
    if not (out.saw_done or out.saw_finish):
        out.fail("disconnect", "stream_incomplete", "stream ended before [DONE] or a finish_reason")


def apply_event(event: SSEEvent, now: int, out: RequestOutcome) -> bool:
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


def finish_outcome(out: RequestOutcome) -> None:
    """Output tokens from the events when the server gave no usage."""
    if out.output_tokens is None:
        out.output_tokens = sum(out.chunk_tokens)
        out.token_count_source = "chunk_count"


def not_event_stream(content_type: str | None) -> str | None:
    """The error type of a 200 answer that is not SSE: `not_streaming` (JSON: the server ignored
    `stream: true`) or `wrong_content_type`; None for text/event-stream (or no Content-Type at all)."""
    kind = (content_type or "text/event-stream").split(";", 1)[0].strip().lower()
    if kind == "text/event-stream":
        return None
    return "not_streaming" if kind == "application/json" else "wrong_content_type"

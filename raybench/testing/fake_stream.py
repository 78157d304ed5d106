"""What the fake OpenAI server says and remembers: scripts, ground-truth records, pre-encoded SSE chunks."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["ChunkEncoder", "Script", "WrittenStream"]

TOKEN_TEXT = " the"  # one token for mainstream tokenizers and for raybench.testing.tiny_model's


@dataclass(frozen=True)
class Script:
    """How the fake answers a request (times from the instant its handler started, absolute: no drift)."""

    ttft_ms: float = 10.0
    itl_ms: float = 2.0
    tokens: int | None = None  # default: the request's max_tokens
    tokens_per_chunk: int = 1
    http_status: int = 200
    reset_after_chunks: int | None = None  # close the connection mid-stream
    malformed_after_chunks: int | None = None  # send a non-JSON event
    error_event_after_chunks: int | None = None  # send an OpenAI error object mid-stream
    stall_after_chunks: int | None = None  # pause this stream once, for stall_ms, before that chunk
    stall_ms: float = 0.0
    send_done: bool = True
    include_usage: bool = True
    role_chunk: bool = True
    keepalive_comments: bool = False  # a ": keep-alive" comment before every chunk
    # faults (docs/reliability.md): each names what a real server or proxy in front of it does
    burst_status: int = 503  # the status of the requests in the burst below
    burst_from: int = 0  # request number (0-based, counted by the server) where the burst starts
    burst_requests: int = 0  # how many consecutive requests get `burst_status`
    error_message: str = "scripted failure"  # the message of a scripted error answer
    end_after_chunks: int | None = None  # end the response cleanly before this chunk: no finish, no [DONE]
    oversize_event_bytes: int = 0  # the first token event carries this much padding (still one valid event)
    content_type: str = "text/event-stream"  # the streaming response's Content-Type
    plain_json: bool = False  # answer a streaming request with one non-streaming JSON completion
    header_delay_ms: float = 0.0  # wait this long before the response headers

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> Script:
        return cls(**values)

    def status_for(self, number: int) -> int:
        """The HTTP status of request `number` (its burst status inside the burst, else `http_status`)."""
        if self.burst_from <= number < self.burst_from + self.burst_requests:
            return self.burst_status
        return self.http_status


@dataclass
class WrittenStream:
    """Ground truth of one request (perf_counter_ns, the same monotonic clock as a client process on this
    host): when it reached the host (`received_ns`; the kernel's receive stamp where `received_source` is
    "kernel", else the fake's read), when the fake's loop read it (`read_ns`), when each token chunk was
    written, and its tokens."""

    request: dict[str, Any]
    received_ns: int = 0
    read_ns: int = 0
    received_source: str = "read"
    chunk_ns: list[int] = field(default_factory=list)
    chunk_tokens: list[int] = field(default_factory=list)
    done_ns: int = 0
    status: str = "ok"

    def to_dict(self, with_request: bool = False) -> dict[str, Any]:
        data = asdict(self)
        if not with_request:
            data.pop("request")
            data["prompt_head"] = _prompt_head(self.request)  # enough to match a client's record
        return data


class ChunkEncoder:
    """Pre-encodes the chunks of one stream shape, so the per-chunk cost is a dict lookup and a write."""

    def __init__(self, model: str, chat: bool, continuous_usage: bool) -> None:
        self.model = model
        self.chat = chat
        self.continuous_usage = continuous_usage
        self._cache: dict[tuple[int, bool], bytes] = {}

    def token_chunk(self, n: int, finish: bool, sent_tokens: int, prompt_tokens: int) -> bytes:
        if self.continuous_usage:  # the cumulative usage differs per chunk: nothing to cache
            usage = _usage(prompt_tokens, sent_tokens)
            return _event(self._choice_payload(TOKEN_TEXT * n, "length" if finish else None, usage))
        key = (n, finish)
        data = self._cache.get(key)
        if data is None:
            data = self._cache[key] = _event(self._choice_payload(TOKEN_TEXT * n, "length" if finish else None))
        return data

    def padded_chunk(self, n: int, finish: bool, pad_bytes: int) -> bytes:
        """A token event carrying `pad_bytes` of padding in an extra field: one long but valid line."""
        payload = self._choice_payload(TOKEN_TEXT * n, "length" if finish else None)
        payload["choices"][0]["logprobs"] = {"pad": "x" * pad_bytes}
        return _event(payload)

    def completion(self, prompt_tokens: int, tokens: int) -> dict[str, Any]:
        """The whole answer as one non-streaming JSON object (what a server ignoring `stream` sends)."""
        if self.chat:
            message = {"role": "assistant", "content": TOKEN_TEXT * tokens}
            choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": "length"}
            obj = "chat.completion"
        else:
            choice, obj = {"index": 0, "text": TOKEN_TEXT * tokens, "finish_reason": "length"}, "text_completion"
        usage = _usage(prompt_tokens, tokens)
        return {"id": "c", "object": obj, "model": self.model, "choices": [choice], "usage": usage}

    def role_chunk(self) -> bytes:
        choice = {"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}
        return _event({"id": "c", "object": "chat.completion.chunk", "model": self.model, "choices": [choice]})

    def usage_chunk(self, prompt_tokens: int, completion_tokens: int) -> bytes:
        obj = "chat.completion.chunk" if self.chat else "text_completion"
        usage = _usage(prompt_tokens, completion_tokens)
        return _event({"id": "c", "object": obj, "model": self.model, "choices": [], "usage": usage})

    def _choice_payload(self, text: str, finish: str | None, usage: dict[str, int] | None = None) -> dict[str, Any]:
        if self.chat:
            choice: dict[str, Any] = {"index": 0, "delta": {"content": text}, "finish_reason": finish}
            payload: dict[str, Any] = {"id": "c", "object": "chat.completion.chunk", "model": self.model}
        else:
            choice = {"index": 0, "text": text, "finish_reason": finish}
            payload = {"id": "c", "object": "text_completion", "model": self.model}
        payload["choices"] = [choice]
        if usage is not None:
            payload["usage"] = usage
        return payload


def error_event(message: str) -> bytes:
    return _event({"error": {"message": message, "type": "server_error", "code": 500}})


def prompt_tokens(body: dict[str, Any]) -> int:
    """Whitespace-separated words of the prompt (or of every message): the fake's token count."""
    if "messages" in body:
        return sum(len(str(m.get("content", "")).split()) for m in body["messages"] if isinstance(m, dict))
    prompt = body.get("prompt", "")
    return len(prompt.split()) if isinstance(prompt, str) else len(prompt)


def _prompt_head(body: dict[str, Any]) -> str:
    if body.get("messages"):
        return str(body["messages"][-1].get("content", ""))[:24]
    return str(body.get("prompt", ""))[:24]


def _usage(prompt: int, completion: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _event(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"

"""OpenAI wire format of the simulated engine: request parsing, response bodies and SSE chunks.

Token accounting (document for users of the sim): a prompt's tokens are its whitespace-separated
words; a chat request's are the words of all messages' text content joined, with no
chat-template overhead. A prompt given as token ids is those ids. The prefix cache hashes
exactly these tokens, and `usage.prompt_tokens_details.cached_tokens` reports its hits.
Output is exactly `max_tokens` tokens, token i being the text f"t{i} "; the sim never stops
early, so `ignore_eos` and `min_tokens` are accepted and validated but change nothing.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from typing import Any, TypeGuard

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "SSE_DONE",
    "ChunkBuilder",
    "ParsedRequest",
    "RequestError",
    "error_body",
    "parse_chat",
    "parse_completion",
    "sse_event",
    "token_text",
]

DEFAULT_MAX_TOKENS = 16
SSE_DONE = b"data: [DONE]\n\n"

JsonObject = dict[str, Any]


class RequestError(Exception):
    """A request the server rejects: HTTP status plus an OpenAI-style message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def error_body(status: int, message: str) -> JsonObject:
    return {"error": {"message": message, "type": "invalid_request_error", "code": status}}


@dataclass(frozen=True)
class ParsedRequest:
    """What the scheduler and the response writer need from one completions or chat request."""

    chat: bool
    prompt: tuple[str | int, ...]
    max_tokens: int
    stream: bool
    include_usage: bool
    continuous_usage: bool

    @property
    def prompt_tokens(self) -> int:
        return len(self.prompt)


def token_text(index: int) -> str:
    return f"t{index} "


def sse_event(payload: JsonObject) -> bytes:
    return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"


def parse_completion(body: object, served_model: str) -> ParsedRequest:
    """Validate a /v1/completions body; raises RequestError (400, or 404 for another model)."""
    obj = _check_common(body, served_model)
    if "prompt" not in obj:
        raise RequestError(400, "'prompt' is required: a string, a list of token ids, or a 1-item list")
    return _parsed(obj, chat=False, prompt=_prompt_tokens(obj["prompt"]), max_tokens_key="max_tokens")


def parse_chat(body: object, served_model: str) -> ParsedRequest:
    """Validate a /v1/chat/completions body; raises RequestError (400, or 404 for another model)."""
    obj = _check_common(body, served_model)
    if "messages" not in obj:
        raise RequestError(400, "'messages' is required: a list of {'role': ..., 'content': ...}")
    key = "max_completion_tokens" if obj.get("max_completion_tokens") is not None else "max_tokens"
    return _parsed(obj, chat=True, prompt=_message_tokens(obj["messages"]), max_tokens_key=key)


def _check_common(body: object, served_model: str) -> JsonObject:
    if not isinstance(body, dict):
        raise RequestError(400, "the request body must be a JSON object")
    model = body.get("model")
    if model is not None and model != served_model:
        raise RequestError(404, f"The model `{model}` does not exist; this server serves `{served_model}`.")
    n = body.get("n")
    if n is not None and n != 1:
        raise RequestError(400, "'n' must be 1: the simulated engine returns one choice")
    return body


def _parsed(obj: JsonObject, *, chat: bool, prompt: tuple[str | int, ...], max_tokens_key: str) -> ParsedRequest:
    max_tokens = _int_field(obj, max_tokens_key, DEFAULT_MAX_TOKENS, minimum=1)
    min_tokens = _int_field(obj, "min_tokens", 0, minimum=0)
    if min_tokens > max_tokens:
        raise RequestError(400, f"'min_tokens' ({min_tokens}) must be <= {max_tokens_key} ({max_tokens})")
    _bool_field(obj, "ignore_eos")
    stream = _bool_field(obj, "stream")
    options = obj.get("stream_options")
    if options is not None and not stream:
        raise RequestError(400, "'stream_options' is only allowed with \"stream\": true")
    if options is not None and not isinstance(options, dict):
        raise RequestError(400, "'stream_options' must be an object")
    include_usage = _bool_field(options or {}, "include_usage")
    # Like vLLM: per-chunk usage only when the final usage chunk is asked for too.
    continuous = include_usage and _bool_field(options or {}, "continuous_usage_stats")
    return ParsedRequest(chat, prompt, max_tokens, stream, include_usage, continuous)


def _int_field(obj: JsonObject, key: str, default: int, *, minimum: int) -> int:
    value = obj.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise RequestError(400, f"'{key}' must be an integer >= {minimum}, got {value!r}")
    return value


def _bool_field(obj: JsonObject, key: str) -> bool:
    value = obj.get(key)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise RequestError(400, f"'{key}' must be true or false, got {value!r}")
    return value


def _is_token_ids(value: object) -> TypeGuard[list[int]]:
    return isinstance(value, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in value)


def _prompt_tokens(prompt: object) -> tuple[str | int, ...]:
    if isinstance(prompt, str):
        return tuple(prompt.split())
    if _is_token_ids(prompt):
        return tuple(prompt)
    if isinstance(prompt, list) and len(prompt) == 1:
        return _prompt_tokens(prompt[0])
    raise RequestError(
        400, "'prompt' must be a string, a list of token ids, or a list of one of those (batches unsupported)"
    )


def _message_tokens(messages: object) -> tuple[str | int, ...]:
    if not isinstance(messages, list) or not messages:
        raise RequestError(400, "'messages' must be a non-empty list of {'role': ..., 'content': ...}")
    texts: list[str] = []
    for message in messages:
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise RequestError(400, "each message must be an object with a string 'role'")
        texts.extend(_message_texts(message.get("content")))
    return tuple(" ".join(texts).split())


def _message_texts(content: object) -> list[str]:
    if content is None:
        return []
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        parts = [p for p in content if isinstance(p, dict) and p.get("type") == "text"]
        return [p["text"] for p in parts if isinstance(p.get("text"), str)]
    raise RequestError(400, "a message's 'content' must be a string or a list of content parts")


class ChunkBuilder:
    """Builds one request's response bodies: streaming chunks, and the non-streaming response."""

    def __init__(self, request: ParsedRequest, model: str) -> None:
        self._request = request
        self._model = model
        prefix = "chatcmpl" if request.chat else "cmpl"
        self._id = f"{prefix}-{uuid.uuid4().hex}"
        self._created = int(time.time())

    def usage(self, completion_tokens: int, cached_tokens: int = 0) -> JsonObject:
        prompt_tokens = self._request.prompt_tokens
        return {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": cached_tokens},
        }

    def role_chunk(self) -> JsonObject:
        """Chat only: the assistant-role delta that precedes the first token (as vLLM sends it)."""
        return self._chunk(
            {
                "index": 0,
                "delta": {"role": "assistant", "content": ""},
                "logprobs": None,
                "finish_reason": None,
            },
            completion_tokens=0,
        )

    def token_chunk(self, index: int, finished: bool) -> JsonObject:
        finish_reason = "length" if finished else None
        if self._request.chat:
            choice: JsonObject = {"index": 0, "delta": {"content": token_text(index)}}
        else:
            choice = {"index": 0, "text": token_text(index)}
        choice.update(logprobs=None, finish_reason=finish_reason)
        return self._chunk(choice, completion_tokens=index + 1)

    def usage_chunk(self, completion_tokens: int, cached_tokens: int = 0) -> JsonObject:
        return {**self._header(), "choices": [], "usage": self.usage(completion_tokens, cached_tokens)}

    def full_response(self, completion_tokens: int, cached_tokens: int = 0) -> JsonObject:
        text = "".join(token_text(i) for i in range(completion_tokens))
        if self._request.chat:
            choice: JsonObject = {"index": 0, "message": {"role": "assistant", "content": text}}
        else:
            choice = {"index": 0, "text": text}
        choice.update(logprobs=None, finish_reason="length")
        obj = "chat.completion" if self._request.chat else "text_completion"
        return {**self._header(obj), "choices": [choice], "usage": self.usage(completion_tokens, cached_tokens)}

    def _header(self, obj: str | None = None) -> JsonObject:
        if obj is None:
            obj = "chat.completion.chunk" if self._request.chat else "text_completion"
        return {"id": self._id, "object": obj, "created": self._created, "model": self._model}

    def _chunk(self, choice: JsonObject, *, completion_tokens: int) -> JsonObject:
        chunk = {**self._header(), "choices": [choice]}
        if self._request.continuous_usage:
            chunk["usage"] = self.usage(completion_tokens)
        return chunk

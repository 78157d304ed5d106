"""A loopback fake OpenAI server with scripted latency and faults, recording when it wrote each chunk."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

__all__ = ["FakeOpenAIServer", "Script", "WrittenStream"]


@dataclass(frozen=True)
class Script:
    """How the fake answers every request."""

    ttft_ms: float = 10.0
    itl_ms: float = 2.0
    tokens: int | None = None  # default: the request's max_tokens
    tokens_per_chunk: int = 1
    http_status: int = 200
    reset_after_chunks: int | None = None  # close the connection mid-stream
    malformed_after_chunks: int | None = None  # send a non-JSON event
    error_event_after_chunks: int | None = None  # send an OpenAI error object mid-stream
    send_done: bool = True
    include_usage: bool = True
    role_chunk: bool = True


@dataclass
class WrittenStream:
    """Ground truth: when the server wrote each token chunk (perf_counter_ns) and how many tokens."""

    request: dict[str, Any]
    chunk_ns: list[int] = field(default_factory=list)
    chunk_tokens: list[int] = field(default_factory=list)


class FakeOpenAIServer:
    """`async with FakeOpenAIServer(Script(...)) as fake:` then send to `fake.base_url`."""

    def __init__(self, script: Script | None = None, model: str = "fake-model", host: str = "127.0.0.1") -> None:
        self.script = script or Script()
        self.model = model
        self.host = host
        self.streams: list[WrittenStream] = []
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def __aenter__(self) -> FakeOpenAIServer:
        app = web.Application()
        app.router.add_get("/health", self._health)
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/v1/completions", self._complete)
        app.router.add_post("/v1/chat/completions", self._complete)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, 0)
        await site.start()
        self.port = int(self._runner.addresses[0][1])
        return self

    async def __aexit__(self, *_exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _health(self, _request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _models(self, _request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": self.model, "object": "model"}]})

    async def _complete(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        s = self.script
        if s.http_status != 200:
            error = {"error": {"message": "scripted failure", "type": "server_error", "code": s.http_status}}
            return web.json_response(error, status=s.http_status)
        chat = request.path.endswith("/chat/completions")
        written = WrittenStream(request=body)
        self.streams.append(written)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        total = int(s.tokens or body.get("max_tokens", 16))
        await self._stream(response, written, chat, total, request.transport)
        return response

    async def _stream(
        self,
        response: web.StreamResponse,
        written: WrittenStream,
        chat: bool,
        total: int,
        transport: asyncio.BaseTransport | None,
    ) -> None:
        s = self.script
        start = time.perf_counter_ns()
        if chat and s.role_chunk:
            await _send(response, _chunk(self.model, chat, None, role=True))
        sent, index = 0, 0
        while sent < total:
            if index == s.reset_after_chunks:
                if isinstance(transport, asyncio.Transport):
                    transport.abort()
                return
            if index == s.malformed_after_chunks:
                await response.write(b"data: {not json\n\n")
            if index == s.error_event_after_chunks:
                await _send(response, {"error": {"message": "scripted mid-stream error", "code": 500}})
                return
            target = start + int((s.ttft_ms + index * s.itl_ms) * 1e6)  # absolute: no drift
            await asyncio.sleep(max(target - time.perf_counter_ns(), 0) / 1e9)
            n = min(s.tokens_per_chunk, total - sent)
            sent += n
            finish = "length" if sent >= total else None
            written.chunk_ns.append(time.perf_counter_ns())
            written.chunk_tokens.append(n)
            await _send(response, _chunk(self.model, chat, "x" * n, finish=finish))
            index += 1
        if s.include_usage:
            usage = {"prompt_tokens": 7, "completion_tokens": total, "total_tokens": total + 7}
            await _send(response, {"id": "c", "object": "x", "model": self.model, "choices": [], "usage": usage})
        if s.send_done:
            await response.write(b"data: [DONE]\n\n")


async def _send(response: web.StreamResponse, payload: dict[str, Any]) -> None:
    await response.write(b"data: " + json.dumps(payload).encode() + b"\n\n")


def _chunk(model: str, chat: bool, text: str | None, role: bool = False, finish: str | None = None) -> dict[str, Any]:
    if chat:
        delta: dict[str, Any] = {"role": "assistant", "content": ""} if role else {"content": text}
        choice: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": finish}
        return {"id": "c", "object": "chat.completion.chunk", "model": model, "choices": [choice]}
    return {
        "id": "c",
        "object": "text_completion",
        "model": model,
        "choices": [{"index": 0, "text": text, "finish_reason": finish}],
    }

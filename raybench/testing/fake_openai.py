"""A loopback fake OpenAI server with scripted latency, stalls and faults, recording when it wrote each chunk.

In-process: `async with FakeOpenAIServer(Script(...)) as fake:`. As its own process (benchmarks):
`python -m raybench.testing.fake_openai --port 0` prints its port, and `/_fake/script`, `/_fake/stall`,
`/_fake/reset`, `/_fake/truth` set the script, freeze it, and read back the ground truth.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable
from typing import Any

from raybench.loadgen.loop_thread import LoopThread, new_event_loop
from raybench.testing.fake_http import HttpRequest, HttpServer, Responder, serve
from raybench.testing.fake_stream import ChunkEncoder, Script, WrittenStream, error_event, prompt_tokens

__all__ = ["FakeOpenAIServer", "FakeServerThread", "Script", "WrittenStream", "main"]

ScriptFor = Callable[[int, dict[str, Any]], Script]


class FakeOpenAIServer:
    """Answers every request by its script (`script_for(request number, body)` when given, else `script`)."""

    def __init__(
        self,
        script: Script | None = None,
        model: str = "fake-model",
        host: str = "127.0.0.1",
        port: int = 0,
        script_for: ScriptFor | None = None,
        api_key: str | None = None,
    ) -> None:
        self.script = script or Script()
        self.api_key = api_key  # when set, completions without `Authorization: Bearer <api_key>` get a 401
        self.script_for = script_for
        self.model = model
        self.host = host
        self.port = port
        self.streams: list[WrittenStream] = []
        self._stalls: list[tuple[int, int]] = []
        self._server: HttpServer | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def stall(self, duration_ms: float, after_ms: float = 0.0) -> None:
        """Freeze every stream: no chunk is written between now + after_ms and the end of the stall."""
        start = time.perf_counter_ns() + int(after_ms * 1e6)
        self._stalls.append((start, start + int(duration_ms * 1e6)))

    def reset(self) -> None:
        """Forget the ground truth and the stalls (between benchmark runs)."""
        self.streams = []
        self._stalls = []

    async def __aenter__(self) -> FakeOpenAIServer:
        self._server = await serve(self._handle, self.host, self.port)
        self.port = self._server.port
        return self

    async def __aexit__(self, *_exc: object) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None

    async def _handle(self, request: HttpRequest, out: Responder) -> None:
        route = (request.method, request.path)
        if route in (("POST", "/v1/completions"), ("POST", "/v1/chat/completions")):
            await self._complete(request, out)
        elif route == ("GET", "/health"):
            out.send_json("ok")
        elif route == ("GET", "/v1/models"):
            out.send_json({"object": "list", "data": [{"id": self.model, "object": "model"}]})
        else:
            self._control(route, request, out)

    def _control(self, route: tuple[str, str], request: HttpRequest, out: Responder) -> None:
        if route == ("POST", "/_fake/script"):
            self.script = Script.from_dict(request.json())
        elif route == ("POST", "/_fake/stall"):
            body = request.json()
            self.stall(float(body["duration_ms"]), float(body.get("after_ms", 0.0)))
        elif route == ("POST", "/_fake/reset"):
            self.reset()
        elif route == ("GET", "/_fake/truth"):
            out.send_json({"streams": [s.to_dict() for s in self.streams]})
            return
        else:
            out.send_json({"error": {"message": f"no route {route[0]} {route[1]}"}}, status=404)
            return
        out.send_json({"ok": True})

    async def _complete(self, request: HttpRequest, out: Responder) -> None:
        body = request.json()
        number = len(self.streams)
        script = self.script_for(number, body) if self.script_for is not None else self.script
        written = WrittenStream(body, request.received_ns, request.read_ns, request.received_source)
        self.streams.append(written)
        if script.header_delay_ms > 0:
            await asyncio.sleep(script.header_delay_ms / 1e3)
            if out.closed:  # the client gave up waiting for the headers
                written.status, written.done_ns = "client_gone", time.perf_counter_ns()
                return
        options = body.get("stream_options") or {}
        chat = request.path.endswith("/chat/completions")
        encoder = ChunkEncoder(self.model, chat, bool(options.get("continuous_usage_stats")))
        if self._refused(request, script, number, written, out):
            return
        if script.plain_json:
            written.status, written.done_ns = "plain_json", time.perf_counter_ns()
            total = int(script.tokens or body.get("max_tokens") or 16)
            out.send_json(encoder.completion(prompt_tokens(body), total))
            return
        out.start_stream(script.content_type)
        try:
            if await self._stream(out, written, encoder, script):
                out.end()
        finally:
            written.done_ns = time.perf_counter_ns()

    def _refused(self, request: HttpRequest, s: Script, number: int, written: WrittenStream, out: Responder) -> bool:
        """Answer with an error instead of a stream (wrong API key, scripted status); True when it did."""
        status = s.status_for(number)
        if self.api_key is not None and request.headers.get("authorization") != f"Bearer {self.api_key}":
            status, message, kind = 401, "missing or wrong API key", "invalid_request_error"
        elif status != 200:
            message, kind = s.error_message, "server_error"
        else:
            return False
        written.status, written.done_ns = "http_error", time.perf_counter_ns()
        out.send_json({"error": {"message": message, "type": kind, "code": status}}, status=status)
        return True

    def _release_ns(self, target_ns: int) -> int:
        for start, end in self._stalls:
            if start <= target_ns < end:
                target_ns = end
        return target_ns

    async def _stream(self, out: Responder, written: WrittenStream, encoder: ChunkEncoder, s: Script) -> bool:
        """Write the scripted stream; False when it ended abnormally (reset, error event, client gone)."""
        body = written.request
        total = int(s.tokens or body.get("max_tokens") or body.get("max_completion_tokens") or 16)
        n_prompt = prompt_tokens(written.request)
        if encoder.chat and s.role_chunk:
            out.chunk(encoder.role_chunk())
        sent, index, shift_ns = 0, 0, 0
        while sent < total:
            if _fault(out, written, s, index):
                return False
            if index == s.stall_after_chunks:
                shift_ns = int(s.stall_ms * 1e6)  # the rest of the stream comes that much later
            target = self._release_ns(written.received_ns + shift_ns + int((s.ttft_ms + index * s.itl_ms) * 1e6))
            delay_ns = target - time.perf_counter_ns()
            if delay_ns > 0:
                await asyncio.sleep(delay_ns / 1e9)
            if out.closed:
                written.status = "client_gone"
                return False
            n = min(s.tokens_per_chunk, total - sent)
            sent += n
            data = _token_event(encoder, s, index, n, sent, total, n_prompt)
            written.chunk_ns.append(time.perf_counter_ns())
            written.chunk_tokens.append(n)
            out.chunk(data)
            index += 1
        if s.include_usage:
            out.chunk(encoder.usage_chunk(n_prompt, total))
        if s.send_done:
            out.chunk(b"data: [DONE]\n\n")
        return True


def _token_event(encoder: ChunkEncoder, s: Script, index: int, n: int, sent: int, total: int, n_prompt: int) -> bytes:
    """The bytes of token event `index` (carrying `n` tokens, `sent` so far): padded, commented, or plain."""
    if index == 0 and s.oversize_event_bytes:
        data = encoder.padded_chunk(n, sent >= total, s.oversize_event_bytes)
    else:
        data = encoder.token_chunk(n, sent >= total, sent, n_prompt)
    return b": keep-alive\n\n" + data if s.keepalive_comments else data


def _fault(out: Responder, written: WrittenStream, s: Script, index: int) -> bool:
    """Inject the scripted fault due before chunk `index`; True when the stream must end here."""
    if index == s.reset_after_chunks:
        written.status = "disconnect"
        out.abort()
        return True
    if index == s.malformed_after_chunks:
        written.status = "protocol_error"
        out.chunk(b"data: {not json\n\n")
    if index == s.end_after_chunks:
        written.status = "truncated"
        out.end()
        return True
    if index == s.error_event_after_chunks:
        written.status = "http_error"
        out.chunk(error_event("scripted mid-stream error"))
        return True
    return False


class FakeServerThread:
    """Fake servers on a loop thread of this process, for a caller that blocks (a driver running a job):
    `with FakeServerThread([FakeOpenAIServer(...), ...]) as servers:` then `servers[i].base_url`."""

    def __init__(self, servers: list[FakeOpenAIServer]) -> None:
        self.servers = servers
        self._loop: LoopThread | None = None

    def __getitem__(self, index: int) -> FakeOpenAIServer:
        return self.servers[index]

    def __enter__(self) -> FakeServerThread:
        self._loop = LoopThread("raybench-fake-openai")
        for server in self.servers:
            self._loop.run(server.__aenter__())
        return self

    def __exit__(self, *_exc: object) -> None:
        if self._loop is not None:
            for server in self.servers:
                self._loop.run(server.__aexit__())
            self._loop.stop()
            self._loop = None


async def _serve(args: argparse.Namespace) -> None:
    script = Script(ttft_ms=args.ttft_ms, itl_ms=args.itl_ms, tokens_per_chunk=args.tokens_per_chunk)
    async with FakeOpenAIServer(script, model=args.model, host=args.host, port=args.port) as fake:
        print(fake.port, flush=True)
        await asyncio.Event().wait()


def main(argv: list[str] | None = None) -> None:
    """Run the fake as a process (its own CPU, its own loop): prints the port, serves until killed."""
    parser = argparse.ArgumentParser(prog="python -m raybench.testing.fake_openai", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--model", default="fake-model")
    parser.add_argument("--ttft-ms", type=float, default=100.0)
    parser.add_argument("--itl-ms", type=float, default=10.0)
    parser.add_argument("--tokens-per-chunk", type=int, default=1)
    args = parser.parse_args(argv)
    loop = new_event_loop()
    try:
        loop.run_until_complete(_serve(args))
    except KeyboardInterrupt:
        pass
    finally:
        loop.close()


if __name__ == "__main__":
    main()

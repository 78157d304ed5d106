"""HTTP server of the simulated engine: OpenAI-compatible endpoints, /metrics, and its CLI.

Every completion is a request to the continuous-batching `Scheduler`, so latency under load
behaves like a real engine's: TTFT rises once concurrency exceeds `max_num_seqs`, and
inter-token latency grows with batch size. A client that disconnects cancels its request.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import time
from collections.abc import AsyncIterator, Callable, Sequence

from aiohttp import web

from raybench.engines.sim.config import SimConfig
from raybench.engines.sim.exposition import CONTENT_TYPE, render_metrics
from raybench.engines.sim.protocol import (
    SSE_DONE,
    ChunkBuilder,
    ParsedRequest,
    RequestError,
    error_body,
    parse_chat,
    parse_completion,
    sse_event,
)
from raybench.engines.sim.scheduler import Clock, Scheduler, TokenStream
from raybench.errors import EngineError

__all__ = ["CONFIG_KEY", "SCHEDULER_KEY", "build_app", "main", "parse_args", "serve"]

CONFIG_KEY = web.AppKey("raybench_sim_config", SimConfig)
SCHEDULER_KEY = web.AppKey("raybench_sim_scheduler", Scheduler)

_Parser = Callable[[object, str], ParsedRequest]
_SHUTDOWN_TIMEOUT_S = 2.0


def build_app(config: SimConfig, *, clock: Clock | None = None) -> web.Application:
    """The aiohttp application; its scheduler starts with the app and stops on shutdown."""
    app = web.Application()
    app[CONFIG_KEY] = config
    app[SCHEDULER_KEY] = Scheduler(config.cost_model(), config.max_num_seqs, clock=clock)
    app.cleanup_ctx.append(_scheduler_lifetime)
    # Closing on shutdown (before aiohttp waits for handlers) ends in-flight streams at once.
    app.on_shutdown.append(_close_scheduler)
    app.router.add_get("/health", _health)
    app.router.add_get("/v1/models", _models)
    app.router.add_get("/metrics", _metrics)
    app.router.add_post("/v1/completions", _completions)
    app.router.add_post("/v1/chat/completions", _chat_completions)
    return app


async def _scheduler_lifetime(app: web.Application) -> AsyncIterator[None]:
    app[SCHEDULER_KEY].start()
    yield
    await app[SCHEDULER_KEY].aclose()


async def _close_scheduler(app: web.Application) -> None:
    await app[SCHEDULER_KEY].aclose()


def _error(status: int, message: str) -> web.Response:
    return web.json_response(error_body(status, message), status=status)


async def _health(request: web.Request) -> web.Response:
    return web.Response(text="ok")


async def _models(request: web.Request) -> web.Response:
    model = request.app[CONFIG_KEY].model
    card = {
        "id": model,
        "object": "model",
        "created": int(time.time()),
        "owned_by": "raybench",
        "root": model,
    }
    return web.json_response({"object": "list", "data": [card]})


async def _metrics(request: web.Request) -> web.Response:
    text = render_metrics(request.app[CONFIG_KEY].model, request.app[SCHEDULER_KEY].stats())
    return web.Response(body=text.encode(), headers={"Content-Type": CONTENT_TYPE})


async def _completions(request: web.Request) -> web.StreamResponse:
    return await _generate(request, parse_completion)


async def _chat_completions(request: web.Request) -> web.StreamResponse:
    return await _generate(request, parse_chat)


async def _generate(request: web.Request, parse: _Parser) -> web.StreamResponse:
    config = request.app[CONFIG_KEY]
    try:
        parsed = parse(await request.json(), config.model)
    except ValueError as exc:
        return _error(400, f"the request body is not valid JSON: {exc}")
    except RequestError as exc:
        return _error(exc.status, exc.message)
    builder = ChunkBuilder(parsed, config.model)
    scheduler = request.app[SCHEDULER_KEY]
    if parsed.stream:
        return await _stream(request, scheduler, parsed, builder)
    try:
        # Leaving `async with` (also when aiohttp cancels us on disconnect) frees the slot.
        async with scheduler.submit(parsed.prompt_tokens, parsed.max_tokens) as tokens:
            generated = sum([1 async for _ in tokens])
    except EngineError as exc:
        return _error(503, str(exc))
    return web.json_response(builder.full_response(generated))


async def _stream(
    request: web.Request, scheduler: Scheduler, parsed: ParsedRequest, builder: ChunkBuilder
) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
    try:
        await response.prepare(request)
        async with scheduler.submit(parsed.prompt_tokens, parsed.max_tokens) as tokens:
            await _write_tokens(response, tokens, parsed, builder)
        if parsed.include_usage:
            await response.write(sse_event(builder.usage_chunk(parsed.max_tokens)))
        await response.write(SSE_DONE)
        await response.write_eof()
    except ConnectionResetError:
        pass  # the client went away; leaving `async with` already cancelled its request
    return response


async def _write_tokens(
    response: web.StreamResponse, tokens: TokenStream, parsed: ParsedRequest, builder: ChunkBuilder
) -> None:
    """One SSE event per token, each written (flushed) as soon as the scheduler emits it."""
    try:
        async for event in tokens:
            if parsed.chat and event.index == 0:
                await response.write(sse_event(builder.role_chunk()))
            await response.write(sse_event(builder.token_chunk(event.index, event.finished)))
    except EngineError as exc:
        # Like vLLM: an error event in the stream; the caller still ends it with [DONE].
        await response.write(sse_event(error_body(503, str(exc))))


def parse_args(argv: Sequence[str] | None = None) -> tuple[SimConfig, str, int]:
    """CLI flags → (config, host, port); exits with status 2 and a message on bad values."""
    defaults = SimConfig()
    parser = argparse.ArgumentParser(
        prog="python -m raybench.engines.sim",
        description="Simulated OpenAI-compatible LLM engine with a continuous-batching scheduler.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: %(default)s)")
    parser.add_argument("--port", type=int, default=8000, help="port to bind; 0 picks a free one")
    parser.add_argument("--model", default=defaults.model, help="served model name")
    parser.add_argument("--max-num-seqs", type=int, default=defaults.max_num_seqs)
    parser.add_argument("--iteration-overhead-ms", type=float, default=defaults.iteration_overhead_ms)
    parser.add_argument("--decode-ms-per-seq", type=float, default=defaults.decode_ms_per_seq)
    parser.add_argument("--prefill-ms-per-token", type=float, default=defaults.prefill_ms_per_token)
    args = parser.parse_args(argv)
    try:
        config = SimConfig(
            model=args.model,
            max_num_seqs=args.max_num_seqs,
            iteration_overhead_ms=args.iteration_overhead_ms,
            decode_ms_per_seq=args.decode_ms_per_seq,
            prefill_ms_per_token=args.prefill_ms_per_token,
        )
    except ValueError as exc:
        parser.error(str(exc))
    return config, args.host, args.port


async def serve(config: SimConfig, host: str, port: int) -> None:
    """Listen until SIGTERM or SIGINT, printing the ready line once the socket is bound."""
    runner = web.AppRunner(
        build_app(config), handler_cancellation=True, shutdown_timeout=_SHUTDOWN_TIMEOUT_S, access_log=None
    )
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
        bound_host, bound_port = runner.addresses[0][:2]
        shown_host = f"[{bound_host}]" if ":" in bound_host else bound_host
        print(f"raybench-sim ready on http://{shown_host}:{bound_port}", flush=True)
        await _until_signalled()
    finally:
        await runner.cleanup()


async def _until_signalled() -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    signals = (signal.SIGTERM, signal.SIGINT)
    for signum in signals:
        loop.add_signal_handler(signum, stop.set)
    try:
        await stop.wait()
    finally:
        for signum in signals:
            loop.remove_signal_handler(signum)


def main(argv: Sequence[str] | None = None) -> int:
    config, host, port = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    asyncio.run(serve(config, host, port))
    return 0

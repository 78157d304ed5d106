"""HTTP server of the simulated engine: OpenAI-compatible endpoints, /metrics, and its CLI.

Every completion is a request to the simulated engine (continuous batching over a roofline
performance model), so latency under load behaves like a real engine's for the same reasons:
batch saturation, KV-cache capacity, prefill interference. A client that disconnects cancels
its request. Every `--log-interval-s` the server prints its gauges and its own CPU share.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from collections.abc import AsyncIterator, Callable, Sequence

from aiohttp import web

from raybench.engines.sim.cli import describe, parse_args
from raybench.engines.sim.config import SimConfig
from raybench.engines.sim.engine import Engine, build_engine
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
from raybench.engines.sim.scheduler import Clock, TokenStream
from raybench.errors import EngineError

__all__ = ["CONFIG_KEY", "SCHEDULER_KEY", "build_app", "main", "serve"]

CONFIG_KEY = web.AppKey("raybench_sim_config", SimConfig)
SCHEDULER_KEY: web.AppKey[Engine] = web.AppKey("raybench_sim_engine")

_Parser = Callable[[object, str], ParsedRequest]
_SHUTDOWN_TIMEOUT_S = 2.0


def build_app(config: SimConfig, *, clock: Clock | None = None) -> web.Application:
    """The aiohttp application; its scheduler starts with the app and stops on shutdown."""
    app = web.Application()
    app[CONFIG_KEY] = config
    app[SCHEDULER_KEY] = build_engine(config, clock=clock)
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
    engine = request.app[SCHEDULER_KEY]
    model = request.app[CONFIG_KEY].model
    late_s = engine.late_ns / 1e9
    text = render_metrics(model, engine.stats(), cpu_seconds=time.process_time(), late_seconds=late_s)
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
    try:
        tokens = request.app[SCHEDULER_KEY].submit(parsed.prompt, parsed.max_tokens)
    except ValueError as exc:
        return _error(400, str(exc))
    except EngineError as exc:
        return _error(503, str(exc))
    if parsed.stream:
        return await _stream(request, tokens, parsed, builder)
    try:
        # Leaving `async with` (also when aiohttp cancels us on disconnect) frees the slot.
        async with tokens:
            generated = sum([1 async for _ in tokens])
    except EngineError as exc:
        return _error(503, str(exc))
    return web.json_response(builder.full_response(generated, tokens.cached_tokens))


async def _stream(
    request: web.Request, tokens: TokenStream, parsed: ParsedRequest, builder: ChunkBuilder
) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
    try:
        async with tokens:
            await response.prepare(request)
            await _write_tokens(response, tokens, parsed, builder)
        if parsed.include_usage:
            await response.write(sse_event(builder.usage_chunk(parsed.max_tokens, tokens.cached_tokens)))
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


async def serve(config: SimConfig, host: str, port: int, log_interval_s: float = 10.0) -> None:
    """Listen until SIGTERM or SIGINT, printing the ready line once the socket is bound."""
    app = build_app(config)
    runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=_SHUTDOWN_TIMEOUT_S, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
        bound_host, bound_port = runner.addresses[0][:2]
        shown_host = f"[{bound_host}]" if ":" in bound_host else bound_host
        print(f"raybench-sim ready on http://{shown_host}:{bound_port}", flush=True)
        print(f"raybench-sim {describe(config)}", flush=True)
        reporter = asyncio.get_running_loop().create_task(_report(app[SCHEDULER_KEY], log_interval_s))
        try:
            await _until_signalled()
        finally:
            reporter.cancel()
            print(f"raybench-sim final {_stats_line(app[SCHEDULER_KEY], _START)}", flush=True)
    finally:
        await runner.cleanup()


class _Since:
    """Wall and CPU time at a start instant, for CPU-share lines."""

    def __init__(self) -> None:
        self.wall_s = time.monotonic()
        self.cpu_s = time.process_time()


_START = _Since()


def _stats_line(engine: Engine, since: _Since) -> str:
    s = engine.stats()
    wall_s = max(time.monotonic() - since.wall_s, 1e-9)
    total_wall_s = max(time.monotonic() - _START.wall_s, 1e-9)
    return (
        f"stats running={s.running} waiting={s.waiting} kv_usage={s.kv_usage:.3f} "
        f"peak_running={s.peak_running} peak_waiting={s.peak_waiting} peak_kv_usage={s.peak_kv_usage:.3f} "
        f"preemptions={s.preemptions} finished={s.requests_finished} "
        f"prefix_hit_rate={s.prefix_hits_tokens / max(s.prefix_queries_tokens, 1):.3f} "
        f"late_ms={engine.late_ns / 1e6:.1f} "
        f"cpu_share={(time.process_time() - since.cpu_s) / wall_s:.3f} "
        f"cpu_share_total={(time.process_time() - _START.cpu_s) / total_wall_s:.3f}"
    )


async def _report(engine: Engine, interval_s: float) -> None:
    """Print the gauges and this process's CPU share over the last interval, every `interval_s`."""
    if interval_s <= 0:
        return
    while True:
        since = _Since()
        await asyncio.sleep(interval_s)
        print(f"raybench-sim {_stats_line(engine, since)}", flush=True)


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
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        import uvloop  # its timers are not rounded up to whole milliseconds: token instants stay exact
    except ImportError:  # pragma: no cover - uvloop is a dependency; stay runnable without it
        asyncio.run(serve(args.config, args.host, args.port, args.log_interval_s))
    else:
        uvloop.run(serve(args.config, args.host, args.port, args.log_interval_s))
    return 0

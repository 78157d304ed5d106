"""The fake engine server: each kind's readiness behaviour, info routes and metrics, OpenAI SSE streaming.

Behaviour knobs come from the environment (raybench passes a spec's `env` through):
RAYBENCH_FAKE_LOAD_S (model load time), RAYBENCH_FAKE_ITL_MS, RAYBENCH_FAKE_TTFT_MS,
RAYBENCH_FAKE_CRASH_AFTER_REQUESTS (exit 3 mid-stream, like an engine dying of a CUDA error).
Like real engines it starts a worker child process (vLLM's EngineCore, SGLang's scheduler).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from typing import Any

from aiohttp import web

from raybench.testing.engines.cli import FakeConfig
from raybench.testing.engines.multinode import gather_nodes, join_rank0, node_report

__all__ = ["FAKE_VERSION", "FakeEngine", "serve"]

FAKE_VERSION = "0.0.0-fake"
# Kinds whose HTTP server only binds once the model is loaded (a client sees connection refused until then);
# llama.cpp binds at once and answers /health 503 while loading; TGI's launcher starts its router last.
_BINDS_LATE = {"vllm", "sglang", "trtllm", "lmdeploy", "tgi", "ray_serve_llm"}
_HEALTH = {"ray_serve_llm": "/-/healthz"}


def _env_float(name: str, default: float) -> float:
    return float(os.environ.get(name, default))


class FakeEngine:
    """State and routes of one fake server."""

    def __init__(self, config: FakeConfig) -> None:
        self.config = config
        self.loaded = False
        self.running = 0
        self.requests = 0
        self.counters = dict.fromkeys(
            ("prompt", "generation", "queries", "hits", "ttft_sum", "ttft_n", "itl_sum", "itl_n"), 0.0
        )
        self.crash_after = int(os.environ.get("RAYBENCH_FAKE_CRASH_AFTER_REQUESTS", "0"))
        self.ttft_ms = _env_float("RAYBENCH_FAKE_TTFT_MS", 5.0)
        self.itl_ms = _env_float("RAYBENCH_FAKE_ITL_MS", 2.0)
        self.nodes: list[dict[str, Any]] = [node_report(config)]  # every node of a multi-node launch

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get(_HEALTH.get(self.config.kind, "/health"), self._health)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/fake/nodes", self._nodes)  # test-only: which node ran where, with which GPUs
        app.router.add_post("/v1/completions", self._complete)
        app.router.add_post("/v1/chat/completions", self._complete)
        for path, body in self._info_routes().items():
            app.router.add_get(path, self._json(body))
        if self.config.kind == "trtllm":
            app.router.add_get("/metrics", self._iteration_stats)
            if self.config.metrics:  # return_perf_metrics: trtllm-serve mounts Prometheus here
                app.router.add_get("/prometheus/metrics", self._metrics)
        elif self.config.metrics:
            app.router.add_get("/metrics", self._metrics)
        return app

    def _info_routes(self) -> dict[str, dict[str, Any]]:
        c = self.config
        routes: dict[str, dict[str, dict[str, Any]]] = {
            "vllm": {"/version": {"version": FAKE_VERSION}},
            "sglang": {
                "/get_model_info": {"model_path": c.model, "is_generation": True},
                "/get_server_info": {"version": FAKE_VERSION, "tp_size": c.args.get("tp_size")},
            },
            "trtllm": {"/version": {"version": FAKE_VERSION}},
            "tgi": {"/info": {"model_id": c.model, "version": FAKE_VERSION, "max_concurrent_requests": 128}},
            "llamacpp": {"/props": {"build_info": f"b0-{FAKE_VERSION}", "total_slots": c.max_num_seqs}},
        }
        return routes.get(c.kind, {})

    def _json(self, body: dict[str, Any]) -> Any:
        async def handler(_request: web.Request) -> web.Response:
            if not self.loaded:
                return web.json_response({"error": "loading"}, status=503)
            return web.json_response(body)

        return handler

    async def _health(self, _request: web.Request) -> web.Response:
        if not self.loaded:  # llama.cpp's exact answer while loading
            error = {"code": 503, "message": "Loading model", "type": "unavailable_error"}
            return web.json_response({"error": error}, status=503)
        return web.json_response({"status": "ok"}) if self.config.kind == "llamacpp" else web.Response(status=200)

    async def _nodes(self, _request: web.Request) -> web.Response:
        return web.json_response({"nnodes": self.config.nnodes, "nodes": self.nodes})

    async def _models(self, _request: web.Request) -> web.Response:
        if not self.loaded:
            return web.json_response({"error": {"code": 503, "message": "Loading model"}}, status=503)
        return web.json_response({"object": "list", "data": [{"id": self.config.served_model, "object": "model"}]})

    async def _complete(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        if body.get("model") != self.config.served_model:
            error = {"message": f"The model `{body.get('model')}` does not exist.", "type": "NotFoundError"}
            return web.json_response({"error": error, "code": 404}, status=404)
        self.requests += 1
        chat = request.path.endswith("/chat/completions")
        prompt = body.get("messages", [{}])[-1].get("content", "") if chat else str(body.get("prompt", ""))
        tokens = int(body.get("max_tokens") or body.get("max_completion_tokens") or 16)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        self.running += 1
        try:
            await self._stream(response, chat, len(prompt.split()) or 1, tokens)
        finally:
            self.running -= 1
        return response

    async def _stream(self, response: web.StreamResponse, chat: bool, prompt_tokens: int, tokens: int) -> None:
        start = time.perf_counter()
        model = self.config.served_model
        for i in range(tokens):
            await asyncio.sleep(max(start + (self.ttft_ms + i * self.itl_ms) / 1e3 - time.perf_counter(), 0))
            if self.crash_after and self.requests > self.crash_after:
                print("fake engine: simulated fatal CUDA error", file=sys.stderr, flush=True)
                os._exit(3)
            if i == 0:
                self.counters["ttft_sum"] += time.perf_counter() - start
                self.counters["ttft_n"] += 1
            else:
                self.counters["itl_sum"] += self.itl_ms / 1e3
                self.counters["itl_n"] += 1
            delta = {"content": "x "} if chat else None
            choice: dict[str, Any] = {"index": 0, "delta": delta} if chat else {"index": 0, "text": "x "}
            choice["finish_reason"] = "length" if i == tokens - 1 else None
            kind = "chat.completion.chunk" if chat else "text_completion"
            await _send(response, {"id": "f", "object": kind, "model": model, "choices": [choice]})
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": tokens, "total_tokens": prompt_tokens + tokens}
        await _send(response, {"id": "f", "object": "x", "model": model, "choices": [], "usage": usage})
        await response.write(b"data: [DONE]\n\n")
        c = self.counters
        c["prompt"] += prompt_tokens
        c["generation"] += tokens
        c["queries"] += prompt_tokens
        c["hits"] += prompt_tokens // 2

    async def _metrics(self, _request: web.Request) -> web.Response:
        from raybench.testing.engines.exposition import render

        return web.Response(text=render(self), content_type="text/plain")

    async def _iteration_stats(self, _request: web.Request) -> web.Response:
        kv = {"maxNumBlocks": 64, "usedNumBlocks": self.running, "cacheHitRate": 0.5}
        stats = [{"iter": self.requests, "numActiveRequests": self.running, "numQueuedRequests": 0, "kvCacheStats": kv}]
        return web.json_response(stats)


async def _send(response: web.StreamResponse, payload: dict[str, Any]) -> None:
    await response.write(b"data: " + json.dumps(payload).encode() + b"\n\n")


async def serve(config: FakeConfig) -> None:
    """Load (sleep), bind, serve until killed; a worker child lives in the same process group."""
    sleeper = shutil.which("sleep")
    worker = subprocess.Popen([sleeper, "3600"] if sleeper else [sys.executable, "-c", "import time; time.sleep(3600)"])
    print(f"fake {config.kind}: worker pid {worker.pid}", flush=True)
    if config.node_rank > 0:  # serves no HTTP: joins rank 0 and lives as long as it does
        await join_rank0(config)
        return
    engine = FakeEngine(config)
    if config.nnodes > 1:
        _rendezvous, engine.nodes = await gather_nodes(config)
    runner = web.AppRunner(engine.app(), access_log=None)
    await runner.setup()
    load_s = _env_float("RAYBENCH_FAKE_LOAD_S", 0.5)
    if config.kind not in _BINDS_LATE:
        await web.TCPSite(runner, config.host, config.port).start()
    print(f"fake {config.kind}: loading {config.model} ({load_s:g} s)", flush=True)
    await asyncio.sleep(load_s)
    if config.kind in _BINDS_LATE:
        await web.TCPSite(runner, config.host, config.port).start()
    engine.loaded = True
    print(f"fake {config.kind}: ready on {config.host}:{config.port} serving {config.served_model}", flush=True)
    await asyncio.Event().wait()

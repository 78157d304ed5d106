"""Each kind's fake launched as raybench launches engines (guarded process group), without Ray:
readiness rule, version probe, metrics parsing, SSE streaming, crash detection and teardown."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from raybench.config.engine import ENGINE_SPECS
from raybench.config.job import ModelSpec
from raybench.deploy.identity import server_version
from raybench.deploy.process import ServerProcess, free_port, wait_group_gone
from raybench.deploy.scrape import MetricsScraper
from raybench.engines import adapter_for
from raybench.engines.readiness import check_ready, wait_ready
from raybench.engines.server import ServerEngineAdapter
from raybench.testing.engines import FAKE_KINDS, fake_launcher
from raybench.testing.engines.server import FAKE_VERSION

MODEL = ModelSpec(name="tiny-model", precision="bf16")


def _adapter(kind: str, env: dict[str, str]) -> ServerEngineAdapter:
    fields: dict[str, Any] = {"kind": kind, "env": env, "max_num_seqs": 4}
    if kind == "llamacpp":
        fields.update(model_path="/models/tiny.gguf", precision="gguf")
    if kind != "ray_serve_llm":
        fields["launcher"] = fake_launcher(kind)
    adapter = adapter_for(ENGINE_SPECS[kind].model_validate(fields), MODEL, f"{kind}-0")
    assert isinstance(adapter, ServerEngineAdapter)
    return adapter


def _launch(adapter: ServerEngineAdapter, tmp_path: Path) -> tuple[ServerProcess, str]:
    port = free_port("127.0.0.1")
    plan = adapter.launch_plan("127.0.0.1", port)
    if adapter.kind == "ray_serve_llm":  # its launcher is raybench's own Serve app; swap in the fake
        plan.argv[:3] = fake_launcher("ray_serve_llm")
    return ServerProcess(plan, tmp_path / "replica-0.log", grace_s=2.0), f"http://127.0.0.1:{port}"


async def _stream(base_url: str, model: str) -> list[str]:
    body = {"model": model, "prompt": "a b c", "max_tokens": 4, "stream": True}
    async with aiohttp.ClientSession() as session, session.post(base_url + "/v1/completions", json=body) as r:
        text = await r.text()
    return [line[6:] for line in text.splitlines() if line.startswith("data: ")]


@pytest.mark.parametrize("kind", FAKE_KINDS)
def test_fake_lifecycle(kind: str, tmp_path: Path) -> None:
    adapter = _adapter(kind, {"RAYBENCH_FAKE_LOAD_S": "0.3"})
    process, base_url = _launch(adapter, tmp_path)
    try:
        rule = adapter.readiness()
        state = asyncio.run(wait_ready(base_url, adapter.served_model, 20, rule.health_path, process.alive,
                                       extra_paths=rule.extra_paths))  # fmt: skip
        assert state.ready, (state.reason, process.log_tail())
        events = asyncio.run(_stream(base_url, adapter.served_model))
        assert events[-1] == "[DONE]"
        assert json.loads(events[-2])["usage"]["completion_tokens"] == 4
        version = asyncio.run(server_version(base_url, adapter.version_probe()))
        assert version is None if adapter.version_probe() is None else FAKE_VERSION in str(version)
        scraper = MetricsScraper([base_url], adapter.metric_map())
        scraper.scrape_once()
        # Ray Serve LLM's metrics come from Ray's metrics export, not the app port (test_server_metrics.py)
        names = adapter.metric_map().names if adapter.metric_map().target == "server" else {}
        got = {r["metric"]: r["value"] for r in scraper.stop() or scraper._rows}
        if names:
            assert "running_requests" in got and set(got) <= {*names, "kv_cache_usage"}, got
        if "generation_tokens_total" in names:
            assert got["generation_tokens_total"] == 4.0, got
    finally:
        code = process.stop()
    assert code is not None
    assert wait_group_gone(process.pgid), "engine processes outlived teardown"


def test_llamacpp_health_is_503_while_loading(tmp_path: Path) -> None:
    adapter = _adapter("llamacpp", {"RAYBENCH_FAKE_LOAD_S": "3"})
    process, base_url = _launch(adapter, tmp_path)
    try:
        deadline = time.monotonic() + 10
        state = asyncio.run(check_ready(base_url, adapter.served_model, "/health"))
        while "ClientConnectorError" in state.reason and time.monotonic() < deadline:
            time.sleep(0.1)
            state = asyncio.run(check_ready(base_url, adapter.served_model, "/health"))
        assert not state.ready
        assert state.reason == "/health answered HTTP 503"
    finally:
        process.stop()
    assert wait_group_gone(process.pgid)


def test_crash_mid_stream_is_detected_with_its_status(tmp_path: Path) -> None:
    adapter = _adapter("vllm", {"RAYBENCH_FAKE_LOAD_S": "0.1", "RAYBENCH_FAKE_CRASH_AFTER_REQUESTS": "1"})
    process, base_url = _launch(adapter, tmp_path)
    try:
        assert asyncio.run(wait_ready(base_url, adapter.served_model, 20, "/health", process.alive)).ready
        asyncio.run(_stream(base_url, adapter.served_model))
        with pytest.raises(aiohttp.ClientError):
            asyncio.run(_stream(base_url, adapter.served_model))
        deadline = time.monotonic() + 10
        while process.alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert process.exit_code() == 3
        assert "engine exited with status 3" in process.log_tail()
    finally:
        process.stop()
    assert wait_group_gone(process.pgid), "the engine's worker outlived the crash"

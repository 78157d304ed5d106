"""Tests of the simulated engine's OpenAI-compatible HTTP server, /metrics, and CLI."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestClient, TestServer

from raybench.engines.sim import SCHEDULER_KEY, SimConfig, build_app, parse_args

pytestmark = pytest.mark.timeout(15)

MODEL = "sim-test"
# Llama-3.1-8B FP8 on one H100: about 4 ms per iteration.
FAST = SimConfig(model=MODEL, model_preset="llama-3.1-8b", tp=1, max_num_seqs=4, block_size=2)

Chunk = dict[str, Any]


async def make_client(config: SimConfig) -> TestClient[Any, Any]:
    client: TestClient[Any, Any] = TestClient(TestServer(build_app(config)))
    await client.start_server()
    return client


@pytest.fixture
async def client() -> AsyncIterator[TestClient[Any, Any]]:
    client = await make_client(FAST)
    yield client
    await client.close()


async def read_sse(response: aiohttp.ClientResponse) -> tuple[list[Chunk], bool]:
    """All `data:` payloads of a stream, and whether it ended with [DONE]."""
    chunks: list[Chunk] = []
    async for raw in response.content:
        line = raw.decode().strip()
        if not line:
            continue
        assert line.startswith("data: "), line
        if line == "data: [DONE]":
            return chunks, True
        chunks.append(json.loads(line.removeprefix("data: ")))
    return chunks, False


async def stream(client: TestClient[Any, Any], path: str, body: Chunk) -> list[Chunk]:
    async with client.post(path, json={"model": MODEL, "stream": True, **body}) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/event-stream")
        chunks, done = await read_sse(response)
    assert done
    return chunks


async def test_health_and_models(client: TestClient[Any, Any]) -> None:
    response = await client.get("/health")
    assert (response.status, await response.text()) == (200, "ok")
    models = await (await client.get("/v1/models")).json()
    assert models["object"] == "list"
    assert [m["id"] for m in models["data"]] == [MODEL]


async def test_streaming_completion(client: TestClient[Any, Any]) -> None:
    chunks = await stream(client, "/v1/completions", {"prompt": "one two three", "max_tokens": 5})
    assert [c["choices"][0]["text"] for c in chunks] == ["t0 ", "t1 ", "t2 ", "t3 ", "t4 "]
    assert [c["choices"][0]["finish_reason"] for c in chunks] == [None] * 4 + ["length"]
    assert {c["object"] for c in chunks} == {"text_completion"}
    assert {c["model"] for c in chunks} == {MODEL}
    assert len({c["id"] for c in chunks}) == 1
    assert all("usage" not in c for c in chunks)


async def test_streaming_chat_with_role_chunk_and_usage(client: TestClient[Any, Any]) -> None:
    body = {
        "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi there"}],
        "max_completion_tokens": 3,
        "stream_options": {"include_usage": True},
        "ignore_eos": True,
        "min_tokens": 3,
    }
    chunks = await stream(client, "/v1/chat/completions", body)
    role, *tokens, usage = chunks
    assert role["choices"] == [
        {"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None, "finish_reason": None}
    ]
    assert [c["choices"][0]["delta"] for c in tokens] == [{"content": f"t{i} "} for i in range(3)]
    assert tokens[-1]["choices"][0]["finish_reason"] == "length"
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert usage["choices"] == []
    assert usage["usage"] == {
        "prompt_tokens": 4,
        "completion_tokens": 3,
        "total_tokens": 7,
        "prompt_tokens_details": {"cached_tokens": 0},
    }


async def test_continuous_usage_stats_on_every_chunk(client: TestClient[Any, Any]) -> None:
    options = {"include_usage": True, "continuous_usage_stats": True}
    body = {"prompt": "a b", "max_tokens": 3, "stream_options": options}
    chunks = await stream(client, "/v1/completions", body)
    assert [c["usage"]["completion_tokens"] for c in chunks] == [1, 2, 3, 3]
    assert {c["usage"]["prompt_tokens"] for c in chunks} == {2}


async def test_non_streaming_completion_and_chat(client: TestClient[Any, Any]) -> None:
    response = await client.post("/v1/completions", json={"model": MODEL, "prompt": [5, 6, 7], "max_tokens": 4})
    body = await response.json()
    assert body["object"] == "text_completion"
    assert body["choices"][0]["text"] == "t0 t1 t2 t3 "
    assert body["choices"][0]["finish_reason"] == "length"
    assert body["usage"]["prompt_tokens"] == 3 and body["usage"]["completion_tokens"] == 4
    assert body["usage"]["total_tokens"] == 7

    messages = [{"role": "user", "content": [{"type": "text", "text": "x y"}]}]
    response = await client.post("/v1/chat/completions", json={"messages": messages})
    body = await response.json()
    assert body["object"] == "chat.completion"
    assert body["choices"][0]["message"] == {
        "role": "assistant",
        "content": "".join(f"t{i} " for i in range(16)),
    }
    assert body["usage"]["prompt_tokens"] == 2 and body["usage"]["completion_tokens"] == 16


async def test_metrics_names_and_counts(client: TestClient[Any, Any]) -> None:
    await client.post("/v1/completions", json={"prompt": "a b c", "max_tokens": 2})
    await stream(client, "/v1/chat/completions", {"messages": [{"role": "user", "content": "d e"}], "max_tokens": 5})
    response = await client.get("/metrics")
    assert response.headers["Content-Type"].startswith("text/plain")
    text = await response.text()
    samples = dict(line.rsplit(" ", 1) for line in text.splitlines() if not line.startswith("#"))
    label = f'{{model_name="{MODEL}"}}'
    expected = {
        "vllm:num_requests_running": 0,
        "vllm:num_requests_waiting": 0,
        "vllm:kv_cache_usage_perc": 0,
        "vllm:gpu_cache_usage_perc": 0,
        "vllm:num_preemptions_total": 0,
        "vllm:prefix_cache_queries_total": 5,
        "vllm:prefix_cache_hits_total": 0,
        "vllm:prompt_tokens_total": 5,
        "vllm:generation_tokens_total": 7,
        "vllm:request_success_total": 2,
    }
    assert {name: float(samples[name + label]) for name in expected} == expected
    for name in expected:
        assert f"# HELP {name} " in text
        assert f"# TYPE {name} " in text
    assert float(samples["process_cpu_seconds_total"]) > 0
    assert float(samples["raybench_sim_cpu_seconds_total"]) == float(samples["process_cpu_seconds_total"])
    assert float(samples["raybench_sim_wakeup_late_seconds_total"]) >= 0


@pytest.mark.parametrize(
    ("path", "payload", "status"),
    [
        ("/v1/completions", b"{not json", 400),
        ("/v1/completions", b"[1, 2]", 400),
        ("/v1/completions", b'{"max_tokens": 3}', 400),
        ("/v1/completions", b'{"prompt": "a", "max_tokens": 0}', 400),
        ("/v1/completions", b'{"prompt": "a", "stream_options": {"include_usage": true}}', 400),
        ("/v1/completions", b'{"prompt": "a", "max_tokens": 2, "min_tokens": 3}', 400),
        ("/v1/completions", b'{"prompt": ["a", "b"]}', 400),
        ("/v1/chat/completions", b'{"prompt": "a"}', 400),
        ("/v1/chat/completions", b'{"messages": "hello"}', 400),
        ("/v1/completions", b'{"model": "other", "prompt": "a"}', 404),
        ("/v1/chat/completions", b'{"model": "other", "messages": [{"role": "user", "content": "a"}]}', 404),
    ],
)
async def test_bad_requests_get_openai_errors(
    client: TestClient[Any, Any], path: str, payload: bytes, status: int
) -> None:
    response = await client.post(path, data=payload, headers={"Content-Type": "application/json"})
    assert response.status == status
    error = (await response.json())["error"]
    assert error["code"] == status
    assert error["type"] == "invalid_request_error"
    assert error["message"]


async def test_disconnect_mid_stream_cancels_the_request(client: TestClient[Any, Any]) -> None:
    scheduler = client.app[SCHEDULER_KEY]
    response = await client.post("/v1/completions", json={"prompt": "a", "max_tokens": 100_000, "stream": True})
    lines = 0
    async for raw in response.content:
        lines += raw.startswith(b"data: ")
        if lines == 3:
            break
    assert scheduler.stats().running == 1
    response.close()
    for _ in range(200):
        if scheduler.stats().running == 0:
            break
        await asyncio.sleep(0.01)
    assert scheduler.stats().running == 0
    assert scheduler.stats().requests_cancelled == 1


async def test_disconnect_while_waiting_for_a_non_streaming_response(client: TestClient[Any, Any]) -> None:
    scheduler = client.app[SCHEDULER_KEY]
    body = {"prompt": "a", "max_tokens": 100_000}
    with pytest.raises(asyncio.TimeoutError):
        await client.post("/v1/completions", json=body, timeout=aiohttp.ClientTimeout(total=0.1))
    for _ in range(200):
        if scheduler.stats().running == 0:
            break
        await asyncio.sleep(0.01)
    assert scheduler.stats().running == 0
    assert scheduler.stats().requests_cancelled == 1


async def test_concurrency_beyond_max_num_seqs_raises_ttft() -> None:
    config = SimConfig(model=MODEL, max_num_seqs=2, iteration_overhead_ms=20.0)
    client = await make_client(config)
    loop = asyncio.get_running_loop()

    async def ttft_s() -> float:
        start = loop.time()
        async with client.post("/v1/completions", json={"prompt": "a", "max_tokens": 5, "stream": True}) as r:
            await r.content.readline()
            first = loop.time() - start
            await r.read()
            return first

    try:
        ttfts = sorted(await asyncio.gather(*(ttft_s() for _ in range(4))))
    finally:
        await client.close()
    assert ttfts[2] - ttfts[1] > 0.050  # the last two waited ~5 iterations of 20 ms for a slot


def test_parse_args_defaults_flags_and_json() -> None:
    args = parse_args(["--port", "9000"])
    assert (args.host, args.port, args.config) == ("127.0.0.1", 9000, SimConfig())
    argv = ["--model", "m", "--max-num-seqs", "3", "--iteration-overhead-ms", "2", "--enable-prefix-caching", "false"]
    argv += ["--config-json", '{"gpu": "h200", "max_num_seqs": 5, "hbm_gb_s": 4000}']
    config = parse_args(argv).config
    assert config == SimConfig(
        model="m", gpu="h200", max_num_seqs=3, iteration_overhead_ms=2.0, enable_prefix_caching=False, hbm_gb_s=4000
    )
    for bad in (["--max-num-seqs", "0"], ["--gpu", "tpu"], ["--config-json", '{"warp": 1}'], ["--tp", "x"]):
        with pytest.raises(SystemExit) as exited:
            parse_args(bad)
        assert exited.value.code == 2


async def test_repeated_prompt_reports_cached_tokens(client: TestClient[Any, Any]) -> None:
    options = {"include_usage": True}
    body = {"prompt": "a b c d e f g", "max_tokens": 2, "stream_options": options}
    first = (await stream(client, "/v1/completions", body))[-1]["usage"]
    again = (await stream(client, "/v1/completions", body))[-1]["usage"]
    assert first["prompt_tokens_details"] == {"cached_tokens": 0}
    assert again["prompt_tokens_details"] == {"cached_tokens": 6}  # 3 full blocks of 2; the last token recomputes
    response = await client.post("/v1/completions", json={"prompt": "a b c d e f x", "max_tokens": 1})
    assert (await response.json())["usage"]["prompt_tokens_details"] == {"cached_tokens": 6}


async def test_request_larger_than_the_kv_cache_is_rejected() -> None:
    client = await make_client(SimConfig(model=MODEL, kv_cache_tokens=64, block_size=16))
    try:
        response = await client.post("/v1/completions", json={"prompt": "a b", "max_tokens": 100})
        assert response.status == 400
        assert "exceed the KV cache" in (await response.json())["error"]["message"]
    finally:
        await client.close()


async def test_cli_serves_until_sigterm_and_ends_open_streams() -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "raybench.engines.sim", "--port", "0", "--model", MODEL,
        "--iteration-overhead-ms", "1",
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        line = (await asyncio.wait_for(process.stdout.readline(), 10)).decode()
        assert line.startswith("raybench-sim ready on http://127.0.0.1:")
        url = line.split()[-1]
        described = (await asyncio.wait_for(process.stdout.readline(), 10)).decode()
        assert "llama-3.1-70b fp8 on 4x h100-sxm" in described and "kv_cache_tokens=" in described
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{url}/health") as health:
                assert health.status == 200
            body = {"prompt": "a", "max_tokens": 100_000, "stream": True}
            async with session.post(f"{url}/v1/completions", json=body) as response:
                await response.content.readline()
                process.send_signal(signal.SIGTERM)
                chunks, done = await read_sse(response)
        assert done
        assert "shutting down" in chunks[-1]["error"]["message"]
        assert await asyncio.wait_for(process.wait(), 10) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_disaggregated_engine_streams_every_token_and_reports_both_pools() -> None:
    config = SimConfig(model=MODEL, model_preset="llama-3.1-8b", tp=1, prefill_workers=1, decode_workers=2)
    client = await make_client(config)
    try:
        body = {"prompt": "a b c", "max_tokens": 4, "stream_options": {"include_usage": True}}
        chunks = await stream(client, "/v1/completions", body)
        assert [c["choices"][0]["text"] for c in chunks[:-1]] == ["t0 ", "t1 ", "t2 ", "t3 "]
        assert chunks[-1]["usage"]["completion_tokens"] == 4
        text = await (await client.get("/metrics")).text()
        samples = dict(line.rsplit(" ", 1) for line in text.splitlines() if not line.startswith("#"))
        label = f'{{model_name="{MODEL}"}}'
        assert float(samples[f"vllm:request_success_total{label}"]) == 1  # finished once, on the decode side
        assert float(samples[f"vllm:generation_tokens_total{label}"]) == 4  # 1 from prefill + 3 from decode
        assert float(samples[f"vllm:prompt_tokens_total{label}"]) == 3
        assert client.app[SCHEDULER_KEY].transfers == 1  # type: ignore[attr-defined]
    finally:
        await client.close()

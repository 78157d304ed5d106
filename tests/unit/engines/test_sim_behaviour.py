"""Behaviour of the simulated engine under load, in virtual time: it must act like a real engine, for its reasons."""

from __future__ import annotations

from dataclasses import replace

import pytest

from raybench.engines.sim import SimConfig
from raybench.engines.sim.planning import LoadResult, closed_loop

pytestmark = pytest.mark.timeout(60)

LLAMA_8B = SimConfig(model_preset="llama-3.1-8b", gpu="h100-sxm", precision="bf16", tp=1)


async def run(config: SimConfig, concurrency: int, **kwargs: int | float) -> LoadResult:
    options: dict[str, float] = {"isl": 512, "osl": 128, "duration_s": 10.0, **kwargs}
    return await closed_loop(config, concurrency, **options)  # type: ignore[arg-type]


async def test_throughput_rises_until_batch_saturation_while_itl_rises() -> None:
    config = replace(LLAMA_8B, max_num_seqs=32)
    steps = {c: await run(config, c) for c in (1, 4, 16, 32, 64)}
    throughput = [steps[c].throughput_tok_s for c in (1, 4, 16, 32)]
    itl = [steps[c].p(steps[c].itl_ms, 50) for c in (1, 4, 16, 32)]
    assert throughput == sorted(throughput) and throughput[-1] > 10 * throughput[0]
    assert itl == sorted(itl) and itl[-1] > 1.1 * itl[0]
    # Past max_num_seqs the batch is saturated: no more throughput, requests queue, TTFT grows.
    assert steps[64].throughput_tok_s == pytest.approx(steps[32].throughput_tok_s, rel=0.08)
    assert steps[64].max_running == 32 and steps[64].max_waiting >= 32
    assert steps[64].p(steps[64].ttft_ms, 50) > 5 * steps[32].p(steps[32].ttft_ms, 50)


async def test_kv_exhaustion_queues_requests_and_grows_ttft() -> None:
    small = replace(LLAMA_8B, kv_cache_tokens=8192)  # ~12 requests of 640 tokens
    roomy = await run(LLAMA_8B, 32)
    full = await run(small, 32)
    assert roomy.max_kv_usage < 0.2 and full.max_kv_usage > 0.95
    assert roomy.max_waiting == 0 or roomy.max_running == 32
    assert full.max_running < 16 and full.max_waiting > 16
    assert full.p(full.ttft_ms, 50) > 5 * roomy.p(roomy.ttft_ms, 50)
    assert full.throughput_tok_s < roomy.throughput_tok_s


async def test_kv_pressure_preempts_under_vllm_but_never_under_trtllm_reservation() -> None:
    # Admission only checks the prompt's blocks (vLLM): decodes then run out and preempt the newest.
    tight = replace(LLAMA_8B, kv_cache_tokens=4096)
    vllm = await run(tight, 16, isl=256, osl=512)
    trtllm = await run(replace(tight, profile="trtllm"), 16, isl=256, osl=512)
    assert vllm.preemptions > 0 and vllm.requests > 0
    assert trtllm.preemptions == 0 and trtllm.requests > 0


async def test_shared_prefix_gets_lower_ttft_with_prefix_caching() -> None:
    load = {"isl": 4096, "osl": 32, "shared_prefix_tokens": 3584}
    on = await run(replace(LLAMA_8B, enable_prefix_caching=True), 8, **load)
    off = await run(replace(LLAMA_8B, enable_prefix_caching=False), 8, **load)
    # The first 8 arrive together, before the prefix is cached; every later one hits it.
    assert on.cached_tokens >= 3584 * (on.requests - 8) and off.cached_tokens == 0
    assert on.p(on.ttft_ms, 50) < 0.5 * off.p(off.ttft_ms, 50)


async def test_tensor_parallel_4_has_lower_itl_than_1() -> None:
    tp1 = await run(LLAMA_8B, 1, duration_s=2.0)
    tp4 = await run(replace(LLAMA_8B, tp=4), 1, duration_s=2.0)
    assert tp4.p(tp4.itl_ms, 50) < 0.6 * tp1.p(tp1.itl_ms, 50)


async def test_fp8_decode_itl_lower_than_bf16_by_about_the_weight_bytes_ratio() -> None:
    # 70B on 4 GPUs at low concurrency is bandwidth-bound: half the weight bytes, nearly half the ITL
    # (not quite: the all-reduces and the per-iteration overhead do not shrink).
    seventy = SimConfig(model_preset="llama-3.1-70b", tp=4)
    fp8 = await run(replace(seventy, precision="fp8"), 1, duration_s=2.0)
    bf16 = await run(replace(seventy, precision="bf16"), 1, duration_s=2.0)
    ratio = bf16.p(bf16.itl_ms, 50) / fp8.p(fp8.itl_ms, 50)
    assert 1.5 < ratio <= 2.0


async def test_disaggregation_removes_prefill_interference_from_itl() -> None:
    # Every 4th prompt is 16k tokens: aggregated, its prefill chunks stall every decode in the batch.
    seventy = {"model_preset": "llama-3.1-70b", "precision": "fp8", "tp": 4, "max_num_seqs": 64}
    load = {"isl": 512, "osl": 256, "long_prompt_every": 4, "long_isl": 16384, "duration_s": 15.0}
    aggregated = await run(SimConfig(**seventy), 16, **load)
    disaggregated = await run(SimConfig(**seventy, prefill_workers=1, decode_workers=1), 16, **load)
    agg_p99, dis_p99 = aggregated.p(aggregated.itl_ms, 99), disaggregated.p(disaggregated.itl_ms, 99)
    assert dis_p99 < 0.5 * agg_p99
    assert disaggregated.p(disaggregated.itl_ms, 99) < 1.5 * disaggregated.p(disaggregated.itl_ms, 50)

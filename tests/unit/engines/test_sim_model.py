"""Tests of the simulated engine's performance model: presets, overrides, roofline, KV capacity, the spec."""

from __future__ import annotations

from dataclasses import replace

import pytest
from pydantic import ValidationError

from raybench.config.engine import SimulatedEngineSpec
from raybench.engines.sim import BatchShape, RooflineCostModel, SimConfig, kv_bytes_per_token
from raybench.engines.sim.presets import GPUS, MODELS, PRECISIONS, PROFILES


def decode(batch: int, context: int) -> BatchShape:
    shape = BatchShape()
    for _ in range(batch):
        shape = shape.plus(1, context, decoding=True)
    return shape


def prefill(tokens: int) -> BatchShape:
    return BatchShape().plus(tokens, 0, decoding=False)


def model(config: SimConfig) -> RooflineCostModel:
    return RooflineCostModel(config.resolve())


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("gpu", sorted(GPUS))
def test_every_model_on_every_gpu_fits_at_tp8_with_fp8(name: str, gpu: str) -> None:
    resolved = SimConfig(model_preset=name, gpu=gpu, precision="fp8", tp=8).resolve()
    assert resolved.kv_cache_tokens > 100_000


def test_every_profile_and_precision_resolves() -> None:
    for profile in PROFILES:
        for precision in PRECISIONS:
            assert SimConfig(profile=profile, precision=precision).resolve().profile == PROFILES[profile]


def test_decode_is_bandwidth_bound_and_large_prefill_compute_bound() -> None:
    roofline = model(SimConfig())
    small = roofline.breakdown(decode(1, 1024))
    big = roofline.breakdown(prefill(8192))
    assert small.memory_s > 10 * small.compute_s
    assert big.compute_s > 3 * big.memory_s


def test_decode_reads_the_weights_once_per_iteration_whatever_the_batch() -> None:
    roofline = model(SimConfig(model_preset="llama-3.1-8b", tp=1, precision="bf16"))
    one, sixteen = roofline.iteration_time_s(decode(1, 256)), roofline.iteration_time_s(decode(16, 256))
    assert sixteen < 1.3 * one  # 16x the tokens for < 1.3x the time: why batching pays
    assert roofline.iteration_time_s(decode(16, 8192)) > 1.5 * sixteen  # long contexts: KV reads dominate


def test_single_request_itl_is_weight_bytes_over_effective_bandwidth_plus_overhead() -> None:
    config = SimConfig(model_preset="llama-3.1-8b", gpu="h100-sxm", precision="bf16", tp=1)
    expected_s = 8.03e9 * 2 / (3350e9 * 0.85) + 0.8e-3
    assert model(config).iteration_time_s(decode(1, 1)) == pytest.approx(expected_s, rel=0.01)


def test_every_preset_field_is_overridable() -> None:
    base = SimConfig(model_preset="llama-3.1-8b", tp=1, precision="bf16")
    t = model(base).iteration_time_s(decode(1, 512))
    assert model(replace(base, hbm_gb_s=3350 * 2)).iteration_time_s(decode(1, 512)) < 0.6 * t
    assert model(replace(base, weight_bytes=1.0)).iteration_time_s(decode(1, 512)) < 0.6 * t
    assert model(replace(base, iteration_overhead_ms=10.0)).iteration_time_s(decode(1, 512)) > t + 0.009
    assert model(replace(base, compute_efficiency=0.1)).iteration_time_s(prefill(4096)) > 4 * model(
        base
    ).iteration_time_s(prefill(4096))
    assert replace(base, memory_gb=40).resolve().kv_cache_tokens < base.resolve().kv_cache_tokens / 2
    assert replace(base, num_kv_heads=4).resolve().kv_cache_tokens == pytest.approx(
        2 * base.resolve().kv_cache_tokens, rel=0.01
    )
    assert replace(base, tflops=100.0).resolve().tflops == 100.0


def test_moe_reads_only_routed_experts_at_batch_one() -> None:
    roofline = RooflineCostModel(SimConfig(model_preset="mixtral-8x7b", precision="bf16", tp=2).resolve())
    all_weights = 46.70e9 * 2
    assert roofline.weight_bytes_touched(1) == pytest.approx(12.88e9 * 2, rel=0.01)
    assert roofline.weight_bytes_touched(64) == pytest.approx(all_weights, rel=0.01)


def test_kv_capacity_is_free_memory_over_kv_bytes_per_token() -> None:
    config = SimConfig(model_preset="llama-3.1-70b", gpu="h100-sxm", precision="fp8", tp=4)
    resolved = config.resolve()
    assert kv_bytes_per_token(resolved) == 2 * 80 * 8 * 128 * 1.0
    free_per_gpu = 80e9 * 0.9 - 70.55e9 / 4 - 2 * (1 << 30)
    assert resolved.kv_cache_tokens == pytest.approx(free_per_gpu / (kv_bytes_per_token(resolved) / 4), rel=0.001)
    lower = replace(config, gpu_memory_utilization=0.5).resolve().kv_cache_tokens
    assert lower < resolved.kv_cache_tokens


def test_weights_that_do_not_fit_are_refused_with_a_fix() -> None:
    with pytest.raises(ValueError, match="raise tp, choose a smaller precision or a larger gpu"):
        SimConfig(model_preset="llama-3.1-70b", precision="bf16", tp=1)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("gpu", "tpu-v5", "unknown gpu 'tpu-v5'; known: a100-80gb, b200, h100-sxm, h200, l40s"),
        ("profile", "ollama", "unknown profile 'ollama'; known: sglang, trtllm, vllm"),
        ("precision", "fp3", "unknown precision 'fp3'"),
        ("model_preset", "gpt-5", "unknown model_preset 'gpt-5'"),
        ("time_scale", 0.0, "time_scale must be > 0"),
        ("gpu_memory_utilization", 1.5, "gpu_memory_utilization"),
    ],
)
def test_bad_config_values_say_what_to_write(field: str, value: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SimConfig(**{field: value})  # type: ignore[arg-type]


def test_engine_spec_defaults_to_70b_fp8_on_4_h100_and_passes_overrides() -> None:
    spec = SimulatedEngineSpec(kind="simulated", hbm_gb_s=4000, max_num_seqs=8, replicas=2)
    assert (spec.model_preset, spec.precision, spec.gpu, spec.tp, spec.profile) == (
        "llama-3.1-70b",
        "fp8",
        "h100-sxm",
        4,
        "vllm",
    )
    config = SimConfig(**spec.sim_config())
    assert (config.hbm_gb_s, config.max_num_seqs) == (4000, 8)
    assert "replicas" not in spec.sim_config() and "kind" not in spec.sim_config()


def test_engine_spec_rejects_unknown_presets_and_keys() -> None:
    with pytest.raises(ValidationError, match="unknown gpu 'h900'; known"):
        SimulatedEngineSpec(kind="simulated", gpu="h900")
    with pytest.raises(ValidationError, match="raise tp"):
        SimulatedEngineSpec(kind="simulated", precision="bf16", tp=1)
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        SimulatedEngineSpec.model_validate({"kind": "simulated", "decode_ms_per_seq": 0.9})

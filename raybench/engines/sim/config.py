"""Configuration of one simulated engine server: presets by name, every preset field overridable.

`SimConfig` is what `python -m raybench.engines.sim` runs; `resolve()` applies the overrides to
the named presets and checks the result (the weights must fit, the limits must be positive).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, fields
from typing import TypeVar

from raybench.engines.sim.presets import (
    GPUS,
    MODELS,
    PRECISIONS,
    PROFILES,
    EngineProfile,
    GpuPreset,
    ModelPreset,
    PrecisionPreset,
    lookup,
)

__all__ = ["OVERRIDE_FIELDS", "Resolved", "SimConfig"]

# Which preset each override field belongs to (the field name is the preset's own).
OVERRIDE_FIELDS: dict[str, tuple[str, ...]] = {
    "model": ("params_b", "active_params_b", "num_layers", "hidden_size", "num_heads", "num_kv_heads", "head_dim"),
    "gpu": ("hbm_gb_s", "memory_gb", "interconnect_gb_s", "allreduce_latency_us"),
    "precision": ("weight_bytes", "kv_bytes"),
    "profile": ("compute_efficiency", "bandwidth_efficiency", "attention_efficiency", "iteration_overhead_ms"),
}
_GIB = 1 << 30
_P = TypeVar("_P", ModelPreset, GpuPreset, PrecisionPreset, EngineProfile)


@dataclass(frozen=True)
class Resolved:
    """The presets after overrides, plus the serving limits: all the performance model needs."""

    model: ModelPreset
    gpu: GpuPreset
    precision: PrecisionPreset
    profile: EngineProfile
    tp: int
    tflops: float  # dense TFLOP/s of one GPU for this precision's compute type
    max_num_seqs: int
    max_num_batched_tokens: int
    enable_chunked_prefill: bool
    enable_prefix_caching: bool
    block_size: int
    kv_cache_tokens: int  # KV capacity of one TP group (one engine instance), in tokens


@dataclass(frozen=True)
class SimConfig:
    """What one simulated engine serves and on what it is modelled. None: take the preset's value."""

    model: str = "raybench-sim"
    profile: str = "vllm"
    model_preset: str = "llama-3.1-70b"
    gpu: str = "h100-sxm"
    precision: str = "fp8"
    tp: int = 4
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    enable_chunked_prefill: bool = True
    enable_prefix_caching: bool | None = None
    block_size: int | None = None
    gpu_memory_utilization: float = 0.9
    kv_cache_tokens: int | None = None
    prefill_workers: int = 0
    decode_workers: int = 1
    kv_link_gb_s: float = 50.0
    time_scale: float = 1.0
    params_b: float | None = None
    active_params_b: float | None = None
    num_layers: int | None = None
    hidden_size: int | None = None
    num_heads: int | None = None
    num_kv_heads: int | None = None
    head_dim: int | None = None
    tflops: float | None = None
    hbm_gb_s: float | None = None
    memory_gb: float | None = None
    interconnect_gb_s: float | None = None
    allreduce_latency_us: float | None = None
    weight_bytes: float | None = None
    kv_bytes: float | None = None
    compute_efficiency: float | None = None
    bandwidth_efficiency: float | None = None
    attention_efficiency: float | None = None
    iteration_overhead_ms: float | None = None

    def __post_init__(self) -> None:
        if not self.model:
            raise ValueError("model must be a non-empty name, e.g. 'raybench-sim'")
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, int | float) and not isinstance(value, bool) and not value >= 0:
                raise ValueError(f"{f.name} must be >= 0, got {value!r}")
        if self.tp < 1 or self.decode_workers < 1:
            raise ValueError("tp and decode_workers must be >= 1")
        if not 0 < self.gpu_memory_utilization <= 1:
            raise ValueError(f"gpu_memory_utilization must be in (0, 1], got {self.gpu_memory_utilization}")
        if not (self.time_scale > 0 and math.isfinite(self.time_scale)):
            raise ValueError(f"time_scale must be > 0 (2.0 runs twice as fast as real time), got {self.time_scale}")
        self.resolve()

    @property
    def disaggregated(self) -> bool:
        return self.prefill_workers > 0

    def resolve(self) -> Resolved:
        """Presets with overrides applied; ValueError with a fix when the combination cannot run."""
        model = self._override(lookup(MODELS, self.model_preset, "model_preset"), "model")
        gpu = self._override(lookup(GPUS, self.gpu, "gpu"), "gpu")
        precision = self._override(lookup(PRECISIONS, self.precision, "precision"), "precision")
        profile = self._override(lookup(PROFILES, self.profile, "profile"), "profile")
        for name in ("max_num_seqs", "max_num_batched_tokens", "block_size"):
            if getattr(self, name) == 0:
                raise ValueError(f"{name} must be >= 1")
        block_size = self.block_size or profile.block_size
        return Resolved(
            model=model,
            gpu=gpu,
            precision=precision,
            profile=profile,
            tp=self.tp,
            tflops=self.tflops if self.tflops is not None else gpu.tflops(precision.compute),
            max_num_seqs=self.max_num_seqs or profile.max_num_seqs,
            max_num_batched_tokens=self.max_num_batched_tokens or profile.max_num_batched_tokens,
            enable_chunked_prefill=self.enable_chunked_prefill,
            enable_prefix_caching=(
                profile.enable_prefix_caching if self.enable_prefix_caching is None else self.enable_prefix_caching
            ),
            block_size=block_size,
            kv_cache_tokens=self._kv_cache_tokens(model, gpu, precision, block_size),
        )

    def _override(self, preset: _P, group: str) -> _P:
        changes = {name: getattr(self, name) for name in OVERRIDE_FIELDS[group] if getattr(self, name) is not None}
        return dataclasses.replace(preset, **changes)

    def _kv_cache_tokens(self, model: ModelPreset, gpu: GpuPreset, precision: PrecisionPreset, block: int) -> int:
        if self.kv_cache_tokens is not None:
            return max(self.kv_cache_tokens, block)
        weights_gb = model.params_b * precision.weight_bytes / self.tp
        # vLLM-style: utilization x memory, minus weights, minus activations/CUDA graphs (~2 GiB).
        free_bytes = (gpu.memory_gb * self.gpu_memory_utilization - weights_gb) * 1e9 - 2 * _GIB
        per_token = 2 * model.num_layers * max(model.num_kv_heads / self.tp, 1) * model.head_dim * precision.kv_bytes
        tokens = int(free_bytes // per_token) // block * block
        if tokens < block:
            raise ValueError(
                f"{model.params_b:g}B params at {precision.weight_bytes:g} bytes on tp={self.tp} need "
                f"{weights_gb:.1f} GB per GPU, leaving no KV cache in {gpu.memory_gb:g} GB x "
                f"{self.gpu_memory_utilization}; raise tp, choose a smaller precision or a larger gpu"
            )
        return tokens

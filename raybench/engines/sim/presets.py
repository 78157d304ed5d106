"""Presets of the simulated engine: models, GPUs, precisions and engine profiles, by name.

Every number here is a public figure (model `config.json`, vendor datasheet) or a calibrated
efficiency; `docs/simulator.md` says which measurements each was checked against. Any field can
be overridden from the job spec; these are only the starting points.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeVar

__all__ = [
    "GPUS",
    "MODELS",
    "PRECISIONS",
    "PROFILES",
    "EngineProfile",
    "GpuPreset",
    "ModelPreset",
    "PrecisionPreset",
    "SchedulingPolicy",
    "lookup",
]

SchedulingPolicy = Literal["fcfs", "lpm", "reserve"]


@dataclass(frozen=True)
class ModelPreset:
    """A transformer's shape. MoE models also give active params and expert counts."""

    params_b: float  # total parameters, billions (all weights held in memory)
    active_params_b: float  # parameters used per token (= params_b for dense models)
    num_layers: int
    hidden_size: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    num_experts: int = 1
    experts_per_token: int = 1


@dataclass(frozen=True)
class GpuPreset:
    """One GPU: dense tensor TFLOP/s per compute type, HBM, and its link to its TP peers."""

    tflops_bf16: float
    tflops_fp8: float | None  # None: no FP8 tensor cores (FP8 weights run weight-only at bf16)
    tflops_int8: float
    hbm_gb_s: float
    memory_gb: float
    interconnect_gb_s: float  # per-direction bandwidth to peers (NVLink, or PCIe without it)
    allreduce_latency_us: float  # fixed cost of one small all-reduce over that link

    def tflops(self, compute: str) -> float:
        if compute == "fp8" and self.tflops_fp8 is not None:
            return self.tflops_fp8
        return self.tflops_int8 if compute == "int8" else self.tflops_bf16


@dataclass(frozen=True)
class PrecisionPreset:
    """Bytes per weight and per KV element, and which tensor-core type the matmuls use."""

    weight_bytes: float
    kv_bytes: float
    compute: Literal["bf16", "fp8", "int8"]


@dataclass(frozen=True)
class EngineProfile:
    """How an engine turns the hardware into iterations: efficiency, overhead, scheduling."""

    compute_efficiency: float  # achieved fraction of dense tensor TFLOP/s
    bandwidth_efficiency: float  # achieved fraction of HBM bandwidth streaming weights
    attention_efficiency: float  # achieved fraction of HBM bandwidth reading the paged KV cache
    iteration_overhead_ms: float  # per-iteration time not hidden behind the GPU (scheduling, launch)
    max_num_seqs: int
    max_num_batched_tokens: int  # chunked-prefill token budget per iteration
    enable_prefix_caching: bool
    block_size: int  # tokens per KV block
    policy: SchedulingPolicy


# Shapes from each model's Hugging Face config.json; parameter counts from the model cards.
MODELS: dict[str, ModelPreset] = {
    "llama-3.1-8b": ModelPreset(8.03, 8.03, 32, 4096, 32, 8, 128),
    "llama-3.1-70b": ModelPreset(70.55, 70.55, 80, 8192, 64, 8, 128),
    "qwen-2.5-32b": ModelPreset(32.5, 32.5, 64, 5120, 40, 8, 128),
    "mixtral-8x7b": ModelPreset(46.70, 12.88, 32, 4096, 32, 8, 128, num_experts=8, experts_per_token=2),
}

# Dense (no sparsity) figures of the vendor datasheets; interconnect is per direction.
GPUS: dict[str, GpuPreset] = {
    "a100-80gb": GpuPreset(312.0, None, 624.0, 2039.0, 80.0, 300.0, 8.0),
    "h100-sxm": GpuPreset(989.0, 1979.0, 1979.0, 3350.0, 80.0, 450.0, 8.0),
    "h200": GpuPreset(989.0, 1979.0, 1979.0, 4800.0, 141.0, 450.0, 8.0),
    "l40s": GpuPreset(362.0, 733.0, 733.0, 864.0, 48.0, 32.0, 25.0),
    "b200": GpuPreset(2250.0, 4500.0, 4500.0, 8000.0, 180.0, 900.0, 6.0),
}

# fp8 assumes an FP8 KV cache too (vLLM --kv-cache-dtype fp8); override kv_bytes=2 for a bf16 cache.
# int8 is W8A8 (int8 tensor cores, bf16 KV); int4 is weight-only (W4A16: bf16 compute and KV).
PRECISIONS: dict[str, PrecisionPreset] = {
    "bf16": PrecisionPreset(2.0, 2.0, "bf16"),
    "fp16": PrecisionPreset(2.0, 2.0, "bf16"),
    "fp8": PrecisionPreset(1.0, 1.0, "fp8"),
    "int8": PrecisionPreset(1.0, 2.0, "int8"),
    "int4": PrecisionPreset(0.5, 2.0, "bf16"),
}

PROFILES: dict[str, EngineProfile] = {
    # FCFS, recompute-preempts the newest request; automatic prefix caching over 16-token blocks.
    "vllm": EngineProfile(0.55, 0.85, 0.58, 0.8, 256, 8192, True, 16, "fcfs"),
    # Radix-tree prefix cache with a cache-aware (longest-prefix-first) waiting queue; overlap
    # scheduling hides most CPU work behind the GPU.
    "sglang": EngineProfile(0.58, 0.86, 0.58, 0.5, 256, 8192, True, 16, "lpm"),
    # Guaranteed-no-evict capacity scheduler (admits only when the whole output fits); KV reuse off.
    "trtllm": EngineProfile(0.62, 0.88, 0.58, 0.4, 256, 8192, False, 32, "reserve"),
}

T = TypeVar("T")


def lookup(table: dict[str, T], name: str, what: str) -> T:
    """`table[name]` (case-insensitive), or a ValueError that lists the known names."""
    preset = table.get(name.lower())
    if preset is None:
        raise ValueError(f"unknown {what} {name!r}; known: {', '.join(sorted(table))}")
    return preset

"""The simulated engine against public measurements: one row per checked configuration, with the error.

    python benchmarks/sim_validation.py            # the table in docs/simulator.md
    python benchmarks/sim_validation.py --only T1  # rows whose key starts with T1

No GPU, no server, no network: every figure comes from the simulator's own performance model
(raybench.engines.sim), in one of four ways that mirror how the measurement was taken:

- `serve`: a closed-loop serving benchmark (vllm bench serve, genai-perf/AIPerf): `concurrency`
  users on the discrete-event engine in virtual time (planning.closed_loop); `tpot_ms` / `ttft_ms`
  are P50s (vllm bench serve's medians), `itl_mean_ms` / `ttft_mean_ms` means (genai-perf and
  AIPerf report averages: a request's ITL is (e2e - TTFT) / (tokens - 1)).
- `batch`: an offline batch run to completion (vLLM's benchmark_latency, TensorRT-LLM's static
  gptSessionBenchmark): `batch` sequences prefilled in chunks of the token budget, then decoded
  together to `osl` tokens; `e2e_ms` is the batch's time, `throughput_tok_s` batch x osl / time.
- `saturate`: maximum throughput with requests sent at an infinite rate (trtllm-bench): the batch
  is as large as guaranteed-no-evict admits (kv_cache_tokens / (isl + osl), capped by
  max_num_seqs), then as `batch`.
- `first_token`: one request's prefill of `isl` tokens (static first-token latency).
- `prefill`: `concurrency` prompts with lengths uniform in [1, isl] (a benchmark's random dataset
  with range ratio 0) prefilled back to back in chunks of the token budget; input tokens / time.

The source, exact configuration and measured figure of each row are in CHECKS; docs/simulator.md
explains the choices. Presets were not tuned to these rows except where docs/simulator.md says so.
"""

from __future__ import annotations

import argparse
import asyncio
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from raybench.engines.sim.config import SimConfig
from raybench.engines.sim.cost import BatchShape
from raybench.engines.sim.perf import RooflineCostModel
from raybench.engines.sim.planning import closed_loop

Method = Literal["serve", "batch", "saturate", "first_token", "prefill"]
Metric = Literal["tpot_ms", "ttft_ms", "itl_mean_ms", "ttft_mean_ms", "e2e_ms", "throughput_tok_s", "input_tok_s"]

TRTLLM_PERF = "TensorRT-LLM docs, Performance overview (trtllm-bench, PyTorch backend), total output tok/s"
TRTLLM_V05 = "TensorRT-LLM docs/source/performance.md (v0.5/0.6, static batching)"
VLLM_CI = "vLLM CI performance-benchmark (buildkite vllm/performance-benchmark build 9515), benchmark_latency"
NIM = "NVIDIA NIM LLM benchmarking docs 1.0.0, Performance, Llama-3.3-70b-instruct NIM 1.8.0"
# Llama 2 7B ("LLaMA 7B" in TensorRT-LLM's v0.5 tables): Llama-3.1-8B's preset with MHA and its own size.
LLAMA2_7B: dict[str, Any] = {
    "model_preset": "llama-3.1-8b",
    "params_b": 6.74,
    "active_params_b": 6.74,
    "num_kv_heads": 32,
}
LLAMA2_70B: dict[str, Any] = {"model_preset": "llama-3.1-70b", "params_b": 68.98, "active_params_b": 68.98}
TRT_SATURATE: dict[str, Any] = {"profile": "trtllm", "precision": "fp8", "max_num_seqs": 2048}
# B200 FP4 (NVFP4 weights, FP8 KV): dense FP4 tensor rate 9 PFLOP/s (half the sparse datasheet figure).
B200_FP4: dict[str, Any] = {"gpu": "b200", "weight_bytes": 0.5, "kv_bytes": 1.0, "tflops": 9000.0}


@dataclass(frozen=True)
class Check:
    """One public measurement and how to reproduce it with the simulator."""

    key: str
    what: str
    source: str
    config: dict[str, Any]
    method: Method
    metric: Metric
    measured: float
    isl: int
    osl: int
    concurrency: int = 1  # serve: users; batch: sequences
    extra: dict[str, Any] = field(default_factory=dict)


def _trt(key: str, what: str, cfg: dict[str, Any], isl: int, osl: int, measured: float) -> Check:
    return Check(key, what, TRTLLM_PERF, {**TRT_SATURATE, **cfg}, "saturate", "throughput_tok_s", measured, isl, osl)


CHECKS: list[Check] = [
    # --- vLLM, serving at low concurrency (bandwidth-bound decode) ---
    Check("L1", "Llama-3.1-8B BF16, 1x H100 SXM, vLLM 0.21, c=1, TPOT P50",
          "InferenceBench 'concurrency sweep' recipe (yobitelcomm.github.io/bench)",
          {"model_preset": "llama-3.1-8b", "precision": "bf16", "tp": 1}, "serve", "tpot_ms", 6.48, 1024, 128, 1),
    Check("L2", "same, c=4, TPOT P50", "InferenceBench (as L1)",
          {"model_preset": "llama-3.1-8b", "precision": "bf16", "tp": 1}, "serve", "tpot_ms", 6.59, 1024, 128, 4),
    Check("L3", "Llama-3.1-8B BF16, 1x A100 40GB, vLLM 0.23, 1024/128, c=1 (~75 tok/s)",
          "johnmusgrave.com, 'vLLM throughput-latency sweep on NVIDIA A100'",
          {"model_preset": "llama-3.1-8b", "precision": "bf16", "tp": 1, "gpu": "a100-80gb", "hbm_gb_s": 1555.0,
           "memory_gb": 40.0}, "serve", "tpot_ms", 13.3, 1024, 128, 1),
    # --- vLLM CI on H200 (BF16 checkpoints), offline batch 8, 32 in / 128 out, mean end-to-end latency ---
    Check("V1", "Llama-3.1-8B BF16, 1x H200, vLLM, batch 8, 32/128, e2e", VLLM_CI,
          {"model_preset": "llama-3.1-8b", "precision": "bf16", "tp": 1, "gpu": "h200"}, "batch", "e2e_ms",
          833.4, 32, 128, 8),
    Check("V2", "Llama-3-70B BF16, 4x H200 TP4, vLLM, batch 8, 32/128, e2e", VLLM_CI,
          {"model_preset": "llama-3.1-70b", "precision": "bf16", "tp": 4, "gpu": "h200"}, "batch", "e2e_ms",
          2077.5, 32, 128, 8),
    Check("V3", "Mixtral-8x7B BF16, 2x H200 TP2, vLLM, batch 8, 32/128, e2e", VLLM_CI,
          {"model_preset": "mixtral-8x7b", "precision": "bf16", "tp": 2, "gpu": "h200"}, "batch", "e2e_ms",
          1917.4, 32, 128, 8),
    # --- NIM (TensorRT-LLM inside), Llama-3.3-70B FP8 on 2x H100 TP2, serving ---
    Check("N1", "Llama-3.3-70B FP8, 2x H100 TP2, NIM 1.8.0, 5000/500, c=1, ITL", NIM,
          {"profile": "trtllm", "precision": "fp8", "tp": 2}, "serve", "itl_mean_ms", 18.58, 5000, 500, 1),
    Check("N2", "same, 5000/500, c=1, TTFT", NIM,
          {"profile": "trtllm", "precision": "fp8", "tp": 2}, "serve", "ttft_mean_ms", 406.77, 5000, 500, 1),
    Check("N3", "same, 500/2000, c=1, ITL", NIM,
          {"profile": "trtllm", "precision": "fp8", "tp": 2}, "serve", "itl_mean_ms", 18.91, 500, 2000, 1),
    Check("N4", "same, 5000/500, c=25, ITL", NIM,
          {"profile": "trtllm", "precision": "fp8", "tp": 2}, "serve", "itl_mean_ms", 38.75, 5000, 500, 25),
    # --- TensorRT-LLM maximum throughput (FP8 weights and KV) ---
    _trt("T1", "Llama-3.1-8B FP8, 1x H100, 128/2048", {"model_preset": "llama-3.1-8b", "tp": 1}, 128, 2048, 22714),
    _trt("T2", "Llama-3.1-8B FP8, 1x H100, 2048/128", {"model_preset": "llama-3.1-8b", "tp": 1}, 2048, 128, 3450),
    _trt("T3", "Llama-3.1-8B FP8, 1x H100, 1000/1000", {"model_preset": "llama-3.1-8b", "tp": 1}, 1000, 1000, 15220),
    _trt("T4", "Llama-3.1-8B FP8, 1x H200, 128/2048",
         {"model_preset": "llama-3.1-8b", "tp": 1, "gpu": "h200"}, 128, 2048, 26221),
    _trt("T5", "Llama-3.1-8B FP8, 1x H200, 2048/128",
         {"model_preset": "llama-3.1-8b", "tp": 1, "gpu": "h200"}, 2048, 128, 3538),
    _trt("T6", "Llama-3.3-70B FP8, 2x H100 TP2, 128/2048", {"tp": 2}, 128, 2048, 6651),
    _trt("T7", "Llama-3.3-70B FP8, 2x H100 TP2, 2048/128", {"tp": 2}, 2048, 128, 762),
    _trt("T8", "Llama-3.3-70B FP8, 2x H100 TP2, 1000/1000", {"tp": 2}, 1000, 1000, 4205),
    _trt("T9", "Llama-3.3-70B FP8, 1x H200, 128/2048", {"tp": 1, "gpu": "h200"}, 128, 2048, 4336),
    _trt("T10", "Llama-3.3-70B FP8, 1x H200, 2048/128", {"tp": 1, "gpu": "h200"}, 2048, 128, 442),
    _trt("T11", "Llama-3.3-70B FP8, 1x H200, 1000/1000", {"tp": 1, "gpu": "h200"}, 1000, 1000, 2909),
    _trt("T12", "Llama-3.3-70B FP4 (FP8 KV), 1x B200, 128/2048", {"tp": 1, **B200_FP4}, 128, 2048, 9922),
    _trt("T13", "Llama-3.3-70B FP4 (FP8 KV), 1x B200, 2048/128", {"tp": 1, **B200_FP4}, 2048, 128, 1339),
    # --- TensorRT-LLM v0.5/0.6 static batching: L40S and A100 (Llama 2 shapes) ---
    Check("S1", "Llama-2-7B FP8 (FP8 KV), 1x L40S, batch 64, 128/2048, out tok/s", TRTLLM_V05,
          {**LLAMA2_7B, "profile": "trtllm", "precision": "fp8", "tp": 1, "gpu": "l40s"}, "batch",
          "throughput_tok_s", 1622, 128, 2048, 64),
    Check("S2", "Llama-2-7B FP8 (FP8 KV), 1x L40S, batch 32, 2048/128, out tok/s", TRTLLM_V05,
          {**LLAMA2_7B, "profile": "trtllm", "precision": "fp8", "tp": 1, "gpu": "l40s"}, "batch",
          "throughput_tok_s", 581, 2048, 128, 32),
    Check("S3", "Llama-2-7B FP8, 1x L40S, batch 1, 2048 in, first-token latency", TRTLLM_V05,
          {**LLAMA2_7B, "profile": "trtllm", "precision": "fp8", "tp": 1, "gpu": "l40s"}, "first_token",
          "ttft_ms", 73, 2048, 1),
    Check("S4", "Llama-2-7B FP16, 1x A100, batch 60, 128/2048, out tok/s", TRTLLM_V05,
          {**LLAMA2_7B, "profile": "trtllm", "precision": "fp16", "tp": 1, "gpu": "a100-80gb"}, "batch",
          "throughput_tok_s", 1928, 128, 2048, 60),
    Check("S5", "Llama-2-7B FP16, 1x A100, batch 52, 2048/128, out tok/s", TRTLLM_V05,
          {**LLAMA2_7B, "profile": "trtllm", "precision": "fp16", "tp": 1, "gpu": "a100-80gb"}, "batch",
          "throughput_tok_s", 591, 2048, 128, 52),
    Check("S6", "Llama-2-7B FP16, 1x A100, batch 1, 2048 in, first-token latency", TRTLLM_V05,
          {**LLAMA2_7B, "profile": "trtllm", "precision": "fp16", "tp": 1, "gpu": "a100-80gb"}, "first_token",
          "ttft_ms", 133, 2048, 1),
    Check("S7", "Llama-2-70B FP16, 4x A100 TP4, batch 1, 2048 in, first-token latency", TRTLLM_V05,
          {**LLAMA2_70B, "profile": "trtllm", "precision": "fp16", "tp": 4, "gpu": "a100-80gb"}, "first_token",
          "ttft_ms", 377, 2048, 1),
    Check("S8", "Llama-2-7B FP8, 1x H100, batch 1, 2048 in, first-token latency", TRTLLM_V05,
          {**LLAMA2_7B, "profile": "trtllm", "precision": "fp8", "tp": 1}, "first_token", "ttft_ms", 36, 2048, 1),
    Check("S9", "Llama-2-70B FP8, 4x H100 TP4, batch 1, 2048 in, first-token latency", TRTLLM_V05,
          {**LLAMA2_70B, "profile": "trtllm", "precision": "fp8", "tp": 4}, "first_token", "ttft_ms", 109, 2048, 1),
    # --- SGLang: prefill throughput (1000 prompts at an infinite rate, 8 output tokens each) ---
    Check("G1", "Llama-3.1-8B BF16, 1x H100, SGLang (2024-08, torch.compile), random 8192 in / 8 out, input tok/s",
          "sgl-project/sglang pull request #1060 (benchmark in its description, 2024-08-13)",
          {"model_preset": "llama-3.1-8b", "profile": "sglang", "precision": "bf16", "tp": 1}, "prefill",
          "input_tok_s", 27670, 8192, 8, 1000),
    # --- Qwen 2.5 family (72B: the 32B preset's shape family, overridden) ---
    Check("Q1", "Qwen2.5-72B BF16 (assumed), 2x H100 TP2, 128/128, c=1, TPOT",
          "tenstorrent/tt-inference-server issue #143 (GPU reference sweep, 2025-04-01)",
          {"model_preset": "qwen-2.5-32b", "params_b": 72.7, "active_params_b": 72.7, "num_layers": 80,
           "hidden_size": 8192, "num_heads": 64, "precision": "bf16", "tp": 2, "gpu_memory_utilization": 0.98},
          "serve", "tpot_ms", 30.9, 128, 128, 1),
]  # fmt: skip


def _prefill_chunks(seqs: int, isl: int, budget: int) -> list[BatchShape]:
    """The iterations that prefill `seqs` prompts of `isl` tokens, packed into chunks of `budget` tokens."""
    chunks: list[BatchShape] = []
    shape, room = BatchShape(), budget
    for _ in range(seqs):
        done = 0
        while done < isl:
            take = min(isl - done, room)
            shape = shape.plus(take, done, decoding=False)
            done, room = done + take, room - take
            if room == 0:
                chunks.append(shape)
                shape, room = BatchShape(), budget
    if shape.num_seqs:
        chunks.append(shape)
    return chunks


def _prompt_lengths(count: int, max_len: int) -> list[int]:
    """`count` prompt lengths uniform in [1, max_len], from a fixed seed."""
    rng = np.random.default_rng(0)
    return [int(n) for n in rng.integers(1, max_len + 1, size=count)]


def prefill_throughput(config: SimConfig, lengths: list[int]) -> float:
    """Input tokens per second prefilling `lengths` back to back, packed into token-budget chunks."""
    resolved = config.resolve()
    cost = RooflineCostModel(resolved)
    chunks = [c for n in lengths for c in _prefill_chunks(1, n, resolved.max_num_batched_tokens)]
    # consecutive short prompts share an iteration: repack by budget, keeping each prompt's chunks in order
    seconds = sum(cost.iteration_time_s(c) for c in _pack(chunks, resolved.max_num_batched_tokens))
    return sum(lengths) / seconds


def _pack(chunks: list[BatchShape], budget: int) -> list[BatchShape]:
    """Merge consecutive chunks while their new tokens fit `budget`."""
    packed: list[BatchShape] = []
    for chunk in chunks:
        last = packed[-1] if packed else None
        if last is not None and last.new_tokens + chunk.new_tokens <= budget:
            packed[-1] = BatchShape(
                last.num_seqs + chunk.num_seqs, last.new_tokens + chunk.new_tokens, 0,
                last.context_tokens + chunk.context_tokens, last.attention_pairs + chunk.attention_pairs,
            )  # fmt: skip
        else:
            packed.append(chunk)
    return packed


def batch_cycle_s(config: SimConfig, seqs: int, isl: int, osl: int) -> float:
    """Seconds to prefill `seqs` prompts and decode them together to `osl` tokens (the first from prefill)."""
    resolved = config.resolve()
    cost = RooflineCostModel(resolved)
    total = sum(cost.iteration_time_s(c) for c in _prefill_chunks(seqs, isl, resolved.max_num_batched_tokens))
    for step in range(1, osl):
        context = isl + step - 1
        shape = BatchShape(seqs, seqs, seqs, seqs * context, seqs * (context + 1))
        total += cost.iteration_time_s(shape)
    return total


def saturated_batch(config: SimConfig, isl: int, osl: int) -> int:
    """How many requests guaranteed-no-evict admits at once: whole sequences that fit the KV cache."""
    resolved = config.resolve()
    return max(1, min(resolved.max_num_seqs, resolved.kv_cache_tokens // (isl + osl)))


def simulate(check: Check) -> float:
    """The simulator's figure for `check`'s metric, measured the way the source measured it."""
    config = SimConfig(**check.config)
    if check.method == "first_token":
        resolved = config.resolve()
        cost = RooflineCostModel(resolved)
        return 1e3 * sum(
            cost.iteration_time_s(c) for c in _prefill_chunks(1, check.isl, resolved.max_num_batched_tokens)
        )
    if check.method == "prefill":
        return prefill_throughput(config, _prompt_lengths(check.concurrency, check.isl))
    if check.method in ("batch", "saturate"):
        seqs = check.concurrency if check.method == "batch" else saturated_batch(config, check.isl, check.osl)
        cycle_s = batch_cycle_s(config, seqs, check.isl, check.osl)
        return 1e3 * cycle_s if check.metric == "e2e_ms" else seqs * check.osl / cycle_s
    single_request_s = batch_cycle_s(config, 1, check.isl, check.osl)
    duration_s = max(20.0, 6 * single_request_s)
    result = asyncio.run(
        closed_loop(config, check.concurrency, isl=check.isl, osl=check.osl, duration_s=duration_s,
                    warmup_s=2 * single_request_s)
    )  # fmt: skip
    values = result.itl_ms if check.metric in ("tpot_ms", "itl_mean_ms") else result.ttft_ms
    return result.p(values, 50) if check.metric in ("tpot_ms", "ttft_ms") else sum(values) / len(values)


def _fmt(value: float) -> str:
    return f"{value:,.0f}" if value >= 1000 else f"{value:.3g}" if value < 10 else f"{value:.1f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--only", default="", help="run only rows whose key starts with this")
    args = parser.parse_args(argv)
    print("| # | measurement | metric | measured | simulated | error |")
    print("|---|---|---|---|---|---|")
    for check in CHECKS:
        if not check.key.startswith(args.only):
            continue
        sim = simulate(check)
        error = 100.0 * (sim - check.measured) / check.measured
        row = [check.key, check.what, check.metric, _fmt(check.measured), _fmt(sim), f"{error:+.0f} %"]
        print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The `vllm` engine kind: `vllm serve MODEL` (vLLM's OpenAI-compatible server)."""

from __future__ import annotations

from raybench.config.engine import VllmEngineSpec
from raybench.engines.base import NodeRole, register
from raybench.engines.readiness import ReadinessRule
from raybench.engines.server import ServerEngineAdapter, flag, switch

__all__ = ["PRECISION_FLAGS", "VllmAdapter"]

# Weights: --dtype for unquantized checkpoints, --quantization for quantized ones (vLLM picks the
# Marlin kernels for awq/gptq by itself). fp8 on a BF16 checkpoint quantizes dynamically.
PRECISION_FLAGS: dict[str, list[str]] = {
    "fp16": ["--dtype", "float16"],
    "bf16": ["--dtype", "bfloat16"],
    "fp8": ["--quantization", "fp8"],
    "int4-awq": ["--quantization", "awq"],
    "gptq": ["--quantization", "gptq"],
    "nvfp4": ["--quantization", "modelopt_fp4"],
    "mxfp4": ["--quantization", "mxfp4"],
}
KV_FLAGS = {"fp8": ["--kv-cache-dtype", "fp8"]}  # fp16/bf16: "auto" follows the model dtype


@register("vllm")
class VllmAdapter(ServerEngineAdapter):
    """Readiness: GET /health 200 (answers only once the engine is up), then the model in /v1/models."""

    spec: VllmEngineSpec
    motor_name = "vllm"
    package = "vllm"
    dialect = "vllm"

    def entrypoint(self) -> list[str]:
        return ["vllm", "serve"]

    def flags(self, host: str, port: int) -> list[str]:
        s = self.spec
        return [
            self.model.name,
            *flag("--host", host),
            *flag("--port", port),
            *flag("--served-model-name", self.served_model),
            *flag("--tensor-parallel-size", s.tensor_parallel_size),
            *flag("--pipeline-parallel-size", s.pipeline_parallel_size),
            *PRECISION_FLAGS.get(self.precision, []),
            *KV_FLAGS.get(s.kv_cache_dtype, []),
            *switch("--enable-prefix-caching", "--no-enable-prefix-caching", s.enable_prefix_caching),
            *switch("--enable-chunked-prefill", "--no-enable-chunked-prefill", s.enable_chunked_prefill),
            *flag("--max-num-seqs", s.max_num_seqs),
            *flag("--max-num-batched-tokens", s.max_num_batched_tokens),
            *flag("--gpu-memory-utilization", s.gpu_memory_utilization),
        ]

    def node_flags(self, role: NodeRole) -> list[str]:
        """vLLM's multiprocessing multi-node mode: the same `vllm serve` on every node, tp x pp spanning them;
        rank 0 serves the API, the other ranks run `--headless` (no API server)."""
        return [
            "--distributed-executor-backend", "mp", "--nnodes", str(role.nnodes), "--node-rank", str(role.rank),
            "--master-addr", role.master_addr, "--master-port", str(role.master_port),
            *(["--headless"] if role.rank else []),
        ]  # fmt: skip

    def readiness(self) -> ReadinessRule:
        return ReadinessRule("/health")

    def version_probe(self) -> tuple[str, str] | None:
        return ("/version", "version")

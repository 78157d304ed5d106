"""The `sglang` engine kind: `python -m sglang.launch_server --model-path MODEL`."""

from __future__ import annotations

from raybench.config.engine import SglangEngineSpec
from raybench.engines.base import NodeRole, register
from raybench.engines.readiness import ReadinessRule
from raybench.engines.server import ServerEngineAdapter, flag

__all__ = ["PRECISION_FLAGS", "SglangAdapter"]

PRECISION_FLAGS: dict[str, list[str]] = {
    "fp16": ["--dtype", "float16"],
    "bf16": ["--dtype", "bfloat16"],
    "fp8": ["--quantization", "fp8"],
    "int4-awq": ["--quantization", "awq"],
    "gptq": ["--quantization", "gptq"],
    "nvfp4": ["--quantization", "modelopt_fp4"],
    "mxfp4": ["--quantization", "mxfp4"],
}
KV_FLAGS = {"fp8": ["--kv-cache-dtype", "fp8_e4m3"]}


@register("sglang")
class SglangAdapter(ServerEngineAdapter):
    """Readiness: GET /health 200 and GET /get_model_info 200, then the model in /v1/models.

    Prefix caching (RadixAttention) and chunked prefill are on by default in SGLang; raybench only
    turns them off (`--disable-radix-cache`, `--chunked-prefill-size -1`) when the spec says false.
    """

    spec: SglangEngineSpec
    motor_name = "sglang"
    package = "sglang"
    dialect = "sglang"

    def entrypoint(self) -> list[str]:
        return ["python", "-m", "sglang.launch_server"]

    def flags(self, host: str, port: int) -> list[str]:
        s = self.spec
        chunk = -1 if s.enable_chunked_prefill is False else s.max_num_batched_tokens
        return [
            *flag("--model-path", self.model.name),
            *flag("--host", host),
            *flag("--port", port),
            *flag("--served-model-name", self.served_model),
            *flag("--tp-size", s.tensor_parallel_size),
            *flag("--pp-size", s.pipeline_parallel_size),
            *PRECISION_FLAGS.get(self.precision, []),
            *KV_FLAGS.get(s.kv_cache_dtype, []),
            *(["--disable-radix-cache"] if s.enable_prefix_caching is False else []),
            *flag("--chunked-prefill-size", chunk),
            *flag("--max-prefill-tokens", s.max_num_batched_tokens),
            *flag("--max-running-requests", s.max_num_seqs),
            *flag("--mem-fraction-static", s.gpu_memory_utilization),
            "--enable-metrics",
        ]

    def node_flags(self, role: NodeRole) -> list[str]:
        """SGLang's multi-node launch: the same command on every node, `--tp-size` spanning them; rank 0
        serves HTTP, the others only run their schedulers."""
        return [
            "--nnodes", str(role.nnodes), "--node-rank", str(role.rank),
            "--dist-init-addr", f"{role.master_addr}:{role.master_port}",
        ]  # fmt: skip

    def readiness(self) -> ReadinessRule:
        return ReadinessRule("/health", ("/get_model_info",))

    def version_probe(self) -> tuple[str, str] | None:
        return ("/get_server_info", "version")

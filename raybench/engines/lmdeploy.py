"""The `lmdeploy` engine kind: `lmdeploy serve api_server MODEL`."""

from __future__ import annotations

from raybench.config.engine import LmDeployEngineSpec
from raybench.engines.base import register
from raybench.engines.readiness import ReadinessRule
from raybench.engines.server import ServerEngineAdapter, flag

__all__ = ["PRECISION_FLAGS", "LmDeployAdapter"]

PRECISION_FLAGS: dict[str, list[str]] = {
    "fp16": ["--dtype", "float16"],
    "bf16": ["--dtype", "bfloat16"],
    "int4-awq": ["--model-format", "awq"],
    "gptq": ["--model-format", "gptq"],
}
KV_FLAGS = {"int8": ["--quant-policy", "8"], "int4": ["--quant-policy", "4"]}


@register("lmdeploy")
class LmDeployAdapter(ServerEngineAdapter):
    """Readiness: GET /health 200, then the model in /v1/models. Metrics need --enable-metrics."""

    spec: LmDeployEngineSpec
    motor_name = "lmdeploy"
    package = "lmdeploy"
    dialect = "lmdeploy"

    def entrypoint(self) -> list[str]:
        return ["lmdeploy", "serve", "api_server"]

    def flags(self, host: str, port: int) -> list[str]:
        s = self.spec
        return [
            self.model.name,
            *flag("--server-name", host),
            *flag("--server-port", port),
            *flag("--model-name", self.served_model),
            *flag("--backend", s.backend),
            *flag("--tp", s.tensor_parallel_size),
            *PRECISION_FLAGS.get(self.precision, []),
            *KV_FLAGS.get(s.kv_cache_dtype, []),
            *(["--enable-prefix-caching"] if s.enable_prefix_caching else []),
            *flag("--max-batch-size", s.max_num_seqs),
            *flag("--max-prefill-token-num", s.max_num_batched_tokens),
            *flag("--cache-max-entry-count", s.gpu_memory_utilization),
            "--enable-metrics",
        ]

    def readiness(self) -> ReadinessRule:
        return ReadinessRule("/health")

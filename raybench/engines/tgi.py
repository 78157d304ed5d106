"""The `tgi` engine kind: Hugging Face `text-generation-launcher --model-id MODEL`."""

from __future__ import annotations

from raybench.config.engine import TgiEngineSpec
from raybench.engines.base import LaunchPlan, register
from raybench.engines.readiness import ReadinessRule
from raybench.engines.server import ServerEngineAdapter, flag

__all__ = ["PRECISION_FLAGS", "TgiAdapter"]

PRECISION_FLAGS: dict[str, list[str]] = {
    "fp16": ["--dtype", "float16"],
    "bf16": ["--dtype", "bfloat16"],
    "fp8": ["--quantize", "fp8"],
    "int4-awq": ["--quantize", "awq"],
    "gptq": ["--quantize", "gptq"],
}
KV_FLAGS = {"fp8": ["--kv-cache-dtype", "fp8"]}


@register("tgi")
class TgiAdapter(ServerEngineAdapter):
    """Readiness: GET /health 200 and GET /info 200, then the model in /v1/models.

    Prefix caching is TGI's PREFIX_CACHING environment variable, not a flag.
    """

    spec: TgiEngineSpec
    motor_name = "tgi"
    package = None  # a Rust launcher; the server reports its version at /info
    dialect = "tgi"

    def entrypoint(self) -> list[str]:
        return ["text-generation-launcher"]

    def flags(self, host: str, port: int) -> list[str]:
        s = self.spec
        return [
            *flag("--model-id", self.model.name),
            *flag("--hostname", host),
            *flag("--port", port),
            *flag("--num-shard", s.tensor_parallel_size),
            *flag("--served-model-name", s.served_model_name),
            *PRECISION_FLAGS.get(self.precision, []),
            *KV_FLAGS.get(s.kv_cache_dtype, []),
            *flag("--max-batch-size", s.max_num_seqs),
            *flag("--max-batch-prefill-tokens", s.max_num_batched_tokens),
            *flag("--cuda-memory-fraction", s.gpu_memory_utilization),
        ]

    def launch_plan(self, host: str, port: int) -> LaunchPlan:
        plan = super().launch_plan(host, port)
        if self.spec.enable_prefix_caching is not None:
            plan.env["PREFIX_CACHING"] = "1" if self.spec.enable_prefix_caching else "0"
        return plan

    def readiness(self) -> ReadinessRule:
        return ReadinessRule("/health", ("/info",))

    def version_probe(self) -> tuple[str, str] | None:
        return ("/info", "version")

"""The `llamacpp` engine kind: llama.cpp's `llama-server -m FILE.gguf`."""

from __future__ import annotations

from raybench.config.engine import LlamaCppEngineSpec
from raybench.engines.base import register
from raybench.engines.readiness import ReadinessRule
from raybench.engines.server import ServerEngineAdapter, flag

__all__ = ["KV_TYPES", "LlamaCppAdapter"]

KV_TYPES = {"fp16": "f16", "bf16": "bf16", "int8": "q8_0", "int4": "q4_0"}


@register("llamacpp")
class LlamaCppAdapter(ServerEngineAdapter):
    """Readiness: GET /health answers 503 while the model loads and 200 once it is ready; then /v1/models.

    `max_num_seqs` is the number of slots (--parallel); the context is split among them.
    """

    spec: LlamaCppEngineSpec
    motor_name = "llamacpp"
    package = None  # a C++ binary; /props reports its build
    dialect = "llamacpp"

    def entrypoint(self) -> list[str]:
        return ["llama-server"]

    def flags(self, host: str, port: int) -> list[str]:
        s = self.spec
        kv = KV_TYPES.get(s.kv_cache_dtype)
        return [
            *flag("--model", s.model_path),
            *flag("--host", host),
            *flag("--port", port),
            *flag("--alias", self.served_model),
            *flag("--n-gpu-layers", s.n_gpu_layers),
            *flag("--parallel", s.max_num_seqs),
            *flag("--ctx-size", s.ctx_size),
            *flag("--batch-size", s.max_num_batched_tokens),
            *flag("--cache-type-k", kv),
            *flag("--cache-type-v", kv),
            "--cont-batching",
            "--metrics",
        ]

    def readiness(self) -> ReadinessRule:
        return ReadinessRule("/health")

    def version_probe(self) -> tuple[str, str] | None:
        return ("/props", "build_info")

"""The `trtllm` engine kind: `trtllm-serve MODEL` with LLM-API options in a generated YAML file."""

from __future__ import annotations

from typing import Any

import yaml

from raybench.config.engine import TrtLlmEngineSpec
from raybench.engines.base import LaunchPlan, register
from raybench.engines.readiness import ReadinessRule
from raybench.engines.server import ServerEngineAdapter, flag

__all__ = ["OPTIONS_FILE", "TrtLlmAdapter"]

OPTIONS_FILE = "extra_llm_api_options.yaml"
# Quantized weights come from the checkpoint itself (ModelOpt's hf_quant_config.json); only the
# unquantized dtype and the KV-cache dtype are options.
_DTYPES = {"fp16": "float16", "bf16": "bfloat16"}
_KV_DTYPES = {"fp8": "fp8", "int8": "int8"}


@register("trtllm")
class TrtLlmAdapter(ServerEngineAdapter):
    """Readiness: GET /health 200, then the model in /v1/models. Metrics (the `trtllm` dialect): Prometheus
    at /prometheus/metrics, mounted when `return_perf_metrics` is on (engine-side TTFT/TPOT histograms, KV
    usage, queue), and the JSON iteration stats at /metrics (`enable_iter_perf_stats`) that older releases
    have instead; raybench turns both on in the options file."""

    spec: TrtLlmEngineSpec
    motor_name = "trtllm"
    package = "tensorrt_llm"
    dialect = "trtllm"

    def entrypoint(self) -> list[str]:
        return ["trtllm-serve"]

    def flags(self, host: str, port: int) -> list[str]:
        s = self.spec
        return [
            self.model.name,
            *flag("--host", host),
            *flag("--port", port),
            *flag("--backend", s.backend),
            *flag("--tp_size", s.tensor_parallel_size),
            *flag("--pp_size", s.pipeline_parallel_size),
            *flag("--max_batch_size", s.max_num_seqs),
            *flag("--max_num_tokens", s.max_num_batched_tokens),
            *flag("--kv_cache_free_gpu_memory_fraction", s.gpu_memory_utilization),
            *flag("--served_model_name", s.served_model_name),
            *flag("--extra_llm_api_options", f"{LaunchPlan.WORKDIR}/{OPTIONS_FILE}"),
        ]

    def llm_api_options(self) -> dict[str, Any]:
        """The LLM-API options (TorchLlmArgs) the flags cannot express."""
        s = self.spec
        kv: dict[str, Any] = {}
        if s.kv_cache_dtype in _KV_DTYPES:
            kv["dtype"] = _KV_DTYPES[s.kv_cache_dtype]
        if s.enable_prefix_caching is not None:
            kv["enable_block_reuse"] = s.enable_prefix_caching
        options: dict[str, Any] = {"enable_iter_perf_stats": True, "return_perf_metrics": True}
        if kv:
            options["kv_cache_config"] = kv
        if s.enable_chunked_prefill is not None:
            options["enable_chunked_prefill"] = s.enable_chunked_prefill
        if self.precision in _DTYPES:
            options["dtype"] = _DTYPES[self.precision]
        return options

    def files(self) -> dict[str, str]:
        return {OPTIONS_FILE: yaml.safe_dump(self.llm_api_options(), sort_keys=True)}

    def readiness(self) -> ReadinessRule:
        return ReadinessRule("/health")

    def version_probe(self) -> tuple[str, str] | None:
        return ("/version", "version")

"""The `ray_serve_llm` engine kind: vLLM under Ray Serve LLM (LLMConfig + build_openai_app + serve.run).

raybench launches `python -m raybench.engines.ray_serve_llm --config-json ...` as the replica's server
process; that process joins the Ray cluster, starts Serve's HTTP proxy on the given host:port, runs the
OpenAI app (whose LLM deployment replicas take the GPUs, so the replica actor itself reserves none), and
deletes the application again on SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from typing import Any

from raybench.config.engine import RayServeLLMEngineSpec
from raybench.engines.base import register
from raybench.engines.readiness import ReadinessRule
from raybench.engines.server import ServerEngineAdapter

__all__ = ["APP_NAME", "RayServeLLMAdapter", "main"]

APP_NAME = "raybench-llm"
_DTYPES = {"fp16": "float16", "bf16": "bfloat16"}
_QUANT = {"fp8": "fp8", "int4-awq": "awq", "gptq": "gptq", "nvfp4": "modelopt_fp4", "mxfp4": "mxfp4"}


@register("ray_serve_llm")
class RayServeLLMAdapter(ServerEngineAdapter):
    """Readiness: Serve's proxy GET /-/healthz 200, then the model in /v1/models."""

    spec: RayServeLLMEngineSpec
    motor_name = "ray_serve_llm"
    package = "vllm"
    dialect = "ray_serve_llm"  # vLLM's metrics through Ray's metrics export (ray_vllm_*), not the app port

    @property
    def num_gpus(self) -> float:
        return 0.0  # Serve places the LLM deployment's replicas on GPUs itself

    def entrypoint(self) -> list[str]:
        return [sys.executable, "-m", "raybench.engines.ray_serve_llm"]

    def flags(self, host: str, port: int) -> list[str]:
        return ["--host", host, "--port", str(port), "--config-json", json.dumps(self.llm_config(), sort_keys=True)]

    def engine_kwargs(self) -> dict[str, Any]:
        s = self.spec
        kwargs: dict[str, Any] = {
            "tensor_parallel_size": s.tensor_parallel_size,
            "pipeline_parallel_size": s.pipeline_parallel_size,
        }
        optional = {
            "dtype": _DTYPES.get(self.precision),
            "quantization": _QUANT.get(self.precision),
            "kv_cache_dtype": "fp8" if s.kv_cache_dtype == "fp8" else None,
            "enable_prefix_caching": s.enable_prefix_caching,
            "enable_chunked_prefill": s.enable_chunked_prefill,
            "max_num_seqs": s.max_num_seqs,
            "max_num_batched_tokens": s.max_num_batched_tokens,
            "gpu_memory_utilization": s.gpu_memory_utilization,
        }
        kwargs.update({k: v for k, v in optional.items() if v is not None})
        return {**kwargs, **s.engine_kwargs}

    def llm_config(self) -> dict[str, Any]:
        """The keyword arguments of ray.serve.llm.LLMConfig."""
        s = self.spec
        config: dict[str, Any] = {
            "model_loading_config": {"model_id": self.served_model, "model_source": self.model.name},
            "deployment_config": {
                "autoscaling_config": {"min_replicas": s.min_replicas, "max_replicas": s.max_replicas}
            },
            "engine_kwargs": self.engine_kwargs(),
        }
        if s.accelerator_type:
            config["accelerator_type"] = s.accelerator_type
        return config

    def readiness(self) -> ReadinessRule:
        return ReadinessRule("/-/healthz")


def main(argv: list[str] | None = None) -> int:  # pragma: no cover - needs ray[llm] and GPUs
    """Run the Serve LLM app until SIGTERM, then delete it."""
    parser = argparse.ArgumentParser(prog="raybench.engines.ray_serve_llm")
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--config-json", required=True)
    args = parser.parse_args(argv)
    import ray
    from ray import serve
    from ray.serve.llm import LLMConfig, build_openai_app

    ray.init(address="auto")
    serve.start(http_options={"host": args.host, "port": args.port})
    app = build_openai_app({"llm_configs": [LLMConfig(**json.loads(args.config_json))]})
    serve.run(app, name=APP_NAME, blocking=False)
    print("raybench: Ray Serve LLM app running", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    serve.delete(APP_NAME)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

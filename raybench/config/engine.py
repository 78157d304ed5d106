"""Engines under test, discriminated by `kind`; each kind's spec lives here, its behaviour in engines/."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from raybench.config.base import StrictModel, no_secrets_in_env
from raybench.config.dynamo import DynamoEngineSpec

__all__ = [
    "ENGINE_KINDS",
    "ENGINE_SPECS",
    "DynamoEngineSpec",
    "EndpointEngineSpec",
    "EngineSpec",
    "LlamaCppEngineSpec",
    "LmDeployEngineSpec",
    "RayServeLLMEngineSpec",
    "ServerEngineSpec",
    "SglangEngineSpec",
    "SimulatedEngineSpec",
    "TgiEngineSpec",
    "TrtLlmEngineSpec",
    "VllmEngineSpec",
]


class _EngineBase(StrictModel):
    id: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    config: str = Field(default="", description="a short label of the configuration, shown in reports")


class SimulatedEngineSpec(_EngineBase):
    """The built-in simulated engine (no GPU): continuous batching over a roofline model of a preset.

    Presets by name (`model_preset`, `gpu`, `precision`, `profile`); every preset field can be
    overridden here, and None means "the preset's value". See docs/simulator.md.
    """

    kind: Literal["simulated"]
    profile: str = Field(default="vllm", description="engine profile: vllm, sglang or trtllm")
    model_preset: str = Field(default="llama-3.1-70b", description="llama-3.1-8b, llama-3.1-70b, qwen-2.5-32b, …")
    gpu: str = Field(default="h100-sxm", description="a100-80gb, h100-sxm, h200, l40s or b200")
    precision: str = Field(default="fp8", description="bf16, fp16, fp8, int8 or int4")
    tp: int = Field(default=4, ge=1, description="tensor-parallel GPUs per engine instance")
    max_num_seqs: int | None = Field(default=None, ge=1)
    max_num_batched_tokens: int | None = Field(default=None, ge=1, description="chunked-prefill token budget")
    enable_chunked_prefill: bool = True
    enable_prefix_caching: bool | None = None
    block_size: int | None = Field(default=None, ge=1)
    gpu_memory_utilization: float = Field(default=0.9, gt=0, le=1)
    kv_cache_tokens: int | None = Field(default=None, ge=1, description="KV capacity override, in tokens")
    prefill_workers: int = Field(default=0, ge=0, description="> 0: disaggregated prefill/decode pools")
    decode_workers: int = Field(default=1, ge=1)
    kv_link_gb_s: float = Field(default=50.0, gt=0, description="P/D KV-transfer bandwidth, GB/s")
    time_scale: float = Field(default=1.0, gt=0, description="2.0 runs twice as fast as real time")
    params_b: float | None = Field(default=None, gt=0)
    active_params_b: float | None = Field(default=None, gt=0)
    num_layers: int | None = Field(default=None, ge=1)
    hidden_size: int | None = Field(default=None, ge=1)
    num_heads: int | None = Field(default=None, ge=1)
    num_kv_heads: int | None = Field(default=None, ge=1)
    head_dim: int | None = Field(default=None, ge=1)
    tflops: float | None = Field(default=None, gt=0, description="dense TFLOP/s per GPU for this precision")
    hbm_gb_s: float | None = Field(default=None, gt=0)
    memory_gb: float | None = Field(default=None, gt=0)
    interconnect_gb_s: float | None = Field(default=None, gt=0)
    allreduce_latency_us: float | None = Field(default=None, ge=0)
    weight_bytes: float | None = Field(default=None, gt=0)
    kv_bytes: float | None = Field(default=None, gt=0)
    compute_efficiency: float | None = Field(default=None, gt=0, le=1)
    bandwidth_efficiency: float | None = Field(default=None, gt=0, le=1)
    attention_efficiency: float | None = Field(default=None, gt=0, le=1)
    iteration_overhead_ms: float | None = Field(default=None, ge=0)
    replicas: int = Field(default=1, ge=1)
    num_cpus: float = Field(default=0.5, gt=0)

    _NOT_SIM: ClassVar[frozenset[str]] = frozenset({"kind", "id", "config", "replicas", "num_cpus"})

    def sim_config(self) -> dict[str, Any]:
        """The fields the simulator itself takes (`raybench.engines.sim.SimConfig`), without None values."""
        return {k: v for k, v in self.model_dump().items() if k not in self._NOT_SIM and v is not None}

    @model_validator(mode="after")
    def _presets_fit(self) -> SimulatedEngineSpec:
        from raybench.engines.sim.config import SimConfig  # lazy: engines import this module

        SimConfig(**self.sim_config())  # unknown preset names, weights that do not fit: ValueError
        return self


class EndpointEngineSpec(_EngineBase):
    """An OpenAI-compatible server that already runs; raybench only checks it and drives it."""

    kind: Literal["endpoint"]
    base_url: str = Field(description="e.g. http://127.0.0.1:8000 (without /v1)")
    motor: str = Field(default="openai-compatible", description="engine name recorded as `motor`")
    motor_version: str = "unknown"
    api_key_env: str | None = Field(
        default=None, description="name of an environment variable holding the API key (never the key)"
    )
    health_path: str | None = Field(default="/health", description="liveness path; null when the server has none")
    ignore_eos: bool = Field(default=True, description="send ignore_eos/min_tokens to pin the output length")
    more_base_urls: list[str] = Field(default_factory=list, description="further replicas, load-balanced with base_url")
    balance: Literal["round_robin", "least_outstanding"] = "round_robin"
    metrics: Literal["vllm", "sglang", "lmdeploy", "tgi", "llamacpp"] | None = Field(
        default=None, description="Prometheus names the server exposes at /metrics (scraped during steps); null: none"
    )

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, e.g. http://127.0.0.1:8000; got {value!r}")
        return value.rstrip("/").removesuffix("/v1")

    @field_validator("more_base_urls")
    @classmethod
    def _urls(cls, value: list[str]) -> list[str]:
        return [cls._url(v) for v in value]


class ServerEngineSpec(_EngineBase):
    """What every launched engine server shares: model placement, precision, batching, pass-through args."""

    tensor_parallel_size: int = Field(default=1, ge=1, description="GPUs per replica = tp x pp")
    pipeline_parallel_size: int = Field(default=1, ge=1)
    precision: str | None = Field(
        default=None,
        description="fp16, bf16, fp8, int8-sq, int4-awq, gptq, nvfp4, mxfp4, gguf; default: model.precision",
    )
    kv_cache_dtype: Literal["auto", "fp16", "bf16", "fp8", "int8", "int4"] = "auto"
    enable_prefix_caching: bool | None = Field(default=None, description="null keeps the engine's default")
    enable_chunked_prefill: bool | None = Field(default=None, description="null keeps the engine's default")
    max_num_seqs: int | None = Field(default=None, ge=1, description="sequences batched per iteration")
    max_num_batched_tokens: int | None = Field(default=None, ge=1, description="tokens per iteration")
    gpu_memory_utilization: float | None = Field(default=None, gt=0, le=1)
    served_model_name: str | None = Field(default=None, description="default: model.name")
    port: int | None = Field(default=None, ge=1, le=65535, description="default: a free port")
    extra_args: list[str] = Field(default_factory=list, description="appended to the command line verbatim")
    env: dict[str, str] = Field(default_factory=dict, description="extra environment of the server process")
    launcher: list[str] | None = Field(
        default=None, description="replaces the engine's own command (e.g. a container wrapper); flags follow it"
    )
    replicas: int = Field(default=1, ge=1)
    balance: Literal["round_robin", "least_outstanding"] = "round_robin"
    num_cpus: float = Field(default=1.0, gt=0)
    num_gpus: float | None = Field(
        default=None, ge=0, description="GPUs reserved per replica; default tp x pp; 0 for CPU-only servers"
    )
    ready_timeout_s: float = Field(default=1800.0, gt=0, description="model load can take many minutes")
    nodes: int | None = Field(
        default=None,
        ge=1,
        description="nodes one replica spans, tp x pp GPUs split evenly over them; default: 1, or as many as "
        "tp x pp needs on the cluster's largest GPU nodes",
    )

    @field_validator("env")
    @classmethod
    def _no_secret_values(cls, value: dict[str, str]) -> dict[str, str]:
        return no_secrets_in_env(value, "the server inherits")

    # field -> why this kind has no such setting; leaving it at its default is the only valid value.
    unsupported: ClassVar[dict[str, str]] = {}
    # why one replica of this kind cannot span nodes; "" when it can (engines/<kind>.py has its node flags).
    multinode: ClassVar[str] = "raybench has no multi-node launch for this engine kind"

    @model_validator(mode="after")
    def _settings_supported(self) -> ServerEngineSpec:
        for name, reason in self.unsupported.items():
            if getattr(self, name) != type(self).model_fields[name].get_default(call_default_factory=True):
                raise ValueError(f"{name} is not supported by {getattr(self, 'kind', '?')}: {reason}")
        return self

    @model_validator(mode="after")
    def _nodes_fit(self) -> ServerEngineSpec:
        if self.nodes is None or self.nodes == 1:
            return self
        kind = getattr(self, "kind", "?")
        if self.multinode:
            raise ValueError(f"nodes: {self.nodes} is not supported by {kind}: {self.multinode}")
        if self.num_gpus is not None:
            raise ValueError(
                "num_gpus cannot be combined with nodes: each node gets tensor_parallel_size x "
                "pipeline_parallel_size / nodes GPUs; remove num_gpus"
            )
        gpus = self.tensor_parallel_size * self.pipeline_parallel_size
        if gpus % self.nodes:
            fits = ", ".join(str(n) for n in range(1, gpus + 1) if gpus % n == 0)
            raise ValueError(
                f"tensor_parallel_size x pipeline_parallel_size = {gpus} GPUs do not split evenly over "
                f"nodes: {self.nodes} (every node runs the same number of GPUs); write nodes: one of {fits}, "
                "or change the parallel sizes"
            )
        return self

    @model_validator(mode="after")
    def _precision_supported(self) -> ServerEngineSpec:
        from raybench.engines.precision import check_kv_cache_dtype, check_precision

        kind = str(getattr(self, "kind", ""))
        reason = check_precision(kind, self.precision) if self.precision is not None else None
        if reason:
            raise ValueError(f"precision {self.precision!r} on {kind}: {reason}")
        kv_reason = check_kv_cache_dtype(kind, self.kv_cache_dtype)
        if kv_reason:
            raise ValueError(f"kv_cache_dtype {self.kv_cache_dtype!r} on {kind}: {kv_reason}")
        return self


class VllmEngineSpec(ServerEngineSpec):
    """vLLM's OpenAI server: `vllm serve MODEL ...`."""

    kind: Literal["vllm"]
    multinode: ClassVar[str] = ""  # one `vllm serve` per node: --nnodes/--node-rank/--master-addr, --headless


class SglangEngineSpec(ServerEngineSpec):
    """SGLang: `python -m sglang.launch_server --model-path MODEL ...`."""

    kind: Literal["sglang"]
    multinode: ClassVar[str] = ""  # one launch_server per node: --nnodes/--node-rank/--dist-init-addr


class TrtLlmEngineSpec(ServerEngineSpec):
    """TensorRT-LLM: `trtllm-serve MODEL ...` (LLM-API options in a generated YAML)."""

    kind: Literal["trtllm"]
    backend: Literal["pytorch", "tensorrt"] = "pytorch"
    multinode: ClassVar[str] = (
        "trtllm-serve spans nodes only inside one MPI world (mpirun or srun with trtllm-llmapi-launch), which "
        "Ray-placed processes cannot form; launch it under Slurm/MPI and benchmark it as kind endpoint"
    )


class LmDeployEngineSpec(ServerEngineSpec):
    """LMDeploy: `lmdeploy serve api_server MODEL ...`."""

    kind: Literal["lmdeploy"]
    multinode: ClassVar[str] = "raybench launches lmdeploy api_server on one node; run a multi-node one as endpoint"
    backend: Literal["turbomind", "pytorch"] = "turbomind"
    unsupported: ClassVar[dict[str, str]] = {
        "pipeline_parallel_size": "api_server has no pipeline parallelism; use tensor_parallel_size",
        "enable_chunked_prefill": "LMDeploy always splits prefill by max_num_batched_tokens (--max-prefill-token-num)",
    }


class TgiEngineSpec(ServerEngineSpec):
    """Hugging Face TGI: `text-generation-launcher --model-id MODEL ...`."""

    kind: Literal["tgi"]
    multinode: ClassVar[str] = "TGI shards a model over the GPUs of one machine only (--num-shard)"
    unsupported: ClassVar[dict[str, str]] = {
        "pipeline_parallel_size": "TGI shards by tensor parallelism only (--num-shard)",
        "enable_chunked_prefill": "TGI v3 chunks prefill whenever its attention backend supports it; no switch",
    }


class LlamaCppEngineSpec(ServerEngineSpec):
    """llama.cpp's server: `llama-server -m FILE.gguf ...` (GGUF files only)."""

    kind: Literal["llamacpp"]
    multinode: ClassVar[str] = "llama-server runs on one machine (its RPC backend is not launched by raybench)"
    model_path: str = Field(min_length=1, description="the GGUF file to serve")
    n_gpu_layers: int = Field(default=-1, ge=-1, description="-1: every layer on the GPU")
    ctx_size: int | None = Field(default=None, ge=1, description="total context shared by all slots")
    unsupported: ClassVar[dict[str, str]] = {
        "pipeline_parallel_size": "llama.cpp splits layers over the visible GPUs itself; set tensor_parallel_size",
        "enable_chunked_prefill": "llama.cpp always processes prompts in --batch-size chunks",
        "enable_prefix_caching": "llama.cpp keeps each slot's prompt cache (cache_prompt) by default; no switch",
    }


class RayServeLLMEngineSpec(ServerEngineSpec):
    """vLLM under Ray Serve LLM: LLMConfig + build_openai_app + serve.run in a launched process."""

    kind: Literal["ray_serve_llm"]
    multinode: ClassVar[str] = (
        "Ray Serve LLM places each vLLM replica itself, across nodes when tp x pp needs it; leave nodes unset"
    )
    accelerator_type: str | None = Field(default=None, description="Ray accelerator type, e.g. H100")
    min_replicas: int = Field(default=1, ge=1, description="Serve autoscaling: replicas of the LLM deployment")
    max_replicas: int = Field(default=1, ge=1)
    engine_kwargs: dict[str, Any] = Field(default_factory=dict, description="further vLLM engine kwargs, verbatim")
    unsupported: ClassVar[dict[str, str]] = {
        "extra_args": "Ray Serve LLM takes vLLM options as engine_kwargs, not command-line flags",
        "launcher": "the Serve application is launched by raybench itself",
    }


EngineSpec = Annotated[
    SimulatedEngineSpec
    | EndpointEngineSpec
    | VllmEngineSpec
    | SglangEngineSpec
    | TrtLlmEngineSpec
    | LmDeployEngineSpec
    | TgiEngineSpec
    | LlamaCppEngineSpec
    | RayServeLLMEngineSpec
    | DynamoEngineSpec,
    Field(discriminator="kind"),
]
ENGINE_SPECS: dict[str, type[StrictModel]] = {
    "simulated": SimulatedEngineSpec,
    "endpoint": EndpointEngineSpec,
    "vllm": VllmEngineSpec,
    "sglang": SglangEngineSpec,
    "trtllm": TrtLlmEngineSpec,
    "lmdeploy": LmDeployEngineSpec,
    "tgi": TgiEngineSpec,
    "llamacpp": LlamaCppEngineSpec,
    "ray_serve_llm": RayServeLLMEngineSpec,
    "dynamo": DynamoEngineSpec,
}
ENGINE_KINDS = tuple(ENGINE_SPECS)

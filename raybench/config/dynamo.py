"""The `dynamo` engine spec: NVIDIA Dynamo's frontend and router over aggregated or prefill/decode worker pools."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from raybench.config.base import StrictModel, no_secrets_in_env

__all__ = ["DynamoEngineSpec", "DynamoFrontendSpec", "DynamoInfraSpec", "DynamoKvTransferSpec", "DynamoPoolSpec"]


class DynamoPoolSpec(StrictModel):
    """One worker pool (aggregated, prefill or decode): its size, GPUs per worker, and where it goes.

    Each pool gets its own Ray placement group, one bundle per worker; `node_resource` keeps the pool on
    the nodes that offer that custom resource (e.g. start prefill nodes with `--resources '{"prefill": 8}'`).
    """

    workers: int = Field(default=1, ge=1)
    tensor_parallel_size: int = Field(default=1, ge=1, description="GPUs per worker (tensor parallelism)")
    num_gpus: float | None = Field(
        default=None, ge=0, description="GPUs Ray reserves per worker; default tensor_parallel_size (mocker: 0)"
    )
    num_cpus: float = Field(default=1.0, gt=0)
    placement: Literal["PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD"] = "PACK"
    node_resource: str | None = Field(
        default=None, min_length=1, description="a custom Ray resource the pool's nodes offer; null: any node"
    )
    extra_args: list[str] = Field(default_factory=list, description="appended to this pool's worker command lines")
    env: dict[str, str] = Field(default_factory=dict)

    @field_validator("env")
    @classmethod
    def _env_ok(cls, value: dict[str, str]) -> dict[str, str]:
        return no_secrets_in_env(value, "the processes inherit")


class DynamoFrontendSpec(StrictModel):
    """`python -m dynamo.frontend`: the OpenAI HTTP server, pre-processor and router (on the head node)."""

    port: int | None = Field(default=None, ge=1, le=65535, description="default: a free port")
    num_cpus: float = Field(default=1.0, gt=0)
    extra_args: list[str] = Field(default_factory=list)


class DynamoInfraSpec(StrictModel):
    """Discovery and event plane: etcd + NATS started on the head node, existing ones, or file discovery."""

    discovery: Literal["etcd", "file"] = Field(
        default="etcd", description="etcd (multi-node), or file (a folder every process can read: one node or NFS)"
    )
    start: bool = Field(default=True, description="start etcd and NATS as supervised processes on the head node")
    etcd_endpoints: str | None = Field(
        default=None, description="existing etcd, e.g. http://etcd-host:2379 (start: false)"
    )
    nats_server: str | None = Field(
        default=None, description="existing NATS, e.g. nats://nats-host:4222 (start: false)"
    )
    nats: bool = Field(default=True, description="KV events over NATS; false: Dynamo's ZMQ event plane, no NATS")
    file_kv_dir: str | None = Field(default=None, description="file discovery folder; default: a fresh temporary one")
    ready_timeout_s: float = Field(default=60.0, gt=0)

    @model_validator(mode="after")
    def _consistent(self) -> DynamoInfraSpec:
        existing = [n for n in ("etcd_endpoints", "nats_server") if getattr(self, n)]
        if self.discovery == "file" and self.etcd_endpoints:
            raise ValueError("etcd_endpoints is set but discovery is file: set discovery: etcd, or drop etcd_endpoints")
        if self.start and existing:
            raise ValueError(f"{' and '.join(existing)} given with start: true; write start: false to use them")
        if not self.start and self.discovery == "etcd" and not self.etcd_endpoints:
            raise ValueError("start: false with etcd discovery needs etcd_endpoints: http://HOST:2379")
        if not self.start and self.nats and not self.nats_server:
            raise ValueError("start: false needs nats_server: nats://HOST:4222, or nats: false for the ZMQ event plane")
        return self


class DynamoKvTransferSpec(StrictModel):
    """How prefill workers hand the KV cache to decode workers (recorded in provenance)."""

    connector: Literal["nixl", "lmcache", "mooncake"] = Field(default="nixl", description="the KV connector")
    bandwidth_gb_s: float | None = Field(default=None, ge=0, description="mocker only: simulated link, GB/s")


class DynamoEngineSpec(StrictModel):
    """NVIDIA Dynamo: a frontend with a router over vLLM, SGLang, TRT-LLM or mocker workers, aggregated
    (`aggregated:`) or split into `prefill:` and `decode:` pools. See docs/engines.md, "Dynamo"."""

    kind: Literal["dynamo"]
    id: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    config: str = Field(default="", description="a short label of the configuration, shown in reports")
    backend: Literal["vllm", "sglang", "trtllm", "mocker"] = "vllm"
    mocker_engine: Literal["vllm", "sglang", "trtllm"] = Field(
        default="vllm", description="mocker only: which engine's scheduler it simulates (--engine-type)"
    )
    speedup_ratio: float = Field(default=1.0, gt=0, description="mocker only: simulated time runs this much faster")
    router_mode: Literal["kv", "round-robin", "random", "power-of-two", "least-loaded"] = "kv"
    namespace: str = Field(default="dynamo", pattern=r"^[a-z0-9][a-z0-9_-]*$")
    model_path: str | None = Field(
        default=None, description="local model folder or HF id; default model.name (mocker: a built-in tiny tokenizer)"
    )
    served_model_name: str | None = Field(default=None, description="default: model.name")
    aggregated: DynamoPoolSpec | None = None
    prefill: DynamoPoolSpec | None = None
    decode: DynamoPoolSpec | None = None
    kv_transfer: DynamoKvTransferSpec = DynamoKvTransferSpec()
    max_num_seqs: int | None = Field(default=None, ge=1)
    max_num_batched_tokens: int | None = Field(default=None, ge=1)
    enable_prefix_caching: bool | None = None
    gpu_memory_utilization: float | None = Field(default=None, gt=0, le=1)
    frontend: DynamoFrontendSpec = DynamoFrontendSpec()
    infrastructure: DynamoInfraSpec = DynamoInfraSpec()
    extra_args: list[str] = Field(default_factory=list, description="appended to every worker command line")
    env: dict[str, str] = Field(default_factory=dict, description="extra environment of every Dynamo process")
    ready_timeout_s: float = Field(default=1800.0, gt=0, description="until every worker has registered")

    @field_validator("env")
    @classmethod
    def _env_ok(cls, value: dict[str, str]) -> dict[str, str]:
        return no_secrets_in_env(value, "the processes inherit")

    @model_validator(mode="after")
    def _topology(self) -> DynamoEngineSpec:
        split = (self.prefill is not None, self.decode is not None)
        if self.aggregated is not None and any(split):
            raise ValueError("give either aggregated: {workers: N} or prefill: and decode: pools, not both")
        if self.aggregated is None and not all(split):
            raise ValueError(
                "a Dynamo topology needs aggregated: {workers: N}, "
                "or both prefill: {workers: N} and decode: {workers: M}"
            )
        if self.backend != "mocker" and self.kv_transfer.bandwidth_gb_s is not None:
            raise ValueError("kv_transfer.bandwidth_gb_s simulates a link: it is for backend: mocker only")
        return self

    def pools(self) -> list[tuple[str, DynamoPoolSpec]]:
        """(role, pool) in start order: aggregated, or prefill then decode."""
        if self.aggregated is not None:
            return [("aggregated", self.aggregated)]
        assert self.prefill is not None and self.decode is not None  # the validator guarantees it
        return [("prefill", self.prefill), ("decode", self.decode)]

    @property
    def disaggregated(self) -> bool:
        return self.aggregated is None

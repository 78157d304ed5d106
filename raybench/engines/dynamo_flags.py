"""Each Dynamo worker backend's flags for a pool role: disaggregation mode, KV transfer, batching limits.

Flag names as the installed ai-dynamo 1.6.1 defines them (`dynamo.mocker` and the `backend_args.py` of
`dynamo.vllm`, `dynamo.sglang`, `dynamo.trtllm`); engine flags not listed go through `extra_args`.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from raybench.config.dynamo import DynamoEngineSpec, DynamoPoolSpec
from raybench.engines.server import flag, switch

__all__ = ["backend_flags", "role_component", "trtllm_engine_yaml", "vllm_kv_config"]

VLLM_CONNECTORS = {"nixl": "NixlConnector", "lmcache": "LMCacheConnectorV1", "mooncake": "MooncakeConnector"}


def role_component(role: str) -> str:
    """The Dynamo component a role's workers register under: prefill workers `prefill`, the rest `backend`."""
    return "prefill" if role == "prefill" else "backend"


def _mode(role: str) -> list[str]:
    return [] if role == "aggregated" else ["--disaggregation-mode", role]


def vllm_kv_config(spec: DynamoEngineSpec, kv_role: str) -> str:
    """vLLM's --kv-transfer-config JSON for a role (kv_producer, kv_consumer or kv_both)."""
    config = {"kv_connector": VLLM_CONNECTORS[spec.kv_transfer.connector], "kv_role": kv_role}
    return json.dumps(config, separators=(",", ":"))


def trtllm_engine_yaml(spec: DynamoEngineSpec) -> str:
    """TRT-LLM's disaggregation options file (the cache transceiver moves the KV cache)."""
    return (
        f"cache_transceiver_config:\n  backend: {spec.kv_transfer.connector.upper()}\ndisable_overlap_scheduler: true\n"
    )


def _mocker(s: DynamoEngineSpec, role: str, pool: DynamoPoolSpec) -> list[str]:
    bandwidth = s.kv_transfer.bandwidth_gb_s if role != "aggregated" else None
    return [
        *flag("--endpoint", f"dyn://{s.namespace}.{role_component(role)}.generate"),
        *flag("--engine-type", s.mocker_engine),
        *flag("--speedup-ratio", s.speedup_ratio),
        *_mode(role),
        *(["--bootstrap-ports", "{port:bootstrap}"] if role == "prefill" else []),
        *flag("--kv-transfer-bandwidth", bandwidth),
        *flag("--max-num-seqs", s.max_num_seqs),
        *flag("--max-num-batched-tokens", s.max_num_batched_tokens),
        *switch("--enable-prefix-caching", "--no-enable-prefix-caching", s.enable_prefix_caching),
    ]


def _vllm(s: DynamoEngineSpec, role: str, pool: DynamoPoolSpec) -> list[str]:
    kv_role = {"prefill": "kv_producer", "decode": "kv_consumer"}.get(role)
    return [
        *flag("--tensor-parallel-size", pool.tensor_parallel_size),
        *_mode(role),
        *(["--kv-transfer-config", vllm_kv_config(s, kv_role)] if kv_role else []),
        *flag("--max-num-seqs", s.max_num_seqs),
        *flag("--max-num-batched-tokens", s.max_num_batched_tokens),
        *flag("--gpu-memory-utilization", s.gpu_memory_utilization),
        *switch("--enable-prefix-caching", "--no-enable-prefix-caching", s.enable_prefix_caching),
    ]


def _sglang(s: DynamoEngineSpec, role: str, pool: DynamoPoolSpec) -> list[str]:
    return [
        *flag("--tp", pool.tensor_parallel_size),
        *_mode(role),
        *(["--disaggregation-transfer-backend", s.kv_transfer.connector] if role != "aggregated" else []),
        *(["--disaggregation-bootstrap-port", "{port:bootstrap}"] if role == "prefill" else []),
        *flag("--max-running-requests", s.max_num_seqs),
        *flag("--chunked-prefill-size", s.max_num_batched_tokens),
        *flag("--mem-fraction-static", s.gpu_memory_utilization),
        *(["--disable-radix-cache"] if s.enable_prefix_caching is False else []),
    ]


def _trtllm(s: DynamoEngineSpec, role: str, pool: DynamoPoolSpec) -> list[str]:
    return [
        *flag("--tensor-parallel-size", pool.tensor_parallel_size),
        *_mode(role),
        *(["--extra-engine-args", "{workdir}/engine.yaml"] if role != "aggregated" else []),
        *flag("--max-batch-size", s.max_num_seqs),
        *flag("--max-num-tokens", s.max_num_batched_tokens),
        *flag("--free-gpu-memory-fraction", s.gpu_memory_utilization),
    ]


_BACKENDS: dict[str, Callable[[DynamoEngineSpec, str, DynamoPoolSpec], list[str]]] = {
    "mocker": _mocker, "vllm": _vllm, "sglang": _sglang, "trtllm": _trtllm,
}  # fmt: skip


def backend_flags(spec: DynamoEngineSpec, role: str, pool: DynamoPoolSpec) -> list[str]:
    """The flags after the model and served name for a worker of pool `role` (aggregated, prefill, decode)."""
    return _BACKENDS[spec.backend](spec, role, pool)

"""Each real engine's command line, as far as raybench uses it, parsed strictly (unknown flags fail)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

__all__ = ["FAKE_KINDS", "FakeConfig", "parse_engine_args"]


@dataclass
class FakeConfig:
    """What the fake needs from the parsed command line."""

    kind: str
    model: str
    served_model: str
    host: str
    port: int
    max_num_seqs: int = 256
    metrics: bool = True
    args: dict[str, Any] = field(default_factory=dict)
    nnodes: int = 1  # a multi-node launch: this process is node `node_rank`; rank 0 listens at `master`
    node_rank: int = 0
    master: tuple[str, int] = ("127.0.0.1", 0)


def _bool_pair(p: argparse.ArgumentParser, name: str) -> None:
    p.add_argument(f"--{name}", dest=name.replace("-", "_"), action="store_true", default=None)
    p.add_argument(f"--no-{name}", dest=name.replace("-", "_"), action="store_false")


def _vllm(argv: list[str]) -> FakeConfig:
    p = argparse.ArgumentParser(prog="vllm serve", exit_on_error=False, allow_abbrev=False)
    p.add_argument("model")
    for name in ("--host", "--served-model-name", "--dtype", "--quantization", "--kv-cache-dtype"):
        p.add_argument(name)
    for name in ("--port", "--tensor-parallel-size", "--pipeline-parallel-size", "--max-num-seqs"):
        p.add_argument(name, type=int)
    p.add_argument("--max-num-batched-tokens", type=int)
    p.add_argument("--gpu-memory-utilization", type=float)
    _bool_pair(p, "enable-prefix-caching")
    _bool_pair(p, "enable-chunked-prefill")
    p.add_argument("--distributed-executor-backend", choices=["mp", "ray", "uni", "external_launcher"])
    p.add_argument("--nnodes", "-n", type=int, default=1)
    p.add_argument("--node-rank", "-r", type=int, default=0)
    p.add_argument("--master-addr", default="127.0.0.1")
    p.add_argument("--master-port", type=int, default=29501)
    p.add_argument("--headless", action="store_true")
    a = p.parse_args(argv)
    if a.headless != (a.node_rank > 0):
        raise argparse.ArgumentError(None, "--headless goes with --node-rank > 0 (rank 0 serves the API)")
    return FakeConfig("vllm", a.model, a.served_model_name or a.model, a.host or "127.0.0.1", a.port or 8000,
                      a.max_num_seqs or 256, True, vars(a), a.nnodes, a.node_rank,
                      (a.master_addr, a.master_port))  # fmt: skip


def _sglang(argv: list[str]) -> FakeConfig:
    p = argparse.ArgumentParser(prog="sglang.launch_server", exit_on_error=False, allow_abbrev=False)
    p.add_argument("--model-path", "--model", required=True)
    for name in ("--host", "--served-model-name", "--dtype", "--quantization", "--kv-cache-dtype"):
        p.add_argument(name)
    for name in ("--port", "--tp-size", "--pp-size", "--chunked-prefill-size", "--max-prefill-tokens"):
        p.add_argument(name, type=int)
    p.add_argument("--max-running-requests", type=int)
    p.add_argument("--mem-fraction-static", type=float)
    p.add_argument("--disable-radix-cache", action="store_true")
    p.add_argument("--enable-metrics", action="store_true")
    p.add_argument("--nnodes", type=int, default=1)
    p.add_argument("--node-rank", type=int, default=0)
    p.add_argument("--dist-init-addr")
    a = p.parse_args(argv)
    if a.nnodes > 1 and not a.dist_init_addr:
        raise argparse.ArgumentError(None, "--dist-init-addr HOST:PORT is required with --nnodes > 1")
    host, _, port = (a.dist_init_addr or "127.0.0.1:0").rpartition(":")
    return FakeConfig("sglang", a.model_path, a.served_model_name or a.model_path, a.host or "127.0.0.1",
                      a.port or 30000, a.max_running_requests or 256, a.enable_metrics, vars(a), a.nnodes,
                      a.node_rank, (host, int(port)))  # fmt: skip


_TRTLLM_OPTION_KEYS = {"enable_iter_perf_stats", "return_perf_metrics", "kv_cache_config", "enable_chunked_prefill",
                       "dtype"}  # fmt: skip


def _trtllm(argv: list[str]) -> FakeConfig:
    p = argparse.ArgumentParser(prog="trtllm-serve", exit_on_error=False, allow_abbrev=False)
    p.add_argument("model")
    for name in ("--host", "--backend", "--served_model_name", "--extra_llm_api_options", "--tokenizer"):
        p.add_argument(name)
    for name in ("--port", "--tp_size", "--pp_size", "--max_batch_size", "--max_num_tokens"):
        p.add_argument(name, type=int)
    p.add_argument("--kv_cache_free_gpu_memory_fraction", type=float)
    a = p.parse_args(argv)
    options: dict[str, Any] = {}
    if a.extra_llm_api_options:
        options = yaml.safe_load(Path(a.extra_llm_api_options).read_text(encoding="utf-8")) or {}
        unknown = set(options) - _TRTLLM_OPTION_KEYS
        if unknown:
            raise argparse.ArgumentError(None, f"unknown LLM-API options {sorted(unknown)}")
    return FakeConfig("trtllm", a.model, a.served_model_name or a.model, a.host or "localhost", a.port or 8000,
                      a.max_batch_size or 2048, bool(options.get("return_perf_metrics")),
                      {**vars(a), "llm_api_options": options})  # fmt: skip


def _lmdeploy(argv: list[str]) -> FakeConfig:
    p = argparse.ArgumentParser(prog="lmdeploy serve api_server", exit_on_error=False, allow_abbrev=False)
    p.add_argument("model_path")
    for name in ("--server-name", "--model-name", "--backend", "--dtype", "--model-format"):
        p.add_argument(name)
    for name in ("--server-port", "--tp", "--quant-policy", "--max-batch-size", "--max-prefill-token-num"):
        p.add_argument(name, type=int)
    p.add_argument("--cache-max-entry-count", type=float)
    p.add_argument("--enable-prefix-caching", action="store_true")
    p.add_argument("--enable-metrics", action="store_true")
    a = p.parse_args(argv)
    return FakeConfig("lmdeploy", a.model_path, a.model_name or a.model_path, a.server_name or "0.0.0.0",
                      a.server_port or 23333, a.max_batch_size or 256, a.enable_metrics, vars(a))  # fmt: skip


def _tgi(argv: list[str]) -> FakeConfig:
    p = argparse.ArgumentParser(prog="text-generation-launcher", exit_on_error=False, allow_abbrev=False)
    p.add_argument("--model-id", required=True)
    for name in ("--hostname", "--served-model-name", "--dtype", "--quantize", "--kv-cache-dtype"):
        p.add_argument(name)
    for name in ("--port", "--num-shard", "--max-batch-size", "--max-batch-prefill-tokens"):
        p.add_argument(name, type=int)
    p.add_argument("--cuda-memory-fraction", type=float)
    a = p.parse_args(argv)
    return FakeConfig("tgi", a.model_id, a.served_model_name or a.model_id, a.hostname or "0.0.0.0", a.port or 3000,
                      a.max_batch_size or 256, True, vars(a))  # fmt: skip


def _llamacpp(argv: list[str]) -> FakeConfig:
    p = argparse.ArgumentParser(prog="llama-server", exit_on_error=False, allow_abbrev=False)
    p.add_argument("-m", "--model", required=True)
    for name in ("--host", "--alias", "--cache-type-k", "--cache-type-v"):
        p.add_argument(name)
    p.add_argument("--port", type=int)
    p.add_argument("-ngl", "--n-gpu-layers", type=int)
    p.add_argument("-np", "--parallel", type=int)
    p.add_argument("-c", "--ctx-size", type=int)
    p.add_argument("-b", "--batch-size", type=int)
    p.add_argument("-cb", "--cont-batching", action="store_true")
    p.add_argument("--metrics", action="store_true")
    a = p.parse_args(argv)
    return FakeConfig("llamacpp", a.model, a.alias or a.model, a.host or "127.0.0.1", a.port or 8080,
                      a.parallel or 1, a.metrics, vars(a))  # fmt: skip


def _ray_serve_llm(argv: list[str]) -> FakeConfig:
    p = argparse.ArgumentParser(prog="raybench.engines.ray_serve_llm", exit_on_error=False, allow_abbrev=False)
    p.add_argument("--host", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--config-json", required=True)
    a = p.parse_args(argv)
    config = yaml.safe_load(a.config_json)
    served = config["model_loading_config"]["model_id"]
    seqs = config.get("engine_kwargs", {}).get("max_num_seqs", 256)
    return FakeConfig("ray_serve_llm", served, served, a.host, a.port, seqs, False, {"llm_config": config})


_PARSERS = {
    "vllm": _vllm, "sglang": _sglang, "trtllm": _trtllm, "lmdeploy": _lmdeploy, "tgi": _tgi,
    "llamacpp": _llamacpp, "ray_serve_llm": _ray_serve_llm,
}  # fmt: skip
FAKE_KINDS = tuple(_PARSERS)


def parse_engine_args(kind: str, argv: list[str]) -> FakeConfig:
    """Parse `argv` as engine `kind` would; unknown flags end in SystemExit(2), bad values in ArgumentError."""
    return _PARSERS[kind](argv)

"""Prometheus text each fake exposes, under its engine's real metric names (see engines/metrics.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from raybench.testing.engines.server import FakeEngine

__all__ = ["render"]


def _lines(prefix: str, label: str, values: dict[str, float], kinds: dict[str, str]) -> str:
    out: list[str] = []
    for name, value in values.items():
        base = name.removesuffix("_sum").removesuffix("_count")
        if name == base:
            out.append(f"# TYPE {prefix}{name} {kinds.get(name, 'gauge')}")
        elif name.endswith("_sum"):
            out.append(f"# TYPE {prefix}{base} histogram")
        out.append(f"{prefix}{name}{label} {float(value)!r}")
    return "\n".join(out) + "\n"


def render(engine: FakeEngine) -> str:
    """The exposition of `engine`'s kind."""
    c, kind, model = engine.counters, engine.config.kind, engine.config.served_model
    usage = min(engine.running / max(engine.config.max_num_seqs, 1), 1.0)
    label = f'{{model_name="{model}"}}'
    counters = {"prompt_tokens_total": "counter", "generation_tokens_total": "counter"}
    vllm_values = {
        "num_requests_running": engine.running, "num_requests_waiting": 0, "kv_cache_usage_perc": usage,
        "prefix_cache_queries_total": c["queries"], "prefix_cache_hits_total": c["hits"],
        "prompt_tokens_total": c["prompt"], "generation_tokens_total": c["generation"],
        "time_to_first_token_seconds_sum": c["ttft_sum"], "time_to_first_token_seconds_count": c["ttft_n"],
        "inter_token_latency_seconds_sum": c["itl_sum"], "inter_token_latency_seconds_count": c["itl_n"],
    }  # fmt: skip
    vllm_types = {**counters, "prefix_cache_queries_total": "counter", "prefix_cache_hits_total": "counter"}
    if kind == "vllm":
        return _lines("vllm:", label, vllm_values, vllm_types)
    if kind == "sglang":
        hit = c["hits"] / c["queries"] if c["queries"] else 0.0
        return _lines("sglang:", label, {
            "num_running_reqs": engine.running, "num_queue_reqs": 0, "token_usage": usage, "cache_hit_rate": hit,
            "prompt_tokens_total": c["prompt"], "generation_tokens_total": c["generation"],
            "time_to_first_token_seconds_sum": c["ttft_sum"], "time_to_first_token_seconds_count": c["ttft_n"],
            "inter_token_latency_seconds_sum": c["itl_sum"], "inter_token_latency_seconds_count": c["itl_n"],
        }, counters)  # fmt: skip
    if kind == "lmdeploy":
        return _lines("lmdeploy:", label, {
            "num_requests_running": engine.running, "num_requests_waiting": 0, "gpu_cache_usage_perc": usage,
            "prompt_tokens_total": c["prompt"], "generation_tokens_total": c["generation"],
            "time_to_first_token_seconds_sum": c["ttft_sum"], "time_to_first_token_seconds_count": c["ttft_n"],
        }, counters)  # fmt: skip
    if kind == "trtllm":  # /prometheus/metrics with return_perf_metrics (tensorrt_llm/metrics/collector.py)
        trt = '{model_name="undefined",engine_type="undefined"}'
        return _lines("trtllm_", trt, {
            "num_requests_running": engine.running, "num_requests_waiting": 0, "kv_cache_utilization": usage,
            "kv_cache_hit_rate": 0.5, "prompt_tokens_total": c["prompt"], "generation_tokens_total": c["generation"],
            "time_to_first_token_seconds_sum": c["ttft_sum"], "time_to_first_token_seconds_count": c["ttft_n"],
            "time_per_output_token_seconds_sum": c["itl_sum"], "time_per_output_token_seconds_count": c["itl_n"],
        }, counters)  # fmt: skip
    if kind == "ray_serve_llm":  # what Ray's metrics agent exports for a Serve LLM replica (ray_vllm_*)
        ray = (f'{{Component="core_worker",NodeAddress="{engine.config.host}",SessionName="session_fake",'
               f'Version="2.60.0",WorkerId="ab12",engine="0",model_name="{model}"}}')  # fmt: skip
        return _lines("ray_vllm_", ray, vllm_values, vllm_types)  # vLLM's own metrics under Ray's prefix
    if kind == "tgi":
        return _lines("tgi_", "", {
            "batch_current_size": engine.running, "queue_size": 0,
            "request_input_length_sum": c["prompt"], "request_input_length_count": engine.requests,
            "request_generated_tokens_sum": c["generation"], "request_generated_tokens_count": engine.requests,
        }, {})  # fmt: skip
    return _lines("llamacpp:", "", {
        "requests_processing": engine.running, "requests_deferred": 0, "kv_cache_usage_ratio": usage,
        "prompt_tokens_total": c["prompt"], "tokens_predicted_total": c["generation"],
    }, {"prompt_tokens_total": "counter", "tokens_predicted_total": "counter"})  # fmt: skip

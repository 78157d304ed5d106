"""Prometheus text parsing, each engine's metric names mapped to raybench's, and the per-step summary."""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "DIALECTS",
    "MetricMap",
    "Sample",
    "extract",
    "extract_iteration_stats",
    "parse_prometheus",
    "summarize_step",
]

_LINE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(\{[^}]*\})?\s+(\S+)")


@dataclass(frozen=True)
class Sample:
    """One exposition line: metric name, its labels as text, and the value."""

    name: str
    labels: str
    value: float


def parse_prometheus(text: str) -> list[Sample]:
    """The samples of a Prometheus text exposition (comments skipped, unparsable lines ignored)."""
    out: list[Sample] = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = _LINE.match(line.strip())
        if match is None:
            continue
        try:
            value = float(match.group(3))
        except ValueError:
            continue
        out.append(Sample(match.group(1), match.group(2) or "", value))
    return out


# Canonical names (gauges first, then counters); the summary knows which is which from this split.
GAUGES = ("running_requests", "waiting_requests", "kv_cache_usage", "prefix_cache_hit_rate")
COUNTERS = (
    "prefix_cache_queries_total", "prefix_cache_hits_total", "prompt_tokens_total", "generation_tokens_total",
    "ttft_seconds_sum", "ttft_seconds_count", "itl_seconds_sum", "itl_seconds_count",
    "sim_cpu_seconds_total",  # only the simulated engine exposes it (raybench_sim_cpu_seconds_total)
)  # fmt: skip


@dataclass(frozen=True)
class MetricMap:
    """canonical name -> the engine's metric names, tried in order (newer names first); values summed over labels."""

    names: dict[str, tuple[str, ...]] = field(default_factory=dict)
    path: str = "/metrics"
    format: str = "prometheus"  # or "trtllm-json": trtllm-serve's JSON iteration stats (names are key paths)
    more: tuple[MetricMap, ...] = ()  # further endpoints of the same server; the first source of a name wins
    target: str = "server"  # or "ray_nodes": every Ray node's metrics-export port (Ray Serve LLM's engine metrics)


def extract_iteration_stats(text: str, metric_map: MetricMap) -> dict[str, tuple[str, float]]:
    """trtllm-serve's /metrics: a JSON list of per-iteration stats since the last call; the latest one is
    read (dotted key paths); KV usage is usedNumBlocks / maxNumBlocks."""
    try:
        stats = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(stats, list) or not stats or not isinstance(stats[-1], dict):
        return {}
    last: dict[str, Any] = stats[-1]
    out: dict[str, tuple[str, float]] = {}
    for canonical, candidates in metric_map.names.items():
        for path in candidates:
            node: Any = last
            for key in path.split("."):
                node = node.get(key) if isinstance(node, dict) else None
            if isinstance(node, (int, float)):
                out[canonical] = (path, float(node))
                break
    raw_kv = last.get("kvCacheStats")
    kv: dict[str, Any] = raw_kv if isinstance(raw_kv, dict) else {}
    if kv.get("maxNumBlocks"):
        out["kv_cache_usage"] = (
            "kvCacheStats.usedNumBlocks/maxNumBlocks",
            kv.get("usedNumBlocks", 0) / kv["maxNumBlocks"],
        )
    return out


def extract(samples: Iterable[Sample], metric_map: MetricMap) -> dict[str, tuple[str, float]]:
    """canonical name -> (the engine name found, value summed over its label sets)."""
    totals: dict[str, float] = defaultdict(float)
    for s in samples:
        totals[s.name] += s.value
    out: dict[str, tuple[str, float]] = {}
    for canonical, candidates in metric_map.names.items():
        for name in candidates:
            if name in totals:
                out[canonical] = (name, totals[name])
                break
    return out


def _histogram(prefix: str, ttft: str, itl: str) -> dict[str, tuple[str, ...]]:
    return {
        "ttft_seconds_sum": (f"{prefix}{ttft}_sum",),
        "ttft_seconds_count": (f"{prefix}{ttft}_count",),
        "itl_seconds_sum": (f"{prefix}{itl}_sum",),
        "itl_seconds_count": (f"{prefix}{itl}_count",),
    }


DIALECTS: dict[str, MetricMap] = {
    "vllm": MetricMap({
        "running_requests": ("vllm:num_requests_running",),
        "waiting_requests": ("vllm:num_requests_waiting",),
        "kv_cache_usage": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),  # a 0..1 fraction
        "prefix_cache_hit_rate": ("vllm:gpu_prefix_cache_hit_rate",),  # V0 only; V1 exposes the counters
        "prefix_cache_queries_total": ("vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"),
        "prefix_cache_hits_total": ("vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"),
        "prompt_tokens_total": ("vllm:prompt_tokens_total",),
        "generation_tokens_total": ("vllm:generation_tokens_total",),
        **_histogram("vllm:", "time_to_first_token_seconds", "inter_token_latency_seconds"),
        "itl_seconds_sum": ("vllm:inter_token_latency_seconds_sum", "vllm:time_per_output_token_seconds_sum"),
        "itl_seconds_count": ("vllm:inter_token_latency_seconds_count", "vllm:time_per_output_token_seconds_count"),
    }),
    "sglang": MetricMap({
        "running_requests": ("sglang:num_running_reqs",),
        "waiting_requests": ("sglang:num_queue_reqs",),
        "kv_cache_usage": ("sglang:token_usage",),
        "prefix_cache_hit_rate": ("sglang:cache_hit_rate",),
        "prompt_tokens_total": ("sglang:prompt_tokens_total",),
        "generation_tokens_total": ("sglang:generation_tokens_total",),
        **_histogram("sglang:", "time_to_first_token_seconds", "inter_token_latency_seconds"),
        "itl_seconds_sum": ("sglang:inter_token_latency_seconds_sum", "sglang:time_per_output_token_seconds_sum"),
        "itl_seconds_count": (
            "sglang:inter_token_latency_seconds_count", "sglang:time_per_output_token_seconds_count",
        ),
    }),
    "lmdeploy": MetricMap({
        "running_requests": ("lmdeploy:num_requests_running",),
        "waiting_requests": ("lmdeploy:num_requests_waiting",),
        "kv_cache_usage": ("lmdeploy:gpu_cache_usage_perc",),
        "prompt_tokens_total": ("lmdeploy:prompt_tokens_total",),
        "generation_tokens_total": ("lmdeploy:generation_tokens_total",),
        **_histogram("lmdeploy:", "time_to_first_token_seconds", "time_per_output_token_seconds"),
    }),
    "tgi": MetricMap({  # TGI exposes no KV-cache or prefix-cache gauge
        "running_requests": ("tgi_batch_current_size",),
        "waiting_requests": ("tgi_queue_size",),
        "prompt_tokens_total": ("tgi_request_input_length_sum",),
        "generation_tokens_total": ("tgi_request_generated_tokens_sum",),
        "itl_seconds_sum": ("tgi_request_mean_time_per_token_duration_sum",),
        "itl_seconds_count": ("tgi_request_mean_time_per_token_duration_count",),
    }),
    "llamacpp": MetricMap({  # needs --metrics
        "running_requests": ("llamacpp:requests_processing",),
        "waiting_requests": ("llamacpp:requests_deferred",),
        "kv_cache_usage": ("llamacpp:kv_cache_usage_ratio",),  # dropped by recent builds
        "prompt_tokens_total": ("llamacpp:prompt_tokens_total",),
        "generation_tokens_total": ("llamacpp:tokens_predicted_total",),
    }),
    "trtllm": MetricMap(  # trtllm-serve mounts Prometheus at /prometheus/metrics when the LLM-API option
        {  # return_perf_metrics is on (tensorrt_llm/metrics/collector.py: MetricsCollector, prefix trtllm_)
            "running_requests": ("trtllm_num_requests_running",),
            "waiting_requests": ("trtllm_num_requests_waiting",),
            "kv_cache_usage": ("trtllm_kv_cache_utilization",),
            "prefix_cache_hit_rate": ("trtllm_kv_cache_hit_rate",),
            "prompt_tokens_total": ("trtllm_prompt_tokens_total",),
            "generation_tokens_total": ("trtllm_generation_tokens_total",),
            **_histogram("trtllm_", "time_to_first_token_seconds", "time_per_output_token_seconds"),
        },
        path="/prometheus/metrics",
        more=(MetricMap(  # older releases: only the JSON iteration stats at /metrics
            {
                "running_requests": ("numActiveRequests",),
                "waiting_requests": ("numQueuedRequests",),
                "prefix_cache_hit_rate": ("kvCacheStats.cacheHitRate",),
            },
            format="trtllm-json",
        ),),
    ),
    "ray_serve_llm": MetricMap(  # vLLM's names through Ray's metrics export (RayPrometheusStatLogger: ":" -> "_",
        {  # "ray_" prefix) at each node's metrics-export port, when LLMConfig.log_engine_metrics (default true)
            "running_requests": ("ray_vllm_num_requests_running",),
            "waiting_requests": ("ray_vllm_num_requests_waiting",),
            "kv_cache_usage": ("ray_vllm_kv_cache_usage_perc", "ray_vllm_gpu_cache_usage_perc"),
            "prefix_cache_queries_total": ("ray_vllm_prefix_cache_queries_total",),
            "prefix_cache_hits_total": ("ray_vllm_prefix_cache_hits_total",),
            "prompt_tokens_total": ("ray_vllm_prompt_tokens_total",),
            "generation_tokens_total": ("ray_vllm_generation_tokens_total",),
            **_histogram("ray_vllm_", "time_to_first_token_seconds", "inter_token_latency_seconds"),
            "itl_seconds_sum": (
                "ray_vllm_inter_token_latency_seconds_sum", "ray_vllm_request_time_per_output_token_seconds_sum",
            ),
            "itl_seconds_count": (
                "ray_vllm_inter_token_latency_seconds_count", "ray_vllm_request_time_per_output_token_seconds_count",
            ),
        },
        target="ray_nodes",
    ),
    "none": MetricMap({}),
}  # fmt: skip


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _deltas(rows: list[dict[str, Any]], metric: str) -> float | None:
    """Sum over replicas of (last - first) of a counter within the step (None when never seen twice)."""
    by_replica: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for r in rows:
        if r["metric"] == metric:
            by_replica[r["replica"]].append((r["scraped_ns"], r["value"]))
    spans = [max(v)[1] - min(v)[1] for v in by_replica.values() if len(v) >= 2]
    return sum(spans) if spans else None


def _rate_max(rows: list[dict[str, Any]], metric: str) -> float | None:
    """Highest per-replica rate of a counter over the step's scrapes (per second; None when never seen twice)."""
    by_replica: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for r in rows:
        if r["metric"] == metric:
            by_replica[r["replica"]].append((r["scraped_ns"], r["value"]))
    rates = [
        (max(v)[1] - min(v)[1]) / ((max(v)[0] - min(v)[0]) / 1e9)
        for v in by_replica.values()
        if len(v) >= 2 and max(v)[0] > min(v)[0]
    ]
    return max(rates) if rates else None


def _ratio(num: float | None, den: float | None, scale: float = 1.0) -> float | None:
    return num / den * scale if num is not None and den else None


def summarize_step(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-step summary of scraped samples: gauge means/maxima, counter-derived rates and engine latencies."""
    gauges = {g: [r["value"] for r in rows if r["metric"] == g and math.isfinite(r["value"])] for g in GAUGES}
    hits, queries = _deltas(rows, "prefix_cache_hits_total"), _deltas(rows, "prefix_cache_queries_total")
    hit_rate = _ratio(hits, queries) if queries else _mean(gauges["prefix_cache_hit_rate"])
    return {
        "samples": len({(r["replica"], r["scraped_ns"]) for r in rows}),
        "running_requests_mean": _mean(gauges["running_requests"]),
        "running_requests_max": max(gauges["running_requests"], default=None),
        "waiting_requests_mean": _mean(gauges["waiting_requests"]),
        "waiting_requests_max": max(gauges["waiting_requests"], default=None),
        "kv_cache_usage_mean": _mean(gauges["kv_cache_usage"]),
        "kv_cache_usage_max": max(gauges["kv_cache_usage"], default=None),
        "prefix_cache_hit_rate": hit_rate,
        "prompt_tokens": _deltas(rows, "prompt_tokens_total"),
        "generation_tokens": _deltas(rows, "generation_tokens_total"),
        "engine_ttft_mean_ms": _ratio(_deltas(rows, "ttft_seconds_sum"), _deltas(rows, "ttft_seconds_count"), 1e3),
        "engine_itl_mean_ms": _ratio(_deltas(rows, "itl_seconds_sum"), _deltas(rows, "itl_seconds_count"), 1e3),
        # CPU seconds per wall second of the busiest simulator process over the step (1.0 = one core)
        "sim_cpu_share": _rate_max(rows, "sim_cpu_seconds_total"),
    }

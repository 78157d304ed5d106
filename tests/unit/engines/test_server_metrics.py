"""Prometheus parsing, each engine's names mapped to raybench's, and the per-step summary."""

from __future__ import annotations

import pytest

from raybench.engines.metrics import DIALECTS, extract, parse_prometheus, summarize_step

VLLM_TEXT = """# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3.0
vllm:num_requests_running{engine="1",model_name="m"} 2.0
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.5
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 100
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 40
vllm:time_to_first_token_seconds_bucket{le="0.1",model_name="m"} 3
vllm:time_to_first_token_seconds_sum{model_name="m"} 0.25
vllm:time_to_first_token_seconds_count{model_name="m"} 5
vllm:time_per_output_token_seconds_sum{model_name="m"} 1.0
vllm:time_per_output_token_seconds_count{model_name="m"} 50
garbage line
"""


def test_parse_and_extract_vllm_sums_label_sets() -> None:
    values = extract(parse_prometheus(VLLM_TEXT), DIALECTS["vllm"])
    assert values["running_requests"] == ("vllm:num_requests_running", 5.0)
    assert values["kv_cache_usage"] == ("vllm:kv_cache_usage_perc", 0.5)
    assert values["itl_seconds_count"] == ("vllm:time_per_output_token_seconds_count", 50.0)  # older name fallback
    assert "waiting_requests" not in values


@pytest.mark.parametrize(
    ("dialect", "text", "running"),
    [
        ("sglang", 'sglang:num_running_reqs{model_name="m"} 7\nsglang:token_usage{model_name="m"} 0.3', 7.0),
        ("lmdeploy", 'lmdeploy:num_requests_running{model_name="m",engine="0"} 4', 4.0),
        ("tgi", "tgi_batch_current_size 6\ntgi_queue_size 1", 6.0),
        ("llamacpp", "llamacpp:requests_processing 2\nllamacpp:requests_deferred 0", 2.0),
    ],
)
def test_each_dialect_maps_running(dialect: str, text: str, running: float) -> None:
    assert extract(parse_prometheus(text), DIALECTS[dialect])["running_requests"][1] == running


def _row(replica: str, t: int, metric: str, value: float) -> dict[str, object]:
    return {"step_index": 0, "replica": replica, "scraped_ns": t, "metric": metric, "source": "x", "value": value}


def test_summary_means_and_counter_deltas_over_replicas() -> None:
    rows = [
        _row("r0", 1, "kv_cache_usage", 0.2), _row("r0", 2, "kv_cache_usage", 0.6),
        _row("r1", 1, "kv_cache_usage", 0.4),
        _row("r0", 1, "prefix_cache_queries_total", 100), _row("r0", 2, "prefix_cache_queries_total", 300),
        _row("r0", 1, "prefix_cache_hits_total", 10), _row("r0", 2, "prefix_cache_hits_total", 110),
        _row("r0", 1, "ttft_seconds_sum", 1.0), _row("r0", 2, "ttft_seconds_sum", 1.5),
        _row("r0", 1, "ttft_seconds_count", 10), _row("r0", 2, "ttft_seconds_count", 20),
        _row("r0", 1, "running_requests", 4), _row("r0", 2, "running_requests", 8),
    ]  # fmt: skip
    s = summarize_step(rows)
    assert s["samples"] == 3
    assert s["kv_cache_usage_mean"] == pytest.approx(0.4)
    assert s["kv_cache_usage_max"] == pytest.approx(0.6)
    assert s["prefix_cache_hit_rate"] == pytest.approx(0.5)
    assert s["engine_ttft_mean_ms"] == pytest.approx(50.0)
    assert s["running_requests_mean"] == pytest.approx(6.0)
    assert s["engine_itl_mean_ms"] is None


def test_summary_falls_back_to_the_hit_rate_gauge_and_handles_nothing() -> None:
    assert summarize_step([_row("r", 1, "prefix_cache_hit_rate", 0.3)])["prefix_cache_hit_rate"] == 0.3
    empty = summarize_step([])
    assert empty["samples"] == 0 and empty["kv_cache_usage_mean"] is None


def test_trtllm_iteration_stats_json() -> None:
    text = (
        '[{"iter": 1, "numActiveRequests": 1}, {"iter": 2, "numActiveRequests": 3, "numQueuedRequests": 2,'
        ' "kvCacheStats": {"maxNumBlocks": 100, "usedNumBlocks": 25, "cacheHitRate": 0.4}}]'
    )
    from raybench.engines.metrics import extract_iteration_stats

    values = extract_iteration_stats(text, DIALECTS["trtllm"])
    assert values["running_requests"] == ("numActiveRequests", 3.0)
    assert values["waiting_requests"][1] == 2.0
    assert values["kv_cache_usage"][1] == 0.25
    assert values["prefix_cache_hit_rate"] == ("kvCacheStats.cacheHitRate", 0.4)
    assert extract_iteration_stats("[]", DIALECTS["trtllm"]) == {}
    assert extract_iteration_stats("not json", DIALECTS["trtllm"]) == {}

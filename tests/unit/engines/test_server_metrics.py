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

    (json_map,) = DIALECTS["trtllm"].more  # older releases' only source; newer ones have Prometheus first
    assert (json_map.path, json_map.format) == ("/metrics", "trtllm-json")
    values = extract_iteration_stats(text, json_map)
    assert values["running_requests"] == ("numActiveRequests", 3.0)
    assert values["waiting_requests"][1] == 2.0
    assert values["kv_cache_usage"][1] == 0.25
    assert values["prefix_cache_hit_rate"] == ("kvCacheStats.cacheHitRate", 0.4)
    assert extract_iteration_stats("[]", json_map) == {}
    assert extract_iteration_stats("not json", json_map) == {}


TRTLLM_TEXT = """# TYPE trtllm_time_to_first_token_seconds histogram
trtllm_time_to_first_token_seconds_bucket{le="0.01",model_name="undefined",engine_type="undefined"} 0.0
trtllm_time_to_first_token_seconds_sum{model_name="undefined",engine_type="undefined"} 8.75
trtllm_time_to_first_token_seconds_count{model_name="undefined",engine_type="undefined"} 150.0
trtllm_time_per_output_token_seconds_sum{model_name="undefined",engine_type="undefined"} 12.5
trtllm_time_per_output_token_seconds_count{model_name="undefined",engine_type="undefined"} 150.0
trtllm_request_success_total{model_name="undefined",engine_type="undefined",finished_reason="length"} 150.0
trtllm_num_requests_running{model_name="undefined",engine_type="undefined"} 12.0
trtllm_kv_cache_utilization{model_name="undefined",engine_type="undefined"} 0.75
"""


def test_trtllm_prometheus_endpoint_gives_engine_latencies() -> None:
    trtllm = DIALECTS["trtllm"]
    assert trtllm.path == "/prometheus/metrics" and trtllm.format == "prometheus"
    values = extract(parse_prometheus(TRTLLM_TEXT), trtllm)
    assert values["ttft_seconds_sum"] == ("trtllm_time_to_first_token_seconds_sum", 8.75)
    assert values["itl_seconds_count"] == ("trtllm_time_per_output_token_seconds_count", 150.0)
    assert values["running_requests"][1] == 12.0 and values["kv_cache_usage"][1] == 0.75


RAY_LABELS = 'Component="core_worker",NodeAddress="127.0.1.3",SessionName="s",Version="2.60.0",WorkerId="w"'
RAY_SERVE_TEXT = f"""# TYPE ray_vllm_num_requests_running gauge
ray_vllm_num_requests_running{{{RAY_LABELS},engine="0",model_name="m"}} 4.0
ray_vllm_num_requests_running{{{RAY_LABELS},engine="1",model_name="m"}} 1.0
ray_vllm_kv_cache_usage_perc{{{RAY_LABELS},engine="0",model_name="m"}} 0.25
ray_vllm_time_to_first_token_seconds_sum{{{RAY_LABELS},model_name="m"}} 2.0
ray_vllm_time_to_first_token_seconds_count{{{RAY_LABELS},model_name="m"}} 40.0
ray_vllm_request_time_per_output_token_seconds_sum{{{RAY_LABELS},model_name="m"}} 0.5
ray_vllm_request_time_per_output_token_seconds_count{{{RAY_LABELS},model_name="m"}} 50.0
ray_serve_num_http_requests_total{{{RAY_LABELS},route="/v1"}} 9.0
"""


def test_ray_serve_llm_reads_vllm_names_from_rays_metrics_export() -> None:
    serve = DIALECTS["ray_serve_llm"]
    assert serve.target == "ray_nodes"
    values = extract(parse_prometheus(RAY_SERVE_TEXT), serve)
    assert values["running_requests"] == ("ray_vllm_num_requests_running", 5.0)  # summed over engines
    assert values["ttft_seconds_count"][1] == 40.0
    assert values["itl_seconds_sum"] == ("ray_vllm_request_time_per_output_token_seconds_sum", 0.5)


def test_ray_metrics_urls_are_each_alive_nodes_export_port() -> None:
    from raybench.deploy.scrape import ray_metrics_urls

    nodes = [
        {"Alive": True, "NodeManagerAddress": "127.0.1.3", "MetricsExportPort": 61234},
        {"Alive": False, "NodeManagerAddress": "127.0.1.4", "MetricsExportPort": 61235},
        {"Alive": True, "NodeManagerAddress": "127.0.1.5", "MetricsExportPort": 0},
    ]
    assert ray_metrics_urls(nodes) == ["http://127.0.1.3:61234"]


def test_the_fakes_expose_the_real_formats() -> None:
    from raybench.testing.engines.cli import FakeConfig
    from raybench.testing.engines.exposition import render
    from raybench.testing.engines.server import FakeEngine

    for kind, text in (("trtllm", TRTLLM_TEXT), ("ray_serve_llm", RAY_SERVE_TEXT)):
        engine = FakeEngine(FakeConfig(kind, "m", "m", "127.0.0.1", 1))
        engine.counters.update(generation=7.0, ttft_sum=0.5, ttft_n=2.0)
        got = extract(parse_prometheus(render(engine)), DIALECTS[kind])
        real = extract(parse_prometheus(text), DIALECTS[kind])
        assert set(real) <= set(got)  # the fake exposes at least what the real sample has, under real names
        assert all(name.startswith(("trtllm_", "ray_vllm_")) for name, _ in got.values())
        assert got["generation_tokens_total"][1] == 7.0 and got["ttft_seconds_count"][1] == 2.0

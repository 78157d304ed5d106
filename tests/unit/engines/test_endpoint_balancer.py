"""Replica balancing for engines with several base URLs: round robin and least outstanding."""

from __future__ import annotations

from raybench.config import parse_job
from raybench.engines import adapter_for
from raybench.loadgen.endpoint import Balancer, Endpoint


def test_round_robin_follows_the_request_index() -> None:
    balancer = Balancer(Endpoint(base_urls=("http://a", "http://b"), model="m"))
    assert [balancer.acquire(i)[0] for i in range(3)] == [
        "http://a/v1/completions", "http://b/v1/completions", "http://a/v1/completions",
    ]  # fmt: skip


def test_least_outstanding_avoids_the_busy_replica() -> None:
    endpoint = Endpoint(base_urls=("http://a", "http://b", "http://c"), model="m", api="chat",
                        balance="least_outstanding")  # fmt: skip
    balancer = Balancer(endpoint)
    first = [balancer.acquire(i) for i in range(3)]
    assert sorted(slot for _, slot in first) == [0, 1, 2]
    balancer.release(1)
    url, slot = balancer.acquire(7)
    assert (url, slot) == ("http://b/v1/chat/completions", 1)
    assert balancer.outstanding == [1, 1, 1]


def test_endpoint_kind_carries_urls_balance_and_metrics_dialect() -> None:
    spec = parse_job({
        "name": "e", "model": {"name": "m"},
        "engines": [{"kind": "endpoint", "base_url": "http://h1:8000/v1", "more_base_urls": ["http://h2:8000/"],
                     "balance": "least_outstanding", "metrics": "sglang"}],
        "workload": {"isl": {"mean": 8}, "osl": {"mean": 8}}, "load": {"steps": [1], "duration_s": 1},
        "slo": {"ttft_p99_ms": 500, "itl_p50_ms": 30},
    })  # fmt: skip
    adapter = adapter_for(spec.engines[0], spec.model, "e0")
    assert adapter.external_urls() == ["http://h1:8000", "http://h2:8000"]
    assert adapter.endpoint(adapter.external_urls(), "chat").balance == "least_outstanding"
    assert adapter.metric_map().names["running_requests"] == ("sglang:num_running_reqs",)

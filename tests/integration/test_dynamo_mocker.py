"""Real NVIDIA Dynamo (frontend, router, mocker workers) on a 2-node local Ray cluster on 127.0.0.1.

Aggregated and disaggregated (1 prefill + 1 decode, on different nodes) deployments are swept through three
concurrency steps, once with etcd + NATS started by raybench and once with file discovery. Each run must
store records with streamed tokens and server metrics from the frontend and every worker, and leave no
process behind (checked by process group and by the tag every Dynamo process carries in its environment).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest
import ray
from ray.cluster_utils import Cluster

from raybench.config import parse_job
from raybench.deploy.process import group_alive
from raybench.sweep import run_job
from raybench.testing.dynamo_env import dynamo_missing, infrastructure_missing, tagged_processes

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(dynamo_missing() is not None, reason=str(dynamo_missing())),
]


@pytest.fixture(scope="module")
def dynamo_cluster() -> Iterator[Cluster]:
    """Two nodes on 127.0.0.1: the head offers `dyn_prefill`, the worker node `dyn_decode`."""
    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 4, "node_ip_address": "127.0.0.1", "include_dashboard": False,
                        "resources": {"dyn_prefill": 4}},
    )  # fmt: skip
    cluster.add_node(num_cpus=4, node_ip_address="127.0.0.1", resources={"dyn_decode": 4})
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, logging_level=logging.WARNING)
    try:
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


def _job(tmp_path: Path, infrastructure: dict[str, Any]) -> Any:
    common = {"kind": "dynamo", "backend": "mocker", "speedup_ratio": 4, "router_mode": "round-robin",
              "frontend": {"num_cpus": 0.2}, "infrastructure": infrastructure, "ready_timeout_s": 120}  # fmt: skip
    pool = {"workers": 1, "num_cpus": 0.5}
    return parse_job({
        "name": "dynamo-it", "model": {"name": "tiny-dynamo"},
        "engines": [
            {**common, "id": "agg", "aggregated": {**pool, "workers": 2}},
            {**common, "id": "disagg", "prefill": {**pool, "node_resource": "dyn_prefill"},
             "decode": {**pool, "node_resource": "dyn_decode"}, "kv_transfer": {"bandwidth_gb_s": 50}},
        ],
        "workload": {"isl": {"mean": 48}, "osl": {"mean": 12}, "api": "chat"},
        "load": {"steps": [1, 2, 4], "duration_s": 1.0, "warmup_requests": 2},
        "slo": {"ttft_p99_ms": 5000, "itl_p50_ms": 1000},
        "fleet": {"generators": 1, "num_cpus_per_generator": 0.5}, "output": {"uri": str(tmp_path)},
    })  # fmt: skip


def _check_engine(run_dir: Path, summary: dict[str, Any], roles: list[str]) -> None:
    steps = summary["steps"]
    assert [s["concurrency"] for s in steps] == [1, 2, 4]
    assert all(s["requests"] > 0 and s["ttft_p50_ms"] is not None for s in steps)  # tokens really streamed
    records = ds.dataset(run_dir / "records", format="parquet").to_table().to_pylist()
    measured = [r for r in records if r["phase"] == "measure"]
    assert measured and all(r["status"] == "ok" and r["first_token_ns"] is not None for r in measured)
    assert all(r["output_tokens"] == 12 for r in measured)
    replicas = summary["provenance"]["replicas"]
    assert [r["role"] for r in replicas if r.get("metrics_replica")] == ["frontend", *roles]
    metrics = ds.dataset(run_dir / "server_metrics", format="parquet").to_table().to_pylist()
    scraped = {(m["replica"], m["metric"]) for m in metrics}
    assert ("replica-0", "generation_tokens_total") in scraped  # the frontend's dynamo_frontend_* names
    for index in range(1, len(roles) + 1):  # every worker's own metrics, kept per replica
        assert (f"replica-{index}", "worker_requests_total") in scraped
    assert all(s["server_metrics"]["scrape_errors"] == 0 for s in steps)
    tags = {r["deployment_tag"] for r in replicas}
    assert len(tags) == 1
    assert tagged_processes(tags.pop()) == []  # nothing of the deployment survives its teardown
    assert not any(group_alive(r["pgid"]) for r in replicas)


def _run_and_check(tmp_path: Path, infrastructure: dict[str, Any], infra_roles: set[str]) -> None:
    result = run_job(_job(tmp_path, infrastructure))
    assert result.ok, result.failures
    base = tmp_path / result.run_id / "engines"
    _check_engine(base / "agg", result.summaries["agg"], ["aggregated", "aggregated"])
    _check_engine(base / "disagg", result.summaries["disagg"], ["prefill", "decode"])
    replicas = {r["role"]: r for r in result.summaries["disagg"]["provenance"]["replicas"]}
    assert replicas["prefill"]["node_id"] != replicas["decode"]["node_id"]  # each pool on its own node
    assert set(replicas) - {"frontend", "prefill", "decode"} == infra_roles
    args = result.summaries["disagg"]["provenance"]["engine_args"]
    assert args["topology"] == "disaggregated 1P+1D"
    assert args["kv_transfer_resolved"] == {"connector": "nixl", "mocker_kv_transfer_bandwidth_gb_s": 50.0}


@pytest.mark.skipif(infrastructure_missing() is not None, reason=str(infrastructure_missing()))
def test_dynamo_with_etcd_and_nats(dynamo_cluster: Cluster, tmp_path: Path) -> None:
    _run_and_check(tmp_path, {"discovery": "etcd", "start": True, "nats": True}, {"etcd", "nats"})


def test_dynamo_with_file_discovery(dynamo_cluster: Cluster, tmp_path: Path) -> None:
    _run_and_check(tmp_path, {"discovery": "file", "nats": False}, set())

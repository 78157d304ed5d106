"""A replica spanning two nodes of a loopback Ray cluster with fake GPUs, against the multi-node fake engine:
one placement-group bundle per node, each node's process with its own GPUs and rank flags, readiness that
waits for the head (which waits for every node), a lost node failing the replica, and no orphans."""

from __future__ import annotations

import json
import os
import signal
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import ray
from ray.cluster_utils import Cluster

from raybench.config.engine import ENGINE_SPECS
from raybench.config.job import ModelSpec
from raybench.deploy.deployment import EngineDeployment
from raybench.deploy.process import group_alive, wait_group_gone
from raybench.engines import adapter_for
from raybench.testing.engines import fake_launcher
from raybench.testing.engines.multinode import LOST_PEER_STATUS
from raybench.testing.local_cluster import LocalClusterSpec, NodeSpec, start_local_cluster

pytestmark = pytest.mark.integration
GPUS_PER_NODE = 2


@pytest.fixture(scope="module")
def gpu_cluster() -> Iterator[Cluster]:
    """Two nodes on 127.0.0.1, each with 2 (fake) GPUs: Ray schedules and assigns them like real ones."""
    node = NodeSpec(num_gpus=GPUS_PER_NODE)
    cluster = start_local_cluster(LocalClusterSpec(head=node, workers=[node]))
    try:
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


def _deployment(kind: str, tmp_path: Path) -> EngineDeployment:
    # tp 4 > the 2 GPUs of any node, and no `nodes` in the spec: raybench derives 2 nodes from the cluster
    spec = ENGINE_SPECS[kind].model_validate({
        "kind": kind, "launcher": fake_launcher(kind), "tensor_parallel_size": 4, "num_cpus": 0.5,
        "env": {"RAYBENCH_FAKE_LOAD_S": "0.3"},
    })  # fmt: skip
    return EngineDeployment(adapter_for(spec, ModelSpec(name="tiny-model"), f"mn-{kind}"), str(tmp_path))


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.loads(response.read())


def _bundle_nodes(name: str) -> dict[int, str]:
    tables = ray.util.placement_group_table().values()  # type: ignore[no-untyped-call]
    (table,) = [t for t in tables if t["name"] == name and t["state"] == "CREATED"]
    assert table["strategy"] == "STRICT_SPREAD"
    return {int(k): str(v) for k, v in table["bundles_to_node_id"].items()}


def _check_layout(deployment: EngineDeployment, kind: str, base_url: str) -> None:
    (replica,) = deployment.replicas
    nodes = replica["nodes"]
    bundles = _bundle_nodes(f"raybench-mn-{kind}-replica-0")
    assert len(set(bundles.values())) == 2, "one bundle per node"
    assert [n["node_id"] for n in nodes] == [bundles[0], bundles[1]], "head on bundle 0, node 1 on bundle 1"
    served = _get(base_url + "/fake/nodes")
    assert served["nnodes"] == 2
    for rank, (actor, process) in enumerate(zip(nodes, served["nodes"], strict=True)):
        assert process["rank"] == rank and actor["node_rank"] == rank
        assert process["cuda_visible_devices"] == ",".join(actor["gpu_ids"])  # Ray's assignment, inherited
        assert len(actor["gpu_ids"]) == GPUS_PER_NODE
        assert actor["env"]["CUDA_VISIBLE_DEVICES"] == process["cuda_visible_devices"]
        rank_flag = process["argv"].index("--node-rank")
        assert process["argv"][rank_flag + 1] == str(rank) and "--nnodes" in process["argv"]
    assert replica["base_url"] == base_url


@pytest.mark.parametrize("kind", ["sglang", "vllm"])
def test_a_replica_spans_two_nodes_and_leaves_nothing_behind(gpu_cluster: Cluster, kind: str, tmp_path: Path) -> None:
    deployment = _deployment(kind, tmp_path)
    (base_url,) = deployment.start()
    try:
        _check_layout(deployment, kind, base_url)
        assert deployment.alive()
        pgids = [p for p in deployment.pgids() if p is not None]
        assert len(pgids) == 2 and all(group_alive(p) for p in pgids)
        deployment.sync_logs()
        head_log = (tmp_path / "engines" / f"mn-{kind}" / "logs" / "replica-0.log").read_text()
        assert head_log.index("node 1 joined") < head_log.index("ready on"), "the head serves only once node 1 joined"
        os.killpg(pgids[1], signal.SIGKILL)  # node 1's engine dies: the whole replica is lost, as with NCCL
        deadline = time.monotonic() + 20
        while deployment.alive() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not deployment.alive()
        reason = deployment.failure_reason()
        while "replica-0 exited" not in reason and time.monotonic() < deadline:  # the head follows its node
            time.sleep(0.2)
            reason = deployment.failure_reason()
        assert "replica-0-node-1 exited with signal SIGKILL" in reason
        assert f"replica-0 exited with status {LOST_PEER_STATUS}" in reason and "lost node 1" in reason
    finally:
        deployment.teardown()
    assert all(wait_group_gone(p, 15.0) for p in pgids), "an engine process group outlived teardown"
    assert not [t for t in ray.util.placement_group_table().values() if t["state"] == "CREATED"]  # type: ignore[no-untyped-call]


def test_ray_metrics_export_urls_answer_prometheus_text(gpu_cluster: Cluster) -> None:
    """Where `ray_serve_llm` engine metrics are scraped: every node's metrics-export port answers /metrics."""
    from raybench.deploy.scrape import ray_metrics_urls

    urls = ray_metrics_urls(ray.nodes())  # type: ignore[no-untyped-call]
    assert len(urls) == 2 and all(u.startswith("http://127.0.0.1:") for u in urls)
    deadline = time.monotonic() + 30
    for url in urls:
        while True:  # the metrics agent starts a little after its raylet
            try:
                with urllib.request.urlopen(url + "/metrics", timeout=5) as response:
                    text = response.read().decode()
                break
            except OSError:
                assert time.monotonic() < deadline, f"{url}/metrics never answered"
                time.sleep(0.5)
        assert "# TYPE ray_" in text or "\nray_" in text

"""clusters/local.yaml brought up by raybench.testing.local_cluster: `loadgen` pinning and its errors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import ray

from raybench.config.job import FleetSpec
from raybench.errors import RunAborted
from raybench.results import ResultStore
from raybench.sweep.fleet import Fleet
from raybench.testing.local_cluster import load_cluster_spec, start_local_cluster

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def local_cluster() -> Iterator[Any]:
    cluster = start_local_cluster(ROOT / "clusters" / "local.yaml")
    try:
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


def _loadgen_node() -> str:
    return next(str(n["NodeID"]) for n in ray.nodes() if n.get("Alive") and n["Resources"].get("loadgen"))


def test_local_yaml_gives_three_loopback_nodes(local_cluster: Any) -> None:
    spec = load_cluster_spec(ROOT / "clusters" / "local.yaml")
    alive = [n for n in ray.nodes() if n.get("Alive")]
    assert len(alive) == 1 + len(spec.workers) == 3
    assert {n["NodeManagerAddress"] for n in alive} == {"127.0.0.1"}


def test_generators_pinned_to_loadgen_nodes(local_cluster: Any, tmp_path: Path) -> None:
    fleet = Fleet(FleetSpec(generators=3, placement="loadgen", num_cpus_per_generator=0.5), ResultStore(str(tmp_path)))
    try:
        assert fleet.node_ids == [_loadgen_node()] * 3
        offsets = fleet.measure_offsets()
        assert all(o.uncertainty_ns < 50_000_000 for o in offsets)  # RTT/2 of a loopback Ray call
    finally:
        fleet.shutdown()


def test_too_few_loadgen_resources_is_a_clear_error(local_cluster: Any, tmp_path: Path) -> None:
    with pytest.raises(RunAborted, match="need 5 of the `loadgen` resource, the cluster offers 4"):
        Fleet(FleetSpec(generators=5, placement="loadgen"), ResultStore(str(tmp_path)))

"""Where one replica's nodes go: its node layout (from the spec and the cluster) and its placement group."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import ray
from ray.util.placement_group import PlacementGroup, placement_group, remove_placement_group

from raybench.cluster.layout import fewest_even_nodes, nodes_holding
from raybench.engines.base import EngineAdapter
from raybench.errors import EngineError

__all__ = ["NodeLayout", "cluster_node_gpus", "plan_layout", "reserve_nodes"]


@dataclass(frozen=True)
class NodeLayout:
    """One replica over `nodes` nodes, each running `gpus_per_node` of its GPUs with `cpus_per_node` CPUs."""

    nodes: int
    gpus_per_node: float
    cpus_per_node: float

    def bundles(self) -> list[dict[str, float]]:
        """One bundle per node (placed STRICT_SPREAD: no two on one node); bundle 0 holds the head."""
        bundle = {"CPU": self.cpus_per_node, **({"GPU": self.gpus_per_node} if self.gpus_per_node else {})}
        return [dict(bundle) for _ in range(self.nodes)]


def _auto_nodes(gpus: float, node_gpus: list[float], refusal: str, what: str) -> int:
    """The fewest nodes that split `gpus` evenly and that the cluster has; 1 when one node holds them all."""
    largest = max(node_gpus, default=0.0)
    if gpus <= largest or largest == 0:
        return 1  # fits (or the cluster has no GPU node at all: Ray itself reports the infeasible request)
    if refusal:
        raise EngineError(
            f"{what} needs {gpus:g} GPUs but the largest node has {largest:g}, and it cannot span nodes: {refusal}"
        )
    nodes = fewest_even_nodes(gpus, node_gpus)
    if nodes is not None:
        return nodes
    raise EngineError(
        f"{what} needs {gpus:g} GPUs, which no set of equal nodes in this cluster holds (nodes' GPUs: "
        f"{sorted(node_gpus, reverse=True)}); set nodes so tensor_parallel_size x pipeline_parallel_size splits "
        "evenly over nodes the cluster has"
    )


def plan_layout(adapter: EngineAdapter, node_gpus: list[float]) -> NodeLayout:
    """The replica's layout: `nodes` from the spec, else 1 when the largest node holds tp x pp GPUs, else the
    fewest nodes that split them evenly. Fails with the reason when the cluster cannot hold it."""
    gpus, what = adapter.num_gpus, f"{adapter.engine_id} ({adapter.kind})"
    nodes = adapter.nodes or _auto_nodes(gpus, node_gpus, adapter.multinode_refusal, what)
    if nodes == 1:
        return NodeLayout(1, gpus, adapter.num_cpus)
    per_node = gpus / nodes
    if nodes_holding(node_gpus, per_node) < nodes:
        raise EngineError(
            f"{what} spans {nodes} nodes with {per_node:g} GPUs each, but the cluster has "
            f"{nodes_holding(node_gpus, per_node)} such nodes (nodes' GPUs: {sorted(node_gpus, reverse=True)})"
        )
    return NodeLayout(nodes, per_node, adapter.num_cpus)


def cluster_node_gpus() -> list[float]:
    """The GPU count of every alive node of the connected cluster."""
    nodes: list[dict[str, Any]] = ray.nodes()  # type: ignore[no-untyped-call]
    return [float(n.get("Resources", {}).get("GPU", 0.0)) for n in nodes if n.get("Alive")]


def reserve_nodes(layout: NodeLayout, name: str, timeout_s: float = 120.0) -> PlacementGroup:
    """A STRICT_SPREAD placement group with the layout's bundles, ready; removed again if it cannot be placed."""
    group: PlacementGroup = placement_group(layout.bundles(), strategy="STRICT_SPREAD", name=name)
    try:
        ray.get(group.ready(), timeout=timeout_s)
    except ray.exceptions.GetTimeoutError:
        remove_placement_group(group)
        raise EngineError(
            f"{name}: the cluster did not place {layout.nodes} bundles {layout.bundles()[0]} on distinct nodes "
            f"within {timeout_s:g} s (other work holds the GPUs, or too few nodes)"
        ) from None
    return group

"""How many equal nodes one replica spans: the node-layout rule shared by deployment and the fit check (no Ray)."""

from __future__ import annotations

import math

__all__ = ["fewest_even_nodes", "nodes_holding"]


def nodes_holding(node_gpus: list[float], per_node: float) -> int:
    """How many nodes offer at least `per_node` GPUs."""
    return sum(1 for g in node_gpus if g >= per_node)


def fewest_even_nodes(gpus: float, node_gpus: list[float]) -> int | None:
    """The fewest nodes that split `gpus` evenly and that the cluster has (1 when the largest node holds them
    all), or None when no set of equal nodes does."""
    largest = max(node_gpus, default=0.0)
    if gpus <= largest:
        return 1
    if largest == 0:
        return None
    total = int(gpus)
    for nodes in range(math.ceil(gpus / largest), total + 1):
        if total % nodes == 0 and nodes_holding(node_gpus, total / nodes) >= nodes:
            return nodes
    return None

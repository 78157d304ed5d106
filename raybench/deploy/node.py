"""The address of the Ray node this process runs on, as the cluster itself advertises it."""

from __future__ import annotations

import ray

__all__ = ["node_ip"]


def node_ip() -> str:
    """This node's address from the cluster's node table (127.0.0.1 on a loopback cluster).

    Not `ray.util.get_node_ip_address()`: in a worker process it may guess the host's outward
    address, so a server started on a loopback-only cluster would listen beyond loopback.
    """
    node_id = ray.get_runtime_context().get_node_id()
    for node in ray.nodes():  # type: ignore[no-untyped-call]
        if node.get("NodeID") == node_id:
            return str(node["NodeManagerAddress"])
    raise RuntimeError(f"node {node_id} is not in the cluster's node table")

"""The Ray side of `cluster check`: a cluster's nodes read through its dashboard URL alone (no driver joins)."""

from __future__ import annotations

import dataclasses
from typing import Any

from raybench.cluster.fit import Inventory, inventory_from_nodes
from raybench.errors import RaybenchError

__all__ = ["dashboard_url", "fetch_inventory"]


def dashboard_url(address: str) -> str:
    """`http://HEAD:8265` from what a user types: a URL, or HOST:PORT (http assumed)."""
    address = address.strip().rstrip("/")
    if not address:
        raise RaybenchError("--address is empty: give the Ray dashboard URL, e.g. --address http://HEAD:8265")
    if address.startswith("ray://"):
        raise RaybenchError(
            f"--address {address} is a Ray Client address; give the dashboard instead, e.g. http://HEAD:8265"
        )
    return address if address.startswith(("http://", "https://")) else f"http://{address}"


def fetch_inventory(address: str, timeout_s: int = 30) -> Inventory:
    """Every node of the cluster behind the dashboard at `address`, through Ray's state API (GET /api/v0/nodes)."""
    from ray.util.state import list_nodes  # imports Ray: only when a cluster is asked about

    url = dashboard_url(address)
    try:
        nodes = list_nodes(address=url, detail=True, limit=10_000, timeout=timeout_s, raise_on_missing_output=False)
    except Exception as exc:  # Ray raises ConnectionError, RayStateApiException, requests' errors...
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise RaybenchError(
            f"cannot read the nodes of the Ray cluster at {url}: {first}. Check --address (the dashboard, "
            "http://HEAD:8265; with KubeRay, port-forward the head service's 8265) and that the head was started "
            "with a dashboard (`ray start --head --dashboard-host 0.0.0.0`)"
        ) from None
    rows: list[dict[str, Any]] = [dataclasses.asdict(node) for node in nodes]  # NodeState dataclasses
    return inventory_from_nodes(rows)

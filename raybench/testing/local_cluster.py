"""A "multi-node" Ray cluster on one machine from clusters/local.yaml: a head and N worker raylets, all on
127.0.0.1, for trying multi-node behaviour (generator spreading, `loadgen` pinning) without real nodes.

    python -m raybench.testing.local_cluster up clusters/local.yaml   # prints the address; Ctrl-C stops it

then, in another shell: `RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 RAY_ADDRESS=<address> raybench run jobs/quickstart.yaml`
(the first variable keeps Ray from rewriting the loopback address to the host's outward one).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import yaml
from pydantic import Field

from raybench.config.base import StrictModel

__all__ = ["LocalClusterSpec", "NodeSpec", "load_cluster_spec", "start_local_cluster", "wait_until_stopped"]


class NodeSpec(StrictModel):
    """One raylet: its CPUs, GPUs (0 here; the simulated engine needs none) and custom resources."""

    name: str = "node"
    num_cpus: int = Field(default=2, ge=1)
    num_gpus: int = Field(default=0, ge=0)
    resources: dict[str, float] = Field(default_factory=dict)


class LocalClusterSpec(StrictModel):
    """clusters/local.yaml: loopback only, so `node_ip_address` must be 127.0.0.1."""

    cluster_name: str = "raybench-local"
    node_ip_address: str = Field(default="127.0.0.1", pattern=r"^127\.0\.0\.1$")
    head: NodeSpec = NodeSpec(name="head")
    workers: list[NodeSpec] = Field(default_factory=list)


def load_cluster_spec(path: str | Path) -> LocalClusterSpec:
    return LocalClusterSpec.model_validate(yaml.safe_load(Path(path).read_text(encoding="utf-8")))


def start_local_cluster(spec: LocalClusterSpec | str | Path, connect: bool = True) -> Any:
    """Start the head and every worker on 127.0.0.1; returns the `ray.cluster_utils.Cluster`
    (`.address`, `.shutdown()`). With `connect`, this process's Ray driver joins it."""
    # Ray rewrites a loopback address to the host's outward IP when a driver connects unless "Ray
    # clusters" are off; off, every node and driver stays on 127.0.0.1.
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    import ray
    from ray.cluster_utils import Cluster

    if not isinstance(spec, LocalClusterSpec):
        spec = load_cluster_spec(spec)
    cluster = Cluster(initialize_head=True, head_node_args=_node_args(spec.head, spec, head=True))
    for worker in spec.workers:
        cluster.add_node(**_node_args(worker, spec, head=False))
    cluster.wait_for_nodes()
    if connect:
        ray.init(address=cluster.address, logging_level=logging.WARNING)
    return cluster


def _node_args(node: NodeSpec, spec: LocalClusterSpec, head: bool) -> dict[str, Any]:
    args: dict[str, Any] = {"num_cpus": node.num_cpus, "num_gpus": node.num_gpus,
                            "node_ip_address": spec.node_ip_address}  # fmt: skip
    if node.resources:
        args["resources"] = dict(node.resources)
    if head:
        args["include_dashboard"] = False
    return args


def wait_until_stopped() -> None:
    """Block a `... up` command until Ctrl-C or SIGTERM; the caller then stops what it started."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with contextlib.suppress(KeyboardInterrupt):
        stop.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m raybench.testing.local_cluster")
    parser.add_argument("action", choices=["up"], help="start the cluster and keep it up until Ctrl-C")
    parser.add_argument("spec", nargs="?", default="clusters/local.yaml")
    args = parser.parse_args(argv)
    cluster = start_local_cluster(args.spec, connect=False)
    print(f"local Ray cluster up at {cluster.address} (head + {len(cluster.worker_nodes)} workers on 127.0.0.1)")
    print(
        f"use it: RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 RAY_ADDRESS={cluster.address} raybench run "
        "jobs/quickstart.yaml ; Ctrl-C stops it"
    )
    wait_until_stopped()
    cluster.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())

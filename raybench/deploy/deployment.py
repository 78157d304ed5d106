"""EngineDeployment: places an engine's replicas on the cluster, waits for them, tears them down."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
import urllib.parse
from typing import Any

import ray
from ray.util.placement_group import PlacementGroup, remove_placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from raybench.deploy.placement import NodeLayout, cluster_node_gpus, plan_layout, reserve_nodes
from raybench.deploy.replica import EngineReplicaActor
from raybench.deploy.scrape import ray_metrics_urls
from raybench.engines.base import EngineAdapter, NodeRole
from raybench.engines.readiness import check_ready
from raybench.errors import EngineError
from raybench.results.store import ResultStore

__all__ = ["EngineDeployment"]


class EngineDeployment:
    """The replicas of one engine under test; `start()` returns their base URLs once all are ready."""

    def __new__(cls, adapter: EngineAdapter, store: ResultStore | str) -> EngineDeployment:
        if cls is EngineDeployment and getattr(adapter, "deployment", "replicas") == "dynamo":
            from raybench.deploy.dynamo import DynamoDeployment  # frontend, worker pools, etcd/NATS: not replicas

            return super().__new__(DynamoDeployment)
        return super().__new__(cls)

    def __init__(self, adapter: EngineAdapter, store: ResultStore | str) -> None:
        self.adapter = adapter
        self._store = store if isinstance(store, ResultStore) else ResultStore(store)
        self._actors: list[Any] = []
        self._names: list[str] = []  # each actor's replica (and node) name, for failure reasons
        self._groups: list[PlacementGroup] = []
        self.replicas: list[dict[str, Any]] = []

    def start(self) -> list[str]:
        if not self.adapter.managed:
            return self._check_external()
        layout = plan_layout(self.adapter, cluster_node_gpus())
        try:
            if layout.nodes == 1:
                heads = [self._actor(f"replica-{i}", i) for i in range(self.adapter.replicas)]
                self.replicas = ray.get([actor.start.remote() for actor in heads])
            else:
                self.replicas = self._start_spanning(layout)
        except (ray.exceptions.RayTaskError, EngineError) as exc:
            self.teardown()
            cause = exc.cause if isinstance(exc, ray.exceptions.RayTaskError) else exc
            raise EngineError(str(cause if isinstance(cause, EngineError) else exc)) from None
        return [r["base_url"] for r in self.replicas]

    def _actor(self, name: str, index: int, rank: int = 0, group: PlacementGroup | None = None) -> Any:
        options: dict[str, Any] = {"num_cpus": self.adapter.num_cpus, "num_gpus": self.adapter.num_gpus}
        if group is not None:
            options["num_gpus"] = group.bundle_specs[rank].get("GPU", 0.0)
            options["scheduling_strategy"] = PlacementGroupSchedulingStrategy(group, placement_group_bundle_index=rank)
        actor = EngineReplicaActor.options(**options).remote(self.adapter, index, self._store, rank)  # type: ignore[attr-defined]
        self._actors.append(actor)
        self._names.append(name)
        return actor

    def _start_spanning(self, layout: NodeLayout) -> list[dict[str, Any]]:
        """Each replica over `layout.nodes` nodes: its placement group (one bundle per node, STRICT_SPREAD),
        the head on bundle 0, every other node's engine process launched first, then the head waited on."""
        pending = []
        for i in range(self.adapter.replicas):
            group = reserve_nodes(layout, f"raybench-{self.adapter.engine_id}-replica-{i}")
            self._groups.append(group)
            head = self._actor(f"replica-{i}", i, 0, group)
            addr, port = ray.get(head.rendezvous.remote())
            workers = [self._actor(f"replica-{i}-node-{k}", i, k, group) for k in range(1, layout.nodes)]
            nodes = ray.get(
                [w.launch_node.remote(NodeRole(layout.nodes, r, addr, port)) for r, w in enumerate(workers, start=1)]
            )
            pending.append((head.start.remote(NodeRole(layout.nodes, 0, addr, port)), nodes))
        replicas = []
        for ref, nodes in pending:
            info = ray.get(ref)
            replicas.append({**info, "nodes": [{**info, "node_rank": 0}, *nodes]})
        return replicas

    def _check_external(self) -> list[str]:
        urls = self.adapter.external_urls()
        for url in urls:
            rule = self.adapter.readiness()
            state = asyncio.run(
                check_ready(url, self.adapter.served_model, rule.health_path, extra_paths=rule.extra_paths)
            )
            if not state.ready:
                raise EngineError(
                    f"{self.adapter.engine_id}: endpoint {url} is not ready: {state.reason}. "
                    "Start the server, or fix base_url / model.name in the job spec."
                )
        self.replicas = [{"replica": f"external-{i}", "base_url": u, "external": True} for i, u in enumerate(urls)]
        return urls

    def alive(self) -> bool:
        """False when any launched replica's server has exited, or its port refuses connections (the engine
        died and its guard has not reported yet: on a loaded host that can take seconds)."""
        if not self._actors:
            return True
        try:
            if not all(ray.get([a.alive.remote() for a in self._actors], timeout=30)):
                return False
        except ray.exceptions.RayError:
            return False  # the replica actor itself is gone
        return not any(_refused(r["base_url"]) for r in self.replicas if "base_url" in r)

    def failure_reason(self, settle_s: float = 15.0) -> str:
        """Why replicas are gone: each dead one's exit status and last log lines (waiting up to `settle_s`
        for the supervisors to report an exit the port already showed)."""
        deadline = time.monotonic() + settle_s
        while (reason := self._exit_reasons()) == "" and time.monotonic() < deadline:
            time.sleep(0.2)
        return reason or "a replica stopped answering"

    def _exit_reasons(self) -> str:
        reasons = []
        for name, actor in zip(self._names, self._actors, strict=True):
            try:
                info = ray.get(actor.exit_info.remote(), timeout=30)
            except ray.exceptions.RayError as exc:
                reasons.append(f"{name}: its actor died ({type(exc).__name__})")
                continue
            if info:
                tail = "\n".join(info["log_tail"].splitlines()[-5:])
                reasons.append(f"{info['replica']} exited with {info['exit']}; last log lines:\n{tail}")
        return "\n".join(reasons)

    def metrics_urls(self, base_urls: list[str]) -> list[str]:
        """Where the engine's metrics are scraped: its replicas' URLs, or every Ray node's metrics export."""
        if self.adapter.metric_map().target == "ray_nodes":
            return ray_metrics_urls(ray.nodes())  # type: ignore[no-untyped-call]
        return base_urls

    def sync_logs(self) -> None:
        """Copy every replica's log so far to the result store."""
        with contextlib.suppress(ray.exceptions.RayError):
            ray.get([a.sync_log.remote() for a in self._actors], timeout=60)

    def pgids(self) -> list[int | None]:
        """Each replica's server process group (for orphan checks)."""
        return list(ray.get([a.pgid.remote() for a in self._actors]))

    def teardown(self) -> None:
        """Stop every replica (process groups killed, logs stored) and release the actors."""
        for actor in self._actors:
            with contextlib.suppress(ray.exceptions.RayError):
                ray.get(actor.stop.remote(), timeout=60)
            with contextlib.suppress(ray.exceptions.RayError):
                ray.kill(actor)
        for group in self._groups:
            with contextlib.suppress(Exception):  # already gone with its job
                remove_placement_group(group)
        self._actors, self._names, self._groups = [], [], []


def _refused(base_url: str, timeout_s: float = 2.0) -> bool:
    """True when nothing listens at `base_url` any more (a busy server that is slow to accept is not refused)."""
    url = urllib.parse.urlsplit(base_url)
    try:
        with socket.create_connection((url.hostname or "127.0.0.1", url.port or 80), timeout=timeout_s):
            return False
    except ConnectionRefusedError:
        return True
    except OSError:
        return False

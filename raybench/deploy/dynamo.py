"""DynamoDeployment: etcd + NATS and the frontend on the head node, worker pools in placement groups, readiness.

Start order: infrastructure (etcd, NATS, or a file-discovery folder), the frontend, then every pool's
workers at once, each pool in its own placement group (one bundle per worker, the pool's strategy,
and its `node_resource` when set). Ready when the frontend's /health lists every expected worker and
/v1/models the model. `start()` returns the frontend's URL first (the load generators' target), then
each worker's system URL (scraped for per-role metrics). Teardown stops everything in reverse order.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
import uuid
from typing import Any

import ray
from ray.util.placement_group import PlacementGroup, placement_group
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy, PlacementGroupSchedulingStrategy

from raybench.deploy.deployment import EngineDeployment
from raybench.deploy.dynamo_actor import DynamoProcessActor
from raybench.engines.base import EngineAdapter
from raybench.engines.dynamo import DynamoAdapter, ProcessPlan
from raybench.engines.dynamo_health import describe_rule, wait_dynamo_ready
from raybench.errors import EngineError
from raybench.results.store import ResultStore

__all__ = ["DynamoDeployment", "head_node_id"]


def head_node_id() -> str:
    """The Ray head node's id (where etcd, NATS and the frontend go)."""
    for node in ray.nodes():  # type: ignore[no-untyped-call]
        if node.get("Alive") and "node:__internal_head__" in node.get("Resources", {}):
            return str(node["NodeID"])
    return str(ray.get_runtime_context().get_node_id())


class DynamoDeployment(EngineDeployment):
    """One Dynamo deployment under test: infrastructure, frontend and worker pools, as one engine."""

    adapter: DynamoAdapter

    def __init__(self, adapter: EngineAdapter, store: ResultStore | str) -> None:
        super().__init__(adapter, store)
        self._file_kv: str | None = None
        self.tag = uuid.uuid4().hex[:12]  # marks every process of this deployment (RAYBENCH_DYNAMO_TAG)

    def start(self) -> list[str]:
        try:
            return self._start()
        except (ray.exceptions.RayError, EngineError) as exc:
            self.teardown()
            cause = exc.cause if isinstance(exc, ray.exceptions.RayTaskError) else exc
            raise EngineError(str(cause if isinstance(cause, EngineError) else exc)) from None

    def _start(self) -> list[str]:
        adapter, infra = self.adapter, self.adapter.spec.infrastructure
        head = NodeAffinitySchedulingStrategy(head_node_id(), soft=False)
        started = {info["role"]: info for info in self._launch_all(adapter.infrastructure_plans(), head, {})}
        etcd = f"http://{started['etcd']['host']}:{started['etcd']['ports']['client']}" if "etcd" in started else None
        nats = f"nats://{started['nats']['host']}:{started['nats']['ports']['client']}" if "nats" in started else None
        if infra.discovery == "file":
            self._file_kv = infra.file_kv_dir or tempfile.mkdtemp(prefix="raybench-dynamo-kv-")
        env = adapter.discovery_env(etcd or infra.etcd_endpoints, nats or infra.nats_server, self._file_kv)
        env["RAYBENCH_DYNAMO_TAG"] = self.tag
        plans, strategies = self._pool_plans()  # workers register by themselves: all start with the frontend
        frontend, *workers = self._launch_all([adapter.frontend_plan(infra.nats), *plans], [head, *strategies], env)
        base_url = str(frontend["base_url"])
        expected = adapter.expected_instances()
        state = asyncio.run(
            wait_dynamo_ready(
                base_url,
                adapter.served_model,
                adapter.spec.namespace,
                expected,
                adapter.spec.ready_timeout_s,
                self.alive,
            )
        )
        if not state.ready:
            raise EngineError(
                f"{adapter.engine_id} did not become ready ({describe_rule(adapter.spec.namespace, expected)}): "
                f"{state.reason}\n{self.failure_reason() if not self.alive() else ''}".rstrip()
            )
        scraped = [frontend, *workers]
        for index, info in enumerate(scraped):
            info["metrics_replica"] = f"replica-{index}"  # the scraper's name for this URL
        self.replicas = [*scraped, *(started.values())]
        for info in self.replicas:
            info["deployment_tag"] = self.tag
        return [str(info["base_url"]) for info in scraped]

    def _launch_all(self, plans: list[ProcessPlan], strategy: Any, env: dict[str, str]) -> list[dict[str, Any]]:
        """Start one actor per plan with `strategy` (a scheduling strategy per plan, or one for all)."""
        refs = []
        for i, plan in enumerate(plans):
            chosen = strategy[i] if isinstance(strategy, list) else strategy
            options = {"num_cpus": plan.num_cpus, "num_gpus": plan.num_gpus, "scheduling_strategy": chosen}
            actor = DynamoProcessActor.options(**options).remote(self.adapter.engine_id, plan.name, self._store)  # type: ignore[attr-defined]
            self._actors.append(actor)
            self._names.append(plan.name)
            timeout = self.adapter.spec.infrastructure.ready_timeout_s if plan.role in ("etcd", "nats") else None
            refs.append(actor.start.remote(plan, env, timeout or self.adapter.spec.ready_timeout_s))
        return list(ray.get(refs))

    def _pool_plans(self) -> tuple[list[ProcessPlan], list[Any]]:
        """Every pool's worker plans, each pool in its own (reserved) placement group, one bundle per worker."""
        plans: list[ProcessPlan] = []
        strategies: list[Any] = []
        for role, pool in self.adapter.spec.pools():
            pool_plans = [
                self.adapter.worker_plan(role, i, self.adapter.spec.infrastructure.nats) for i in range(pool.workers)
            ]
            group = self._reserve(role, pool_plans, pool.node_resource, pool.placement)
            plans += pool_plans
            strategies += [
                PlacementGroupSchedulingStrategy(group, placement_group_bundle_index=i) for i in range(pool.workers)
            ]
        return plans, strategies

    def _reserve(self, role: str, plans: list[ProcessPlan], resource: str | None, strategy: str) -> PlacementGroup:
        bundles = [{"CPU": p.num_cpus, **({"GPU": p.num_gpus} if p.num_gpus else {})} for p in plans]
        if resource:
            bundles = [{**b, resource: 0.001} for b in bundles]
        name = f"raybench-{self.adapter.engine_id}-{role}-{self.tag}"
        group: PlacementGroup = placement_group(bundles, strategy=strategy, name=name)
        self._groups.append(group)
        timeout_s = self.adapter.spec.infrastructure.ready_timeout_s
        ready, _ = ray.wait([group.ready()], timeout=timeout_s)
        if not ready:
            where = f" on nodes offering the {resource!r} resource" if resource else ""
            raise EngineError(
                f"{self.adapter.engine_id}: the {role} pool's {len(plans)} worker(s) ({bundles[0]} each, {strategy})"
                f" found no room{where} within {timeout_s:g} s; add nodes, or lower workers / num_gpus / num_cpus"
            )
        return group

    def teardown(self) -> None:
        """Workers and the frontend first (together), then NATS and etcd; then placement groups and the
        discovery folder. Each stage's process groups are stopped in parallel."""
        infra = [n in ("etcd", "nats") for n in self._names]
        for stage in ([a for a, i in zip(self._actors, infra) if not i], [a for a, i in zip(self._actors, infra) if i]):
            with contextlib.suppress(ray.exceptions.RayError):
                ray.get([actor.stop.remote() for actor in stage], timeout=60)
        super().teardown()  # each actor: stop (already done), kill; placement groups removed
        if self._file_kv and not self.adapter.spec.infrastructure.file_kv_dir:
            shutil.rmtree(self._file_kv, ignore_errors=True)
        self._file_kv = None

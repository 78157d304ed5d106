"""The fleet of LoadGenerator actors: placement, node checks, clock offsets, arming and starting steps."""

from __future__ import annotations

import contextlib
from dataclasses import asdict
from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from raybench.config.job import FleetSpec
from raybench.errors import RunAborted
from raybench.loadgen.actor import GeneratorStep, LoadGeneratorActor
from raybench.loadgen.endpoint import Endpoint
from raybench.results.store import ResultStore
from raybench.sweep.clock import ClockOffset, estimate_offset
from raybench.workloads.base import PromptSource

__all__ = ["ClockOffset", "Fleet", "GeneratorLost", "silent_nodes_message", "split_evenly"]


def split_evenly(total: int, parts: int) -> list[int]:
    """`total` split into `parts` integers differing by at most one; the first ones take the remainder."""
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


class GeneratorLost(RuntimeError):
    """Generator actors died during a step: that attempt is incomplete."""

    def __init__(self, generator_ids: list[str]) -> None:
        self.generator_ids = generator_ids
        super().__init__(f"generator(s) {', '.join(generator_ids)} died")


def silent_nodes_message(nodes: list[dict[str, Any]], answered: set[str], timeout_s: float) -> str | None:
    """The error for alive nodes that did not answer a probe, naming each; None when all answered."""
    silent = [n for n in nodes if n["NodeID"] not in answered]
    if not silent:
        return None
    names = ", ".join(f"{n['NodeID'][:12]} ({n.get('NodeManagerAddress', '?')})" for n in silent)
    return (
        f"node(s) {names} did not answer within {timeout_s:g} s: check that each node's raylet is running "
        "and reachable from the head (`ray status`), or remove it from the cluster"
    )


@ray.remote(num_cpus=0)
def _ping() -> str:
    return str(ray.get_runtime_context().get_node_id())


def probe_nodes(timeout_s: float) -> None:
    """Fail now, naming the node, when a node Ray lists as alive does not run a task."""
    nodes = [n for n in ray.nodes() if n.get("Alive")]  # type: ignore[no-untyped-call]
    refs = {
        _ping.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)).remote(): n
        for n in nodes
    }
    ready, _ = ray.wait(list(refs), num_returns=len(refs), timeout=timeout_s)
    answered = {refs[r]["NodeID"] for r in ready}
    message = silent_nodes_message(nodes, answered, timeout_s)
    if message:
        raise RunAborted(message)


class Fleet:
    """N generator actors, created once per run: spread over nodes, or pinned to `loadgen` nodes."""

    def __init__(self, spec: FleetSpec, store: ResultStore, size: int | None = None, name: str = "") -> None:
        self.spec = spec
        self._store = store
        self._name = name
        self._incarnations: dict[str, int] = {}
        self.ids = [f"g{i}" for i in range(size or spec.generators)]
        self._check_capacity()
        probe_nodes(spec.start_timeout_s)
        self._actors = [self._create(gid) for gid in self.ids]
        self.node_ids: list[str] = self._await_nodes(self._actors, self.ids)
        self.offsets: list[ClockOffset] = []
        self._prepared: tuple[Endpoint, Any, list[int]] | None = None
        self.revived: list[dict[str, Any]] = []

    def _options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"num_cpus": self.spec.num_cpus_per_generator, "max_concurrency": 4}
        if self.spec.placement == "loadgen":
            options["resources"] = {"loadgen": self.spec.loadgen_per_generator}
        else:
            options["scheduling_strategy"] = "SPREAD"
        return options

    def _check_capacity(self) -> None:
        if self.spec.placement != "loadgen":
            return
        need = self.spec.loadgen_per_generator * len(self.ids)
        have = float(ray.cluster_resources().get("loadgen", 0.0))  # type: ignore[no-untyped-call]
        if have < need:
            raise RunAborted(
                f"fleet.placement is loadgen: {len(self.ids)} generators need {need:g} of the `loadgen` resource, "
                f"the cluster offers {have:g}; start nodes with `--resources '{{\"loadgen\": N}}'` "
                "or set fleet.placement: spread"
            )

    def _create(self, gid: str) -> Any:
        actor_cls: Any = LoadGeneratorActor
        options = self._options()
        if self._name:  # named, so operators (and fault-injection tests) can find a generator: ray.get_actor
            self._incarnations[gid] = self._incarnations.get(gid, -1) + 1
            options["name"] = f"raybench-{self._name}-{gid}-{self._incarnations[gid]}"
        return actor_cls.options(**options).remote(gid, self._store)

    def _await_nodes(self, actors: list[Any], ids: list[str]) -> list[str]:
        refs = [a.node.remote() for a in actors]
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=self.spec.start_timeout_s)
        late = [gid for gid, ref in zip(ids, refs) if ref not in ready]
        if late:
            raise RunAborted(
                f"generator(s) {', '.join(late)} did not start within {self.spec.start_timeout_s:g} s: the cluster "
                f"lacks free CPUs ({self.spec.num_cpus_per_generator:g} each) or `loadgen` resources for them; "
                "add nodes, lower fleet.generators or fleet.num_cpus_per_generator"
            )
        return [str(n) for n in ray.get(refs)]

    def measure_offsets(self, samples: int = 16) -> list[ClockOffset]:
        """Each generator's offset to the driver clock, with its uncertainty (MEASUREMENT.md)."""
        self.offsets = [self._offset(i, samples) for i in range(len(self.ids))]
        return self.offsets

    def _offset(self, i: int, samples: int = 16) -> ClockOffset:
        actor = self._actors[i]
        return estimate_offset(self.ids[i], self.node_ids[i], lambda: int(ray.get(actor.clock_ns.remote())), samples)

    def prepare(self, endpoint: Endpoint, source: PromptSource, max_concurrency: int) -> None:
        """Give every generator the endpoint and prompt source; warm connections for the largest step."""
        shares = split_evenly(max_concurrency, len(self._actors))
        source_ref = ray.put(source)  # shipped once, however large the dataset
        self._prepared = (endpoint, source_ref, shares)
        ray.get([a.prepare.remote(endpoint, source_ref, n, self.spec.client) for a, n in zip(self._actors, shares)])

    def arm(self, steps: list[GeneratorStep]) -> None:
        """The ready barrier: every generator holds its shard with its connections warm."""
        refs = [a.arm.remote(step) for a, step in zip(self._actors, steps)]
        self.collect(refs)

    def start(self, start_wall_ns: int) -> list[Any]:
        """Start the armed step on all generators at the common instant; returns the pending reports."""
        return [a.start.remote(start_wall_ns) for a in self._actors]

    def collect(self, refs: list[Any]) -> list[dict[str, Any]]:
        """Every generator's result; GeneratorLost naming the generators whose actor died."""
        results, dead = [], []
        for gid, ref in zip(self.ids, refs):
            try:
                results.append(ray.get(ref))
            except ray.exceptions.RayActorError:
                dead.append(gid)
        if dead:
            raise GeneratorLost(dead)
        return results

    def revive(self, generator_ids: list[str]) -> None:
        """Replace dead generators with fresh actors: placed, clock-measured and prepared like the others."""
        for gid in generator_ids:
            i = self.ids.index(gid)
            with contextlib.suppress(ray.exceptions.RayError):
                ray.kill(self._actors[i])
            self._actors[i] = self._create(gid)
            (self.node_ids[i],) = self._await_nodes([self._actors[i]], [gid])
            if self.offsets:
                self.offsets[i] = self._offset(i)
            if self._prepared is not None:
                endpoint, source_ref, shares = self._prepared
                ray.get(self._actors[i].prepare.remote(endpoint, source_ref, shares[i], self.spec.client))
            self.revived.append({"generator_id": gid, "node_id": self.node_ids[i]})

    def actor(self, generator_id: str) -> Any:
        """The actor of one generator (for fault-injection tests and operators)."""
        return self._actors[self.ids.index(generator_id)]

    def progress(self) -> int:
        """Requests completed so far in the running step, over the live generators."""
        total = 0
        for actor in self._actors:
            with contextlib.suppress(ray.exceptions.RayError):
                total += int(ray.get(actor.progress.remote(), timeout=5))
        return total

    def describe(self) -> list[dict[str, Any]]:
        """Each generator's id, node and clock offset, for provenance."""
        return [asdict(o) for o in self.offsets] or [
            {"generator_id": g, "node_id": n} for g, n in zip(self.ids, self.node_ids)
        ]

    def shutdown(self) -> None:
        for actor in self._actors:
            with contextlib.suppress(ray.exceptions.RayError):
                ray.get(actor.close.remote(), timeout=10)
            with contextlib.suppress(ray.exceptions.RayError):
                ray.kill(actor)
        self._actors = []

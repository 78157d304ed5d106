"""Whether a job fits a cluster: the cluster's inventory (nodes, GPUs by type, CPUs, `loadgen`) and a verdict
that names every shortfall. Pure: no Ray here, the inventory comes in as plain dicts (cluster/inventory.py).

The check replays what a run asks of Ray. Engines run one after another, each beside the one fleet of
load generators, so each engine is checked on a fresh cluster together with the fleet: its replicas first
(GPUs are the scarce part; a replica of tp x pp GPUs sits on one node, or spans equal nodes when its kind
can; an engine of worker pools, Dynamo, has every pool's workers placed at once, each on one node, its
frontend and etcd/NATS, a CPU or less, not counted), then the generators on the CPUs (and `loadgen`
resource) left over. Packing is greedy, the way Ray's scheduler places one request at a time; it does not
search every arrangement. The layout rule is cluster/layout.py's, the one deploy/placement.py applies.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from raybench.cluster.layout import fewest_even_nodes
from raybench.config.job import JobSpec
from raybench.engines import adapter_for

__all__ = ["EngineDemand", "FitVerdict", "FleetDemand", "Inventory", "NodeInfo", "check_fit", "inventory_from_nodes"]

_ACCELERATOR_PREFIX = "accelerator_type:"
_BUILTIN = {"CPU", "GPU", "memory", "object_store_memory"}


@dataclass(frozen=True)
class NodeInfo:
    """One alive node: its address, CPUs, GPUs (and their type), and custom resources such as `loadgen`."""

    node_id: str
    ip: str
    is_head: bool
    cpus: float
    gpus: float
    accelerator: str | None = None
    resources: dict[str, float] = field(default_factory=dict)

    @property
    def loadgen(self) -> float:
        return self.resources.get("loadgen", 0.0)

    @property
    def name(self) -> str:
        return f"{self.ip}{' (head)' if self.is_head else ''} {self.node_id[:8]}"


@dataclass(frozen=True)
class Inventory:
    """What a cluster offers, node by node."""

    nodes: tuple[NodeInfo, ...]

    @property
    def cpus(self) -> float:
        return sum(n.cpus for n in self.nodes)

    @property
    def gpus(self) -> float:
        return sum(n.gpus for n in self.nodes)

    @property
    def loadgen(self) -> float:
        return sum(n.loadgen for n in self.nodes)

    def gpus_by_type(self) -> dict[str, float]:
        """GPUs per accelerator type (`unknown` where Ray reports none)."""
        out: dict[str, float] = {}
        for node in self.nodes:
            if node.gpus:
                key = node.accelerator or "unknown"
                out[key] = out.get(key, 0.0) + node.gpus
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "nodes": [{**n.__dict__, "loadgen": n.loadgen} for n in self.nodes],
            "totals": {
                "nodes": len(self.nodes),
                "cpus": self.cpus,
                "gpus": self.gpus,
                "loadgen": self.loadgen,
                "loadgen_nodes": sum(1 for n in self.nodes if n.loadgen > 0),
                "gpus_by_type": self.gpus_by_type(),
            },
        }


def inventory_from_nodes(rows: list[dict[str, Any]]) -> Inventory:
    """The inventory from Ray's node list (`ray.util.state.list_nodes`: node_id, node_ip, is_head_node,
    state, resources_total, labels); dead nodes are left out."""
    nodes = []
    for row in rows:
        if str(row.get("state", "ALIVE")).upper() != "ALIVE":
            continue
        total = {str(k): float(v) for k, v in (row.get("resources_total") or {}).items()}
        accelerator = next((k[len(_ACCELERATOR_PREFIX) :] for k in total if k.startswith(_ACCELERATOR_PREFIX)), None)
        labels = row.get("labels") or {}
        accelerator = accelerator or labels.get("ray.io/accelerator-type") or None
        custom = {
            k: v for k, v in total.items() if k not in _BUILTIN and not k.startswith(("node:", _ACCELERATOR_PREFIX))
        }
        nodes.append(
            NodeInfo(
                node_id=str(row.get("node_id", "")),
                ip=str(row.get("node_ip", "?")),
                is_head=bool(row.get("is_head_node", False)),
                cpus=total.get("CPU", 0.0),
                gpus=total.get("GPU", 0.0),
                accelerator=accelerator,
                resources=custom,
            )
        )
    return Inventory(tuple(sorted(nodes, key=lambda n: (not n.is_head, n.ip, n.node_id))))


@dataclass(frozen=True)
class EngineDemand:
    """One engine under test: `replicas` replicas of `gpus` GPUs and `cpus` CPUs each."""

    engine_id: str
    kind: str
    replicas: int
    gpus: float
    cpus: float
    nodes: int | None  # nodes one replica spans, as the spec asks (None: 1, or what the cluster needs)
    refusal: str  # why a replica of this kind cannot span nodes ("" when it can)
    accelerator: str | None = None
    managed: bool = True
    resource: str | None = None  # a custom resource the chosen nodes must offer (a Dynamo pool's node_resource)


@dataclass(frozen=True)
class FleetDemand:
    """The load generators: `generators` actors of `cpus` CPUs (and `loadgen` of that resource, when pinned)."""

    generators: int
    cpus: float
    loadgen: float | None


def job_demand(spec: JobSpec) -> tuple[list[list[EngineDemand]], FleetDemand]:
    """What the job asks of the cluster: per engine, the parts that run at once (its replicas, or its worker
    pools), and the fleet."""
    engines = [_engine_parts(engine, engine_id, spec) for engine, engine_id in zip(spec.engines, spec.engine_ids())]
    fleet = spec.fleet
    loadgen = fleet.loadgen_per_generator if fleet.placement == "loadgen" else None
    return engines, FleetDemand(fleet.size(spec.load.connections()), fleet.num_cpus_per_generator, loadgen)


def _engine_parts(engine: Any, engine_id: str, spec: JobSpec) -> list[EngineDemand]:
    adapter = adapter_for(engine, spec.model, engine_id)
    pools, worker_plan = getattr(engine, "pools", None), getattr(adapter, "worker_plan", None)
    if callable(pools) and callable(worker_plan):  # worker pools (dynamo): each worker on one node of its pool's
        return [
            EngineDemand(
                engine_id=f"{engine_id}/{role}",
                kind=adapter.kind,
                replicas=pool.workers,
                gpus=float(worker_plan(role, 0, False).num_gpus),
                cpus=float(pool.num_cpus),
                nodes=1,
                refusal="",
                resource=getattr(pool, "node_resource", None),
            )
            for role, pool in pools()
        ]
    serve_replicas = getattr(engine, "min_replicas", None)  # Serve-placed replicas (ray_serve_llm)
    tp_pp = getattr(engine, "tensor_parallel_size", 1) * getattr(engine, "pipeline_parallel_size", 1)
    return [
        EngineDemand(
            engine_id=engine_id,
            kind=adapter.kind,
            replicas=int(serve_replicas or adapter.replicas),
            gpus=float(tp_pp) if serve_replicas else adapter.num_gpus,
            cpus=adapter.num_cpus,
            nodes=adapter.nodes,
            refusal="" if serve_replicas else adapter.multinode_refusal,
            accelerator=getattr(engine, "accelerator_type", None),
            managed=adapter.managed,
        )
    ]


@dataclass
class _Free:
    node: NodeInfo
    cpus: float
    gpus: float
    loadgen: float


@dataclass(frozen=True)
class FitVerdict:
    """Whether the job fits; each shortfall names what is missing and what to change."""

    shortfalls: list[str]
    engines: list[dict[str, Any]]
    fleet: dict[str, Any]

    @property
    def fits(self) -> bool:
        return not self.shortfalls

    def to_json(self) -> dict[str, Any]:
        return {"fits": self.fits, "shortfalls": self.shortfalls, "engines": self.engines, "fleet": self.fleet}


def check_fit(inventory: Inventory, spec: JobSpec) -> FitVerdict:
    """Place every engine (one at a time, beside the fleet) and the fleet on the inventory; name the shortfalls."""
    engines, fleet = job_demand(spec)
    shortfalls: list[str] = []
    rows: list[dict[str, Any]] = []
    fleet_short: list[str] = []
    for parts in engines:
        free = [_Free(n, n.cpus, n.gpus, n.loadgen) for n in inventory.nodes]  # engines run one at a time
        for demand in parts:
            problems, row = _place_engine(demand, free)
            shortfalls.extend(problems)
            rows.append(row)
        fleet_short = fleet_short or _place_fleet(fleet, free, f" beside engine {parts[0].engine_id.split('/')[0]}")
    shortfalls.extend(fleet_short)
    fleet_row = {
        "generators": fleet.generators,
        "cpus_each": fleet.cpus,
        "loadgen_each": fleet.loadgen,
        "fits": not fleet_short,
    }
    return FitVerdict(shortfalls, rows, fleet_row)


def _layout(demand: EngineDemand, gpu_nodes: list[float]) -> tuple[int, str]:
    """Nodes per replica (as deploy/placement.py chooses them), or 0 and why no layout exists."""
    largest = max(gpu_nodes, default=0.0)
    if demand.nodes:
        return demand.nodes, ""
    if demand.gpus <= largest:
        return 1, ""
    if largest == 0:
        return 0, "the cluster has no GPU node" + (f" of type {demand.accelerator}" if demand.accelerator else "")
    if demand.refusal:
        return 0, f"the largest GPU node has {largest:g} GPUs and {demand.kind} cannot span nodes: {demand.refusal}"
    nodes = fewest_even_nodes(demand.gpus, gpu_nodes)
    if nodes is not None:
        return nodes, ""
    return 0, f"no set of equal nodes splits {demand.gpus:g} GPUs (nodes' GPUs: {sorted(gpu_nodes, reverse=True)})"


def _place_engine(demand: EngineDemand, free: list[_Free]) -> tuple[list[str], dict[str, Any]]:
    row: dict[str, Any] = {
        "engine_id": demand.engine_id,
        "kind": demand.kind,
        "replicas": demand.replicas,
        "gpus_per_replica": demand.gpus,
        "cpus_per_replica": demand.cpus,
        "accelerator": demand.accelerator,
        "nodes_per_replica": None,
        "placed": [],
    }
    if not demand.managed:
        row["nodes_per_replica"] = 0
        return [], row  # an endpoint that already runs elsewhere takes nothing here
    typed = [f for f in free if demand.accelerator is None or f.node.accelerator == demand.accelerator]
    if demand.resource:
        typed = [f for f in typed if f.node.resources.get(demand.resource, 0) > 0]
    what = f"engine {demand.engine_id} ({demand.kind}): {demand.replicas} replica(s) x {demand.gpus:g} GPU(s)"
    nodes, why = _layout(demand, [f.gpus for f in typed if f.gpus > 0]) if demand.gpus else (1, "")
    row["nodes_per_replica"] = nodes or None
    if not nodes:
        return [f"{what}: {why}; {_gpu_offer(typed, demand)}"], row
    per_node_gpus, per_node_cpus = demand.gpus / nodes, demand.cpus
    for index in range(demand.replicas):
        chosen = _pick_nodes(typed if demand.gpus or demand.resource else free, nodes, per_node_gpus, per_node_cpus)
        if chosen is None:
            return [_replica_shortfall(what, demand, index, nodes, typed)], row
        for f in chosen:
            f.gpus -= per_node_gpus
            f.cpus -= per_node_cpus
        row["placed"].append([f.node.name for f in chosen])
    return [], row


def _pick_nodes(free: list[_Free], count: int, gpus: float, cpus: float) -> list[_Free] | None:
    """`count` distinct nodes with `gpus` GPUs and `cpus` CPUs free, tightest GPU fit first; None if too few."""
    able = [f for f in free if f.gpus >= gpus - 1e-9 and f.cpus >= cpus - 1e-9]
    able.sort(key=lambda f: (f.gpus - gpus, -f.cpus))
    return able[:count] if len(able) >= count else None


def _gpu_offer(free: list[_Free], demand: EngineDemand) -> str:
    kind = f"{demand.accelerator} " if demand.accelerator else ""
    per_node = sorted((f.node.gpus for f in free if f.node.gpus > 0), reverse=True)
    listed = ", ".join(f"{g:g}" for g in per_node) or "none"
    where = f" on {len(free)} node(s) offering `{demand.resource}`" if demand.resource else ""
    return f"the cluster offers {sum(per_node):g} {kind}GPU(s){where} (per node: {listed})"


def _replica_shortfall(what: str, demand: EngineDemand, placed: int, nodes: int, free: list[_Free]) -> str:
    need_gpus = demand.replicas * demand.gpus
    have_gpus = sum(f.node.gpus for f in free)
    left_gpus = sum(f.gpus for f in free) + placed * demand.gpus  # what this part found free when it started
    if demand.gpus and need_gpus > left_gpus:
        taken = (
            f", {have_gpus - left_gpus:g} of them taken by the engine's other parts" if left_gpus < have_gpus else ""
        )
        return (
            f"{what} = {need_gpus:g} GPUs; {_gpu_offer(free, demand)}{taken}: short by {need_gpus - left_gpus:g} "
            "GPU(s). Lower replicas or tensor_parallel_size x pipeline_parallel_size, or add GPU nodes"
        )
    spread = f" on {nodes} distinct nodes" if nodes > 1 else " on one node"
    return (
        f"{what}: only {placed} of {demand.replicas} replica(s) find {demand.gpus / nodes:g} GPU(s) and "
        f"{demand.cpus:g} CPU(s) free{spread}; {_gpu_offer(free, demand)}, "
        f"{sum(f.cpus for f in free):g} CPU(s) left. Lower replicas or num_cpus, or add nodes"
    )


def _place_fleet(fleet: FleetDemand, free: list[_Free], beside: str) -> list[str]:
    """Spread the generators over the nodes left (round robin, like SPREAD); the shortfall if some do not fit."""
    able = [f for f in free if fleet.loadgen is None or f.loadgen > 0]
    placed = 0
    progress = True
    while placed < fleet.generators and progress:
        progress = False
        for f in able:
            if placed < fleet.generators and f.cpus >= fleet.cpus - 1e-9 and f.loadgen >= (fleet.loadgen or 0) - 1e-9:
                f.cpus -= fleet.cpus
                f.loadgen -= fleet.loadgen or 0
                placed += 1
                progress = True
    if placed == fleet.generators:
        return []
    what = f"fleet: {fleet.generators} generator(s) x {fleet.cpus:g} CPU(s)"
    if fleet.loadgen is not None:
        need, have = fleet.generators * fleet.loadgen, sum(f.node.loadgen for f in free)
        if need > have:
            return [
                f"{what} pinned to `loadgen` nodes need {need:g} of the `loadgen` resource; the cluster offers "
                f"{have:g}: short by {need - have:g}. Start CPU nodes with --resources '{{\"loadgen\": N}}' "
                "or set fleet.placement: spread"
            ]
    need_cpus = fleet.generators * fleet.cpus
    have_cpus = sum(f.cpus for f in able) + placed * fleet.cpus
    where = " on `loadgen` nodes" if fleet.loadgen is not None else ""
    return [
        f"{what} = {need_cpus:g} CPU(s){where}; only {placed} fit in the {max(have_cpus, 0):g} CPU(s) free"
        f"{beside}: short by {(fleet.generators - placed) * fleet.cpus:g} CPU(s). Lower fleet.generators or "
        "fleet.num_cpus_per_generator, or add CPU nodes"
    ]

"""The fit check: inventories from Ray's node list, verdicts that name every shortfall (no Ray)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from raybench.cluster.fit import check_fit, inventory_from_nodes, job_demand
from raybench.config.loader import load_job, parse_job

ROOT = Path(__file__).resolve().parents[3]


def node(ip: str, cpus: float, gpus: float = 0, head: bool = False, **resources: float) -> dict[str, Any]:
    total = {"CPU": cpus, "memory": 1e9, "object_store_memory": 1e8, f"node:{ip}": 1.0, **resources}
    if gpus:
        total["GPU"] = gpus
    if head:
        total["node:__internal_head__"] = 1.0
    return {"node_id": f"{ip}-{cpus}-{gpus}".ljust(20, "0"), "node_ip": ip, "is_head_node": head, "state": "ALIVE",
            "resources_total": total, "labels": {}}  # fmt: skip


def vllm_job(**engine: Any) -> Any:
    raw = {
        "name": "fit",
        "model": {"name": "m", "precision": "bf16"},
        "engines": [{"kind": "vllm", "id": "v", **engine}],
        "workload": {"kind": "synthetic", "isl": {"distribution": "fixed", "mean": 8},
                     "osl": {"distribution": "fixed", "mean": 8}},
        "load": {"mode": "concurrency", "steps": [1], "duration_s": 1},
        "slo": {"ttft_p99_ms": 500, "itl_p50_ms": 30},
    }  # fmt: skip
    return parse_job(raw)


H100 = {"accelerator_type:H100": 1.0}


def test_inventory_counts_gpus_by_type_cpus_and_loadgen_nodes() -> None:
    rows = [node("127.0.1.1", 8, head=True), node("127.0.1.2", 32, 8, **H100),
            node("127.0.1.3", 32, 8, **{"accelerator_type:A100": 1.0}), node("127.0.1.4", 16, loadgen=16),
            {**node("127.0.1.5", 99, 8, **H100), "state": "DEAD"}]  # fmt: skip
    inventory = inventory_from_nodes(rows)
    assert [n.ip for n in inventory.nodes] == ["127.0.1.1", "127.0.1.2", "127.0.1.3", "127.0.1.4"]  # dead one left out
    assert inventory.nodes[0].is_head
    assert inventory.gpus_by_type() == {"H100": 8, "A100": 8}
    assert (inventory.cpus, inventory.gpus, inventory.loadgen) == (88, 16, 16)
    assert inventory.nodes[3].resources == {"loadgen": 16}  # builtins, node: and accelerator_type: left out
    totals = inventory.to_json()["totals"]
    assert totals["loadgen_nodes"] == 1 and totals["nodes"] == 4


def test_quickstart_fits_a_cpu_only_cluster() -> None:
    spec = load_job(ROOT / "jobs" / "quickstart.yaml")
    verdict = check_fit(inventory_from_nodes([node("127.0.0.1", 2, head=True), node("127.0.0.1", 2)]), spec)
    assert verdict.fits, verdict.shortfalls
    assert verdict.engines[0]["gpus_per_replica"] == 0 and verdict.fleet["generators"] == 2


def test_more_gpus_than_the_cluster_has_is_refused_with_the_shortfall() -> None:
    spec = vllm_job(tensor_parallel_size=2, replicas=2)
    verdict = check_fit(inventory_from_nodes([node("127.0.0.1", 2, head=True), node("127.0.0.2", 2, 2)]), spec)
    assert not verdict.fits
    [message] = verdict.shortfalls
    assert "engine v (vllm): 2 replica(s) x 2 GPU(s) = 4 GPUs" in message
    assert "offers 2 GPU(s)" in message and "short by 2 GPU(s)" in message


def test_a_replica_larger_than_any_node_needs_a_kind_that_spans_nodes() -> None:
    inventory = inventory_from_nodes(
        [node("127.0.1.1", 4, head=True), node("127.0.1.2", 32, 8), node("127.0.1.3", 32, 8)]
    )
    spans = check_fit(inventory, vllm_job(tensor_parallel_size=8, pipeline_parallel_size=2))
    assert spans.fits, spans.shortfalls
    assert spans.engines[0]["nodes_per_replica"] == 2 and len(spans.engines[0]["placed"][0]) == 2
    raw = vllm_job(tensor_parallel_size=8, pipeline_parallel_size=2).model_dump(exclude_none=True)
    raw["engines"] = [{"kind": "lmdeploy", "id": "lm", "tensor_parallel_size": 16}]
    refused = check_fit(inventory, parse_job(raw))
    assert not refused.fits
    assert "largest GPU node has 8 GPUs" in refused.shortfalls[0] and "cannot span nodes" in refused.shortfalls[0]


def test_replicas_that_fit_in_total_but_not_per_node_are_named() -> None:
    inventory = inventory_from_nodes([node("127.0.1.2", 32, 3), node("127.0.1.3", 32, 3)])  # 6 GPUs, 3 per node
    verdict = check_fit(inventory, vllm_job(tensor_parallel_size=2, replicas=3))
    [message] = verdict.shortfalls
    assert "only 2 of 3 replica(s) find 2 GPU(s)" in message


def test_accelerator_type_restricts_the_nodes_considered() -> None:
    raw = vllm_job().model_dump(exclude_none=True)
    raw["engines"] = [{"kind": "ray_serve_llm", "id": "s", "tensor_parallel_size": 4, "accelerator_type": "H100"}]
    spec = parse_job(raw)
    a100 = inventory_from_nodes([node("127.0.1.2", 32, 8, **{"accelerator_type:A100": 1.0})])
    refused = check_fit(a100, spec)
    assert not refused.fits and "no GPU node of type H100" in refused.shortfalls[0]
    assert check_fit(inventory_from_nodes([node("127.0.1.2", 32, 8, **H100)]), spec).fits


def test_loadgen_placement_needs_the_loadgen_resource() -> None:
    spec = load_job(ROOT / "jobs" / "quickstart.yaml", ["fleet.placement=loadgen", "fleet.generators=3"])
    missing = check_fit(inventory_from_nodes([node("127.0.0.1", 8, head=True)]), spec)
    assert any("need 3 of the `loadgen` resource; the cluster offers 0: short by 3" in s for s in missing.shortfalls)
    enough = inventory_from_nodes([node("127.0.0.1", 8, head=True), node("127.0.0.2", 4, loadgen=4)])
    assert check_fit(enough, spec).fits


def test_generators_short_of_cpus_beside_the_engine() -> None:
    spec = load_job(ROOT / "jobs" / "quickstart.yaml", ["fleet.generators=4", "fleet.num_cpus_per_generator=1"])
    verdict = check_fit(inventory_from_nodes([node("127.0.0.1", 2, head=True)]), spec)  # 0.5 CPU to the engine
    [message] = verdict.shortfalls
    assert message.startswith("fleet: 4 generator(s) x 1 CPU(s) = 4 CPU(s); only 1 fit")
    assert "beside engine sim-vllm" in message and "short by 3 CPU(s)" in message


def test_endpoint_engines_take_nothing_from_the_cluster() -> None:
    raw = vllm_job().model_dump(exclude_none=True)
    raw["engines"] = [{"kind": "endpoint", "id": "e", "base_url": "http://127.0.0.1:9"}]
    engines, fleet = job_demand(parse_job(raw))
    assert not engines[0][0].managed and fleet.generators == 1
    assert check_fit(inventory_from_nodes([node("127.0.0.1", 1)]), parse_job(raw)).fits


@pytest.mark.parametrize("state", ["DEAD", "dead"])
def test_no_alive_node_fits_nothing(state: str) -> None:
    inventory = inventory_from_nodes([{**node("127.0.1.2", 32, 8), "state": state}])
    verdict = check_fit(inventory, vllm_job())
    assert not verdict.fits and "the cluster has no GPU node" in verdict.shortfalls[0]


def test_the_fit_logic_never_imports_ray() -> None:
    import subprocess
    import sys

    code = "import sys, raybench.cluster.fit, raybench.cluster.command; assert 'ray' not in sys.modules, 'ray imported'"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr


def test_worker_pools_are_placed_together_each_worker_on_one_node() -> None:
    """A Dynamo engine's pools run at once: 2 prefill + 2 decode workers of 1 GPU each need 4 GPUs together."""
    spec = load_job(ROOT / "jobs" / "dynamo-vllm-disagg-2p2d-vs-agg-4gpu.yaml", ["fleet.generators=1"])
    four = inventory_from_nodes([node("127.0.1.1", 8, head=True), node("127.0.1.2", 32, 4)])
    verdict = check_fit(four, spec)
    assert verdict.fits, verdict.shortfalls
    assert [e["engine_id"] for e in verdict.engines][1:] == ["dynamo-vllm-disagg-2p2d/prefill",
                                                              "dynamo-vllm-disagg-2p2d/decode"]  # fmt: skip
    three = check_fit(inventory_from_nodes([node("127.0.1.1", 8, head=True), node("127.0.1.2", 32, 3)]), spec)
    assert not three.fits
    assert any(s.startswith("engine dynamo-vllm-agg-4/aggregated (dynamo): 4 replica(s) x 1 GPU(s) = 4 GPUs")
               for s in three.shortfalls)  # fmt: skip
    assert any("dynamo-vllm-disagg-2p2d/decode" in s for s in three.shortfalls), "decode finds 1 GPU left of 3"

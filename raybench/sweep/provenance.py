"""The provenance block of an engine's summary: spec hash, engine args, nodes, generators, clock offsets."""

from __future__ import annotations

import datetime as dt
import platform
from typing import Any

import ray

from raybench.config.job import JobSpec
from raybench.config.loader import spec_sha256
from raybench.sweep.fleet import Fleet
from raybench.workloads import PromptSource, workload_fingerprint

__all__ = ["now_iso", "provenance"]


def now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def provenance(
    spec: JobSpec,
    run_id: str,
    engine_args: dict[str, Any],
    replicas: list[dict[str, Any]],
    fleet: Fleet,
    started_at: str,
    source: PromptSource,
) -> dict[str, Any]:
    nodes = [
        {"node_id": n["NodeID"], "address": n["NodeManagerAddress"], "resources": n.get("Resources", {})}
        for n in ray.nodes()  # type: ignore[no-untyped-call]
        if n.get("Alive")
    ]
    return {
        "run_id": run_id,
        "job_spec_sha256": spec_sha256(spec),
        "engine_args": engine_args,
        "replicas": replicas,
        "dataset_fingerprint": workload_fingerprint(source),
        "workload": source.describe(),
        "workload_prepared": _preparation(source),
        "token_counter": {"identity": source.counter.identity, "exact": source.counter.exact},
        "seed": spec.workload.seed,
        "ray_version": ray.__version__,
        "python_version": platform.python_version(),
        "nodes": nodes,
        "gpus": [n["resources"].get("GPU", 0) for n in nodes],
        "generators": [{"generator_id": g, "node_id": n} for g, n in zip(fleet.ids, fleet.node_ids)],
        "generators_revived": list(fleet.revived),
        "fleet": {"placement": spec.fleet.placement, "generators": len(fleet.ids)},
        "clock_offsets": fleet.describe(),
        "started_at": started_at,
        "finished_at": now_iso(),
    }


def _preparation(source: PromptSource) -> dict[str, Any] | None:
    """How a prepared dataset was obtained this time (`local`, `ray_data`, or `cache` on a resume); None if not."""
    preparation = getattr(source, "preparation", None)
    return dict(preparation()) if callable(preparation) else None

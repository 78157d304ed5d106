"""The run driver: deploys each engine, warms it, sweeps its steps, stores records and summaries."""

from __future__ import annotations

import datetime as dt
import platform
import uuid
from dataclasses import dataclass, field
from typing import Any

import ray
import yaml
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from raybench.config.job import JobSpec
from raybench.config.loader import spec_sha256
from raybench.deploy.deployment import EngineDeployment
from raybench.engines import adapter_for
from raybench.errors import EngineError
from raybench.metrics import Window, compute_step, find_knee
from raybench.report.console import print_engine_summary
from raybench.results.schema import RECORD_SCHEMA
from raybench.results.store import ResultStore
from raybench.results.writer import records_prefix
from raybench.sweep.fleet import Fleet
from raybench.sweep.session import ray_session
from raybench.sweep.step import StepOutcome, StepRequest, run_step
from raybench.sweep.summary import build_summary
from raybench.version import __version__
from raybench.workloads.synthetic import workload_fingerprint

__all__ = ["RunResult", "new_run_id", "run_job"]


@dataclass
class RunResult:
    """Where a run went and what it found: one summary per engine, failures by engine id."""

    run_id: str
    uri: str
    summaries: dict[str, dict[str, Any]] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failures


def new_run_id(name: str) -> str:
    """`<job>-<UTC time>-<random>`: sortable by start, unique across concurrent runs."""
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return f"{name}-{stamp}-{uuid.uuid4().hex[:6]}"


def _now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def run_job(spec: JobSpec, console: Console | None = None, dashboard: bool = False) -> RunResult:
    """Run every engine of `spec` through its sweep; results under `<output.uri>/<run_id>/`."""
    console = console or Console()
    run_id = new_run_id(spec.name)
    store = ResultStore(spec.output.uri).child(run_id)
    store.write_text("job.yaml", yaml.safe_dump(spec.model_dump(mode="json"), sort_keys=False))
    result = RunResult(run_id=run_id, uri=store.uri)
    console.print(f"[bold]raybench[/] run [cyan]{run_id}[/] -> {store.uri}")
    min_cpus = int(spec.fleet.generators * spec.fleet.num_cpus_per_generator) + 2
    with ray_session(min_cpus, dashboard) as where:
        console.print(f"using {where}")
        fleet = Fleet(spec.fleet, store.uri)
        try:
            fleet.measure_offsets()
            for engine, engine_id in zip(spec.engines, spec.engine_ids()):
                try:
                    summary = _run_engine(spec, engine, engine_id, run_id, store, fleet, console)
                except EngineError as exc:
                    result.failures[engine_id] = str(exc)
                    console.print(f"[red]engine {engine_id} failed:[/] {exc}")
                    continue
                result.summaries[engine_id] = summary
                print_engine_summary(summary, console)
        finally:
            fleet.shutdown()
    store.write_json("_COMPLETE", {"run_id": run_id, "finished_at": _now_iso(), "failures": result.failures})
    return result


def _run_engine(
    spec: JobSpec, engine: Any, engine_id: str, run_id: str, store: ResultStore, fleet: Fleet, console: Console
) -> dict[str, Any]:
    adapter = adapter_for(engine, spec.model, engine_id)
    started_at = _now_iso()
    deployment = EngineDeployment(adapter, store.uri)
    with console.status(f"starting {engine_id} ({adapter.kind}) ..."):
        base_urls = deployment.start()
    console.print(f"{engine_id}: ready at {', '.join(base_urls)}")
    try:
        endpoint = adapter.endpoint(base_urls, spec.workload.api)
        fleet.prepare(endpoint, spec.workload, max(spec.load.steps))
        steps = _sweep(spec, engine_id, run_id, store, fleet, deployment, console)
    finally:
        deployment.teardown()
    knee = find_knee(steps)
    step_dicts = [s.to_dict() for s in steps]
    knee_dict = knee.to_dict() if knee is not None else None
    provenance = _provenance(spec, run_id, adapter.engine_args(), deployment.replicas, fleet, started_at)
    summary = build_summary(
        spec,
        engine_id=engine_id,
        motor=adapter.motor(),
        motor_version=adapter.motor_version(),
        config=getattr(engine, "config", ""),
        steps=step_dicts,
        knee=knee_dict,
        token_count_source=_token_source(store, engine_id, len(steps)),
        provenance=provenance,
        harness_version=__version__,
    )
    store.write_json(f"engines/{engine_id}/summary.json", summary)
    return summary


def _sweep(
    spec: JobSpec,
    engine_id: str,
    run_id: str,
    store: ResultStore,
    fleet: Fleet,
    deployment: EngineDeployment,
    console: Console,
) -> list[Any]:
    load = spec.load
    columns = [
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[requests]} req"),
        TimeElapsedColumn(),
    ]
    results = []
    with Progress(*columns, console=console, transient=False) as progress:
        if load.warmup_requests:
            warm = StepRequest(
                run_id, engine_id, -1, "warmup", load.steps[0], None, load.warmup_requests, load.request_timeout_s
            )
            progress_label = f"{engine_id} warm-up ({load.warmup_requests} requests, discarded)"
            run_step(fleet, warm, progress, progress_label)
        for index, concurrency in enumerate(load.steps):
            req = StepRequest(
                run_id, engine_id, index, "measure", concurrency, load.duration_s, load.requests, load.request_timeout_s
            )
            outcome = run_step(fleet, req, progress, f"{engine_id} step {index} concurrency {concurrency}")
            results.append(_metrics(spec, store, req, outcome, fleet))
            if not deployment.alive():
                raise EngineError(
                    f"{engine_id}: the engine server exited during step {index}; see its log in the run folder"
                )
    return results


def _metrics(spec: JobSpec, store: ResultStore, req: StepRequest, outcome: StepOutcome, fleet: Fleet) -> Any:
    table = store.read_table(records_prefix(req.engine_id, req.step_index), schema=RECORD_SCHEMA)
    end = outcome.window_end_ns if outcome.window_end_ns is not None else outcome.window_start_ns
    lag = max((r["lag_p99_ms"] for r in outcome.reports if r["concurrency"] > 0), default=0.0)
    uncertainty = max((o.uncertainty_ns for o in fleet.offsets), default=0) / 1e6
    return compute_step(
        table=table,
        window=Window(outcome.window_start_ns, end),
        slo=spec.slo,
        validity=spec.validity,
        target_concurrency=req.concurrency,
        step_index=req.step_index,
        loop_lag_p99_ms=lag,
        clock_uncertainty_ms=uncertainty,
    )


def _token_source(store: ResultStore, engine_id: str, steps: int) -> str:
    if steps == 0:
        return "chunk_count"
    table = store.read_table(records_prefix(engine_id, 0), columns=["token_count_source"], schema=RECORD_SCHEMA)
    values = set(table.column("token_count_source").to_pylist())
    return "server_usage" if values == {"server_usage"} else ",".join(sorted(str(v) for v in values)) or "none"


def _provenance(
    spec: JobSpec,
    run_id: str,
    engine_args: dict[str, Any],
    replicas: list[dict[str, Any]],
    fleet: Fleet,
    started_at: str,
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
        "dataset_fingerprint": workload_fingerprint(spec.workload),
        "seed": spec.workload.seed,
        "ray_version": ray.__version__,
        "python_version": platform.python_version(),
        "nodes": nodes,
        "gpus": [n["resources"].get("GPU", 0) for n in nodes],
        "generators": [{"generator_id": g, "node_id": n} for g, n in zip(fleet.ids, fleet.node_ids)],
        "clock_offsets": fleet.describe(),
        "started_at": started_at,
        "finished_at": _now_iso(),
    }

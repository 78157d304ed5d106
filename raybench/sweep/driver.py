"""The run driver: deploys each engine, warms it, sweeps its steps, stores records and summaries."""

from __future__ import annotations

import contextlib
import datetime as dt
import uuid
from dataclasses import dataclass, field
from typing import Any

import yaml
from rich.console import Console

from raybench.config.job import JobSpec
from raybench.deploy.deployment import EngineDeployment
from raybench.deploy.observe import StepObserver
from raybench.engines import adapter_for
from raybench.errors import EngineError, StorageError
from raybench.report.console import print_engine_summary
from raybench.results.catalog import run_manifest
from raybench.results.store import ResultStore
from raybench.sweep.fleet import Fleet
from raybench.sweep.interrupt import interruptible
from raybench.sweep.provenance import now_iso, provenance
from raybench.sweep.resume import (
    incomplete_runs_hint,
    interrupted,
    open_resumed_run,
    read_markers,
    storage_aborted,
)
from raybench.sweep.session import ray_session
from raybench.sweep.steps import SweepContext, knee_of, sweep_engine
from raybench.sweep.summary import build_summary
from raybench.version import __version__
from raybench.workloads import PromptSource, source_for
from raybench.workloads.prepare import workload_cache

__all__ = ["RunResult", "new_run_id", "run_job"]


@dataclass
class RunResult:
    """Where a run went and what it found: one summary per engine, failures by engine id."""

    run_id: str
    uri: str
    summaries: dict[str, dict[str, Any]] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    resumed: bool = False
    skipped_engines: list[str] = field(default_factory=list)
    safe_steps: dict[str, dict[int, Any]] = field(default_factory=dict)  # step markers by engine, as written

    @property
    def ok(self) -> bool:
        return not self.failures


def new_run_id(name: str) -> str:
    """`<job>-<UTC time>-<random>`: sortable by start, unique across concurrent runs."""
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return f"{name}-{stamp}-{uuid.uuid4().hex[:6]}"


def _open_run(spec: JobSpec, resume: str | None, console: Console, job_path: str) -> tuple[str, ResultStore]:
    out = spec.output
    root = ResultStore(out.uri, out.endpoint_url, out.region, out.max_outage_s)
    root.preflight()  # a bad bucket, credentials or path fails now, not after the sweep
    if resume is not None:
        store = open_resumed_run(root, resume, spec)
        manifest = store.read_json("run.json") if store.exists("run.json") else run_manifest(spec, resume, "")
        manifest["resumed_at"] = [*manifest.get("resumed_at", []), now_iso()]
        store.write_json("run.json", manifest)
        return resume, store
    hint = incomplete_runs_hint(root, spec.name, job_path)
    if hint:
        console.print(f"[yellow]note:[/] {hint}")
    run_id = new_run_id(spec.name)
    store = root.child(run_id)
    store.write_text("job.yaml", yaml.safe_dump(spec.model_dump(mode="json"), sort_keys=False))
    store.write_json("run.json", run_manifest(spec, run_id, now_iso()))
    return run_id, store


def run_job(
    spec: JobSpec,
    console: Console | None = None,
    dashboard: bool = False,
    resume: str | None = None,
    job_path: str = "JOB",
) -> RunResult:
    """Run every engine of `spec` through its sweep; results under `<output.uri>/<run_id>/`.

    With `resume` (a run id), continue that incomplete run: engines with a summary and steps with a
    completion marker are skipped; the step in flight when it stopped is re-run as a new attempt.
    Storage down for longer than `output.max_outage_s`, or failing for good (disk full, access lost), stops
    the run: RunAborted names the safe steps. Ctrl-C stops it too: RunInterrupted, the same, exit code 130.
    """
    with interruptible():
        return _run_job(spec, console or Console(), dashboard, resume, job_path)


def _run_job(spec: JobSpec, console: Console, dashboard: bool, resume: str | None, job_path: str) -> RunResult:
    cache = workload_cache(spec.output.uri, spec.output.endpoint_url, spec.output.region)  # prepared datasets
    source = source_for(spec.workload, spec.model.tokenizer, cache)  # dataset problems surface before any deploy
    run_id, store = _open_run(spec, resume, console, job_path)
    result = RunResult(run_id=run_id, uri=store.uri, resumed=resume is not None)
    verb = "resuming" if resume else "run"
    console.print(f"[bold]raybench[/] {verb} [cyan]{run_id}[/] -> {store.uri}")
    try:
        pending = _pending_engines(spec, store, result, console)
        if pending:
            _run_engines(spec, pending, run_id, store, result, console, source, dashboard)
        store.write_json("_COMPLETE", {"run_id": run_id, "finished_at": now_iso(), "failures": result.failures})
    except KeyboardInterrupt:  # Ctrl-C: engines and generators are torn down by now; say what is kept
        _mark_interrupted(store)
        safe = {e: sorted(done) for e, done in result.safe_steps.items()}
        raise interrupted(run_id, job_path, safe, sorted(result.summaries)) from None
    except Exception as exc:
        failure = _storage_failure(exc)  # raised here, or by a generator (inside a Ray task error), or in cleanup
        if failure is None:
            raise
        safe = {e: sorted(done) for e, done in result.safe_steps.items()}
        raise storage_aborted(failure, run_id, job_path, safe, sorted(result.summaries)) from None
    return result


def _mark_interrupted(store: ResultStore) -> None:
    """Note the interruption in run.json (best effort: the run stays incomplete, `_COMPLETE` absent, either way)."""
    with contextlib.suppress(StorageError):
        manifest = store.read_json("run.json") if store.exists("run.json") else {}
        manifest["interrupted_at"] = [*manifest.get("interrupted_at", []), now_iso()]
        store.write_json("run.json", manifest)


def _storage_failure(exc: BaseException) -> StorageError | None:
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return None
        if isinstance(seen, StorageError):
            return seen
        cause = getattr(seen, "cause", None)  # ray.exceptions.RayTaskError: the task's own exception
        seen = cause if isinstance(cause, BaseException) else (seen.__cause__ or seen.__context__)
    return None


def _pending_engines(spec: JobSpec, store: ResultStore, result: RunResult, console: Console) -> list[tuple[Any, str]]:
    """The engines still to run; those with a summary (done before a resume) go straight into `result`."""
    pending = []
    for engine, engine_id in zip(spec.engines, spec.engine_ids()):
        if store.exists(f"engines/{engine_id}/summary.json"):
            summary = store.read_json(f"engines/{engine_id}/summary.json")
            result.summaries[engine_id] = summary
            result.skipped_engines.append(engine_id)
            if summary.get("failure"):
                result.failures[engine_id] = summary["failure"]["reason"]
            console.print(f"[dim]{engine_id}: complete in an earlier attempt of this run, skipped[/]")
            continue
        pending.append((engine, engine_id))
    return pending


def _run_engines(
    spec: JobSpec,
    engines: list[tuple[Any, str]],
    run_id: str,
    store: ResultStore,
    result: RunResult,
    console: Console,
    source: PromptSource,
    dashboard: bool,
) -> None:
    generators = spec.fleet.size(spec.load.connections())
    min_cpus = int(generators * spec.fleet.num_cpus_per_generator) + 2
    with ray_session(min_cpus, dashboard) as where:
        console.print(f"using {where}; {generators} load generator(s), placement {spec.fleet.placement}")
        fleet = Fleet(spec.fleet, store, size=generators, name=run_id)
        try:
            fleet.measure_offsets()
            for engine, engine_id in engines:
                done = result.safe_steps[engine_id] = read_markers(store, engine_id)  # grows as steps complete
                try:
                    summary = _run_engine(spec, engine, engine_id, run_id, store, fleet, console, source, done)
                except EngineError as exc:
                    result.failures[engine_id] = str(exc)
                    console.print(f"[red]engine {engine_id} failed:[/] {exc}")
                    continue
                result.summaries[engine_id] = summary
                if summary.get("failure"):  # the engine died mid-sweep: its steps so far are kept
                    result.failures[engine_id] = summary["failure"]["reason"]
                    console.print(f"[red]engine {engine_id} failed:[/] {summary['failure']['reason']}")
                print_engine_summary(summary, console)
        finally:
            fleet.shutdown()


def _run_engine(
    spec: JobSpec,
    engine: Any,
    engine_id: str,
    run_id: str,
    store: ResultStore,
    fleet: Fleet,
    console: Console,
    source: PromptSource,
    done: dict[int, dict[str, Any]],
) -> dict[str, Any]:
    adapter = adapter_for(engine, spec.model, engine_id)
    started_at = now_iso()
    if done:
        console.print(f"{engine_id}: steps {sorted(done)} complete in an earlier attempt, skipped")
    deployment = EngineDeployment(adapter, store)
    with console.status(f"starting {engine_id} ({adapter.kind}) ..."):
        base_urls = deployment.start()
    console.print(f"{engine_id}: ready at {', '.join(base_urls)}")
    try:
        endpoint = adapter.endpoint(base_urls, spec.workload.api)
        fleet.prepare(endpoint, source, spec.load.connections())
        observer = StepObserver(deployment, base_urls, adapter.metric_map(), store, engine_id)
        ctx = SweepContext(spec, engine_id, run_id, store, fleet, observer, console, done=done)
        steps = sweep_engine(ctx)
    finally:
        deployment.teardown()
    summary = build_summary(
        spec,
        engine_id=engine_id,
        motor=adapter.motor(),
        motor_version=_engine_version(deployment, adapter.motor_version()),
        config=getattr(engine, "config", ""),
        steps=steps,
        knee=knee_of(steps),
        provenance=provenance(spec, run_id, adapter.engine_args(), deployment.replicas, fleet, started_at, source),
        harness_version=__version__,
    )
    summary["failure"] = observer.failure or ctx.failure
    store.write_json(f"engines/{engine_id}/summary.json", summary)
    return summary


def _engine_version(deployment: EngineDeployment, fallback: str) -> str:
    """The version the running server reported (its replicas ask it), else what the adapter knows."""
    return next((str(r["engine_version"]) for r in deployment.replicas if r.get("engine_version")), fallback)

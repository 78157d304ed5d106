"""Resuming a run: per-step completion markers, attempt numbering, and finding an incomplete run to resume.

A step is done when its marker `engines/<id>/steps/step=<k>.json` exists: written after the step's
records are stored and its metrics computed, it holds the step's metrics and the attempt that counts.
An engine is done when its `summary.json` exists. A killed driver therefore loses at most the step in
flight; the resumed run re-executes it as a new attempt, and metrics read only the counted attempt.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow.compute as pc

from raybench.config.job import JobSpec
from raybench.config.loader import parse_job, spec_sha256
from raybench.errors import RunAborted, RunInterrupted, StorageError, StorageOutage, UsageError
from raybench.results.catalog import list_runs
from raybench.results.schema import RECORD_SCHEMA
from raybench.results.store import ResultStore
from raybench.results.writer import records_prefix

__all__ = [
    "incomplete_runs_hint",
    "interrupted",
    "marker_path",
    "next_attempt",
    "open_resumed_run",
    "outage_aborted",
    "read_markers",
    "safe_text",
    "storage_aborted",
    "write_marker",
]


def marker_path(engine_id: str, step_index: int) -> str:
    return f"engines/{engine_id}/steps/step={step_index}.json"


def write_marker(store: ResultStore, engine_id: str, marker: dict[str, Any]) -> None:
    """Mark a step complete (a whole-file write: a crash leaves the marker whole or absent)."""
    stamped = {**marker, "written_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
    store.write_json(marker_path(engine_id, int(marker["step_index"])), stamped)


def read_markers(store: ResultStore, engine_id: str) -> dict[int, dict[str, Any]]:
    """The completed steps of an engine, by step index."""
    out: dict[int, dict[str, Any]] = {}
    for name in store.list(f"engines/{engine_id}/steps"):
        if name.startswith("step=") and name.endswith(".json"):
            marker = store.read_json(f"engines/{engine_id}/steps/{name}")
            out[int(marker["step_index"])] = marker
    return out


def next_attempt(store: ResultStore, engine_id: str, step_index: int) -> int:
    """An attempt id no stored record of this step uses yet (0 for a step never started)."""
    table = store.read_table(records_prefix(engine_id, step_index), columns=["attempt"], schema=RECORD_SCHEMA)
    if table.num_rows == 0:
        return 0
    top = pc.max(pc.fill_null(table.column("attempt"), 0)).as_py()
    return int(top) + 1


def open_resumed_run(root: ResultStore, run_id: str, spec: JobSpec) -> ResultStore:
    """The folder of run `run_id`, checked: it exists, is incomplete, and was started from this job."""
    run = root.child(run_id)
    if not run.exists("run.json") and not run.exists("job.yaml"):
        raise UsageError(
            f"no run {run_id!r} under {root.uri}; "
            f"list resumable runs with `raybench runs {root.uri} --status incomplete`"
        )
    if run.exists("_COMPLETE"):
        raise UsageError(f"run {run_id} is already complete; nothing to resume (start a new run without --resume)")
    stored = parse_job(_yaml(run), source=f"{run.uri}/job.yaml")
    if spec_sha256(stored) != spec_sha256(spec):
        raise UsageError(
            f"run {run_id} was started from a different job spec ({_differences(stored, spec)}); resume it with the "
            "same job file and --set overrides it was started with, or start a new run"
        )
    return run


def _yaml(run: ResultStore) -> Any:
    import yaml

    return yaml.safe_load(run.read_bytes("job.yaml"))


def _differences(stored: JobSpec, spec: JobSpec) -> str:
    a, b = stored.model_dump(mode="json"), spec.model_dump(mode="json")
    keys = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
    return "differs in: " + ", ".join(keys) if keys else "differs"


def incomplete_runs_hint(root: ResultStore, job_name: str, job_path: str = "JOB") -> str | None:
    """A line telling the user that incomplete runs of this job exist, and how to resume the newest."""
    runs = [r for r in list_runs(root, status="incomplete") if r.job == job_name]
    if not runs:
        return None
    newest = runs[0]
    done = ", ".join(f"{e} {n}/{newest.steps_planned}" for e, n in newest.steps_done.items())
    more = f" ({len(runs) - 1} older incomplete run(s) too)" if len(runs) > 1 else ""
    return (
        f"an incomplete run of job {job_name!r} exists: {newest.run_id} (steps done: {done}){more}; "
        f"to continue it instead: raybench run {job_path} --resume {newest.run_id}"
    )


def outage_aborted(
    outage: StorageOutage, run_id: str, job_path: str, safe_steps: dict[str, list[int]], complete: list[str]
) -> RunAborted:
    """The error of a run stopped by storage down past `output.max_outage_s`: what is safe, how to resume."""
    safe = safe_text(safe_steps, complete)
    return RunAborted(
        f"run {run_id} stopped: result storage stayed unavailable for over {outage.max_outage_s:g} s "
        f"(output.max_outage_s) writing {outage.what}: {outage.detail}\n"
        f"safe (completion markers written): {safe}; any other step re-runs on resume\n"
        f"when storage is back: raybench run {job_path} --resume {run_id}"
    )


def safe_text(safe_steps: dict[str, list[int]], complete: list[str]) -> str:
    """What a stopped run keeps: the engines complete, then the steps with a completion marker."""
    parts = [f"{e} complete" for e in complete]
    marked = {e: steps for e, steps in safe_steps.items() if e not in complete and steps}
    parts += [f"{e} steps {', '.join(map(str, steps))}" for e, steps in marked.items()]
    return "; ".join(parts) or "no step completed yet"


def interrupted(run_id: str, job_path: str, safe_steps: dict[str, list[int]], complete: list[str]) -> RunInterrupted:
    """The error of a run stopped by Ctrl-C: what is kept, how to resume."""
    return RunInterrupted(
        f"run {run_id} interrupted: kept (completion markers written): {safe_text(safe_steps, complete)}; "
        f"the step in flight re-runs on resume\nto continue it: raybench run {job_path} --resume {run_id}"
    )


def storage_aborted(
    failure: StorageError, run_id: str, job_path: str, safe_steps: dict[str, list[int]], complete: list[str]
) -> RunAborted:
    """The error of a run stopped by its result store: an outage past the bound, or a lasting failure."""
    if isinstance(failure, StorageOutage):
        return outage_aborted(failure, run_id, job_path, safe_steps, complete)
    return RunAborted(
        f"run {run_id} stopped: writing results failed: {failure}\n"
        f"safe (completion markers written): {safe_text(safe_steps, complete)}; any other step re-runs on resume\n"
        f"once fixed: raybench run {job_path} --resume {run_id}"
    )

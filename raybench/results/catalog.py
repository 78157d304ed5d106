"""The run catalog: what runs a results location holds, their engines, model, status and progress."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import yaml

from raybench.config.job import JobSpec
from raybench.errors import StorageError
from raybench.results.store import ResultStore
from raybench.version import __version__

__all__ = ["RunInfo", "list_runs", "read_run", "run_manifest"]


def run_manifest(spec: JobSpec, run_id: str, started_at: str) -> dict[str, Any]:
    """`run.json`, written first: enough to find and describe a run even if it never finishes."""
    return {
        "run_id": run_id,
        "job": spec.name,
        "engines": spec.engine_ids(),
        "engine_kinds": [e.kind for e in spec.engines],
        "model": spec.model.name,
        "precision": spec.model.precision,
        "hardware": spec.hardware,
        "steps_planned": len(spec.load.rates_per_s if spec.load.mode == "rate" else spec.load.steps),
        "started_at": started_at,
        "harness_version": __version__,
    }


@dataclass
class RunInfo:
    """One line of `raybench runs`."""

    run_id: str
    job: str
    engines: list[str]
    model: str
    precision: str
    status: str  # complete, failed (complete with engine failures), incomplete
    started_at: str
    finished_at: str | None
    steps_done: dict[str, int] = field(default_factory=dict)
    steps_planned: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def read_run(store: ResultStore, run_id: str) -> RunInfo | None:
    """The catalog entry of one run folder, or None when the folder is not a raybench run."""
    run = store.child(run_id)
    manifest = _manifest(run)
    if manifest is None:
        return None
    complete = run.read_json("_COMPLETE") if run.exists("_COMPLETE") else None
    steps_done = {}
    for engine in manifest.get("engines", []):
        if run.exists(f"engines/{engine}/summary.json"):
            steps_done[engine] = len(run.read_json(f"engines/{engine}/summary.json").get("steps", []))
        else:
            steps_done[engine] = len([n for n in run.list(f"engines/{engine}/records") if n != "step=-1"])
    status = "incomplete" if complete is None else ("failed" if complete.get("failures") else "complete")
    return RunInfo(
        run_id=run_id, job=manifest.get("job", "?"), engines=list(manifest.get("engines", [])),
        model=manifest.get("model", "?"), precision=manifest.get("precision", "?"), status=status,
        started_at=manifest.get("started_at", ""), finished_at=(complete or {}).get("finished_at"),
        steps_done=steps_done, steps_planned=int(manifest.get("steps_planned", 0)),
    )  # fmt: skip


def _manifest(run: ResultStore) -> dict[str, Any] | None:
    """run.json, or what job.yaml tells of a run written before run.json existed."""
    if run.exists("run.json"):
        manifest: dict[str, Any] = run.read_json("run.json")
        return manifest
    if not run.exists("job.yaml"):
        return None
    try:
        job = yaml.safe_load(run.read_bytes("job.yaml"))
        spec = JobSpec.model_validate(job)
    except (StorageError, yaml.YAMLError, ValueError):
        return None
    return run_manifest(spec, run.uri.rstrip("/").rsplit("/", 1)[-1], "")


def list_runs(
    store: ResultStore, engine: str | None = None, model: str | None = None, status: str | None = None
) -> list[RunInfo]:
    """Every run under `store`, newest first, filtered by engine id, model name and status."""
    runs = [info for name in store.list() if (info := read_run(store, name)) is not None]
    runs = [
        r for r in runs
        if (engine is None or engine in r.engines) and (model is None or r.model == model)
        and (status is None or r.status == status)
    ]  # fmt: skip
    return sorted(runs, key=lambda r: r.started_at, reverse=True)

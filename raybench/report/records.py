"""Summaries recomputed from stored request records, one sweep step at a time (bounded memory).

A run's ``summary.json`` is the normal input of a report. When it is missing (a run that
stopped before writing it) or when asked to (``--recompute``), the summary is rebuilt from the
Parquet records exactly as the driver builds it: ``compute_step`` per step, ``find_knee``,
``build_summary``. Only the columns the metrics read are loaded, and only as many steps'
records as there are workers (two by default) are in memory at once, so memory is bounded by
the largest steps, not by the run.

The measurement window of a step comes from the stored summary when there is one. Without it,
the window is inferred from the records the way MEASUREMENT.md defines it, approximately: it
opens when the last generator sent its first measured request and closes when the first
generator sent its last one (instants on the driver clock, ``sent_ns + wall_offset_ns``).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import yaml

from raybench.config.job import JobSpec
from raybench.config.loader import parse_job, spec_sha256
from raybench.errors import StorageError
from raybench.metrics import StepMetrics, Window, compute_step, find_knee
from raybench.results.schema import RECORD_SCHEMA, select_attempt
from raybench.results.store import ResultStore
from raybench.version import __version__

__all__ = ["METRIC_COLUMNS", "infer_window", "read_job", "step_indices", "summarize_engine", "summarize_step"]

# The record columns compute_step reads; the rest (messages, fingerprints) are never loaded.
METRIC_COLUMNS = [
    "request_id",
    "generator_id",
    "phase",
    "target_concurrency",
    "scheduled_ns",
    "sent_ns",
    "first_token_ns",
    "last_token_ns",
    "done_ns",
    "chunk_ns",
    "chunk_tokens",
    "output_tokens",
    "token_count_source",
    "status",
    "wall_offset_ns",
    "requested_output_tokens",
    "attempt",
]


def read_job(store: ResultStore) -> JobSpec:
    """The job spec stored with a run (``job.yaml``)."""
    raw = yaml.safe_load(store.read_bytes("job.yaml"))
    return parse_job(raw, source=f"{store.uri}/job.yaml")


def step_indices(store: ResultStore, engine_id: str) -> list[int]:
    """The measured steps (``step=<k>``, k >= 0) stored for an engine, in order."""
    names = store.list(f"engines/{engine_id}/records")
    steps = sorted(int(n.split("=", 1)[1]) for n in names if n.startswith("step=") and n[5:].lstrip("-").isdigit())
    return [k for k in steps if k >= 0]


def infer_window(table: pa.Table) -> Window:
    """The step's window from its measured records alone (see the module docstring)."""
    measured = table.filter(pc.equal(table.column("phase"), "measure"))
    if measured.num_rows == 0:
        raise StorageError("a step has no measured records; its window cannot be inferred")
    sent = pc.add(measured.column("sent_ns"), measured.column("wall_offset_ns"))
    by_gen = (
        pa.table({"g": measured.column("generator_id"), "t": sent})
        .group_by("g")
        .aggregate([("t", "min"), ("t", "max")])
    )
    start = int(pc.max(by_gen.column("t_min")).as_py())
    end = int(pc.min(by_gen.column("t_max")).as_py())
    if end <= start:  # one request per generator, or generators that never overlapped
        done = pc.add(measured.column("done_ns"), measured.column("wall_offset_ns"))
        start, end = int(pc.min(sent).as_py()), max(int(pc.max(done).as_py()), int(pc.min(sent).as_py()) + 1)
    return Window(start, end)


def summarize_step(
    table: pa.Table, spec: JobSpec, step_index: int, stored: dict[str, Any] | None = None
) -> StepMetrics:
    """One step's metrics from its records; window and client figures from ``stored`` when given."""
    if stored is not None:
        window = Window(int(stored["window_start_ns"]), int(stored["window_end_ns"]))
    else:
        window = infer_window(table)
    concurrency = _concurrency(table, spec, step_index, stored)
    return compute_step(
        table,
        window=window,
        slo=spec.slo,
        validity=spec.validity,
        target_concurrency=concurrency,
        step_index=step_index,
        loop_lag_p99_ms=None if stored is None else stored.get("loop_lag_p99_ms"),
        clock_uncertainty_ms=None if stored is None else stored.get("clock_uncertainty_ms"),
    )


def _concurrency(table: pa.Table, spec: JobSpec, step_index: int, stored: dict[str, Any] | None) -> int:
    if stored is not None:
        return int(stored["concurrency"])
    targets = pc.drop_null(table.column("target_concurrency"))
    if len(targets):
        return int(pc.max(targets).as_py())
    return spec.load.steps[step_index] if step_index < len(spec.load.steps) else 0


def summarize_engine(
    store: ResultStore,
    engine_id: str,
    spec: JobSpec | None = None,
    stored: dict[str, Any] | None = None,
    workers: int = 2,
) -> dict[str, Any]:
    """The summary of one engine rebuilt from its records (``store`` is the run folder).

    ``stored`` is the engine's existing summary, whose windows, client figures and provenance
    are kept; without it the windows are inferred and the provenance says so. ``workers``
    steps are summarized at once (memory: that many steps' records).
    """
    from raybench.sweep.summary import build_summary  # the sweep package imports Ray: only when needed

    job = spec if spec is not None else read_job(store)
    stored_steps = {int(s["step_index"]): s for s in (stored or {}).get("steps", [])}

    def one_step(k: int) -> StepMetrics:
        prefix = f"engines/{engine_id}/records/step={k}"
        table = store.read_table(prefix, columns=METRIC_COLUMNS, schema=RECORD_SCHEMA)
        stored_step = stored_steps.get(k)
        attempt = stored_step.get("attempt") if stored_step is not None else None
        return summarize_step(select_attempt(table, attempt), job, k, stored_step)

    # numpy and Arrow release the GIL in their kernels, so steps overlap on several cores;
    # at most `workers` steps' records are in memory at once.
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        steps = list(pool.map(one_step, step_indices(store, engine_id)))
    knee = find_knee(steps)
    engine = _engine_spec(job, engine_id)
    return build_summary(
        job,
        engine_id=engine_id,
        motor=(stored or {}).get("motor") or str(getattr(engine, "kind", "unknown")),
        motor_version=(stored or {}).get("motor_version") or "unknown (recomputed from records)",
        config=(stored or {}).get("config") or str(getattr(engine, "config", "") or ""),
        steps=[s.to_dict() for s in steps],
        knee=knee.to_dict() if knee is not None else None,
        provenance=_provenance(store, job, stored),
        harness_version=__version__,
    )


def _engine_spec(job: JobSpec, engine_id: str) -> Any:
    for engine, eid in zip(job.engines, job.engine_ids()):
        if eid == engine_id:
            return engine
    return None


def _provenance(store: ResultStore, job: JobSpec, stored: dict[str, Any] | None) -> dict[str, Any]:
    base = dict((stored or {}).get("provenance") or {})
    base.setdefault("run_id", store.uri.rstrip("/").rsplit("/", 1)[-1])
    base.setdefault("job_spec_sha256", spec_sha256(job))
    base.setdefault("seed", job.workload.seed)
    base["recomputed_from_records"] = True
    base["windows"] = "stored" if stored is not None else "inferred from records"
    return base

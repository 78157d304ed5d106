"""Resume bookkeeping on a local store (no Ray): markers, attempt ids, which run may resume, the hint."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
import yaml

from raybench.config import parse_job
from raybench.errors import RaybenchError
from raybench.results import ResultStore
from raybench.results.catalog import run_manifest
from raybench.results.schema import RECORD_SCHEMA
from raybench.sweep.resume import (
    incomplete_runs_hint,
    next_attempt,
    open_resumed_run,
    read_markers,
    write_marker,
)

JOB = {
    "name": "res", "model": {"name": "m"}, "engines": [{"kind": "simulated", "id": "a"}],
    "workload": {"isl": {"mean": 8}, "osl": {"mean": 4}}, "load": {"steps": [1, 2], "requests": 4},
    "slo": {"ttft_p99_ms": 500, "itl_p50_ms": 30},
}  # fmt: skip


def _started(root: ResultStore, run_id: str, job: dict[str, object] | None = None) -> ResultStore:
    spec = parse_job(job or JOB)
    run = root.child(run_id)
    run.write_text("job.yaml", yaml.safe_dump(spec.model_dump(mode="json"), sort_keys=False))
    run.write_json("run.json", run_manifest(spec, run_id, f"2026-01-0{len(root.list()) + 1}T00:00:00"))
    return run


def _records(run: ResultStore, step: int, attempts: list[int | None]) -> None:
    rows = [
        {"run_id": "r", "engine_id": "a", "step_index": step, "attempt": a, "generator_id": "g0",
         "request_id": f"a:{step}:{i}", "phase": "measure", "scheduled_ns": 0, "sent_ns": 0, "done_ns": 1,
         "status": "ok", "wall_offset_ns": 0}
        for i, a in enumerate(attempts)
    ]  # fmt: skip
    run.write_table(f"engines/a/records/step={step}/generator=g0/part-1.parquet", pa.Table.from_pylist(rows,
                    schema=RECORD_SCHEMA))  # fmt: skip


def test_markers_round_trip(tmp_path: Path) -> None:
    run = _started(ResultStore(str(tmp_path)), "r1")
    assert read_markers(run, "a") == {}
    write_marker(run, "a", {"step_index": 1, "level": 2.0, "attempt": 3, "metrics": {"step_index": 1}})
    markers = read_markers(run, "a")
    assert list(markers) == [1] and markers[1]["attempt"] == 3 and "written_at" in markers[1]
    assert (tmp_path / "r1" / "engines" / "a" / "steps" / "step=1.json").is_file()


def test_next_attempt_never_reuses_a_stored_attempt(tmp_path: Path) -> None:
    run = _started(ResultStore(str(tmp_path)), "r1")
    assert next_attempt(run, "a", 0) == 0
    _records(run, 0, [0, 0, 1])
    assert next_attempt(run, "a", 0) == 2
    _records(run, 1, [None])  # written before the attempt column existed: attempt 0
    assert next_attempt(run, "a", 1) == 1


def test_only_an_incomplete_run_of_the_same_job_resumes(tmp_path: Path) -> None:
    root = ResultStore(str(tmp_path))
    _started(root, "r1")
    assert open_resumed_run(root, "r1", parse_job(JOB)).uri.endswith("/r1")
    with pytest.raises(RaybenchError, match=r"no run 'nope'.*--status incomplete"):
        open_resumed_run(root, "nope", parse_job(JOB))
    other = {**JOB, "load": {"steps": [1, 2], "requests": 8}}
    with pytest.raises(RaybenchError, match=r"different job spec.*load"):
        open_resumed_run(root, "r1", parse_job(other))
    root.child("r1").write_json("_COMPLETE", {"failures": {}})
    with pytest.raises(RaybenchError, match="already complete"):
        open_resumed_run(root, "r1", parse_job(JOB))


def test_hint_names_the_newest_incomplete_run_of_this_job(tmp_path: Path) -> None:
    root = ResultStore(str(tmp_path))
    assert incomplete_runs_hint(root, "res") is None
    _started(root, "r1")
    _started(root, "r2")
    _started(root, "x1", {**JOB, "name": "other"})
    hint = incomplete_runs_hint(root, "res", "jobs/res.yaml")
    assert hint is not None and "raybench run jobs/res.yaml --resume r2" in hint and "1 older" in hint
    assert incomplete_runs_hint(root, "nothing") is None

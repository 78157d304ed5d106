"""`raybench report` reading runs from an S3-compatible server on loopback (moto): summaries and records."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
import yaml

from raybench.cli import main
from raybench.report.runs import load_runs
from raybench.report.tables import build_report
from raybench.results import RECORD_SCHEMA, ResultStore

pytestmark = pytest.mark.integration

MS = 1_000_000
JOB = {
    "name": "s3",
    "model": {"name": "m", "precision": "bf16"},
    "hardware": "1xGPU",
    "engines": [{"kind": "endpoint", "id": "eng", "base_url": "http://127.0.0.1:9"}],
    "workload": {"isl": {"mean": 8}, "osl": {"mean": 4}},
    "load": {"steps": [2], "duration_s": 1},
    "slo": {"ttft_p99_ms": 500, "itl_p50_ms": 30},
    "validity": {"min_measured_requests": 1},
    "fleet": {"generators": 2},
}


def _record(generator: str, sent_ms: int) -> dict[str, object]:
    sent = sent_ms * MS
    chunks = [sent + (50 + 10 * i) * MS for i in range(3)]
    return {
        "run_id": "run-s3", "engine_id": "eng", "step_index": 0, "generator_id": generator,
        "request_id": f"{generator}-{sent_ms}", "phase": "measure", "target_concurrency": 2,
        "scheduled_ns": sent, "sent_ns": sent, "first_token_ns": chunks[0], "last_token_ns": chunks[-1],
        "done_ns": chunks[-1] + MS, "chunk_ns": chunks, "chunk_tokens": [1, 1, 1], "output_tokens": 3,
        "token_count_source": "server_usage", "status": "ok", "wall_offset_ns": 0,
    }  # fmt: skip


def _upload_run(bucket: str) -> str:
    run = ResultStore(f"s3://{bucket}/results").child("run-s3")
    run.write_text("job.yaml", yaml.safe_dump(JOB))
    for generator in ("g0", "g1"):
        rows = [_record(generator, t) for t in (0, 10, 100, 120)]
        table = pa.Table.from_pylist(rows, schema=RECORD_SCHEMA)
        run.write_table(f"engines/eng/records/step=0/generator={generator}/part-1.parquet", table)
    run.write_json("_COMPLETE", {})
    return f"s3://{bucket}/results"


def test_report_rebuilds_a_summary_from_records_on_s3(bucket: str) -> None:
    loaded = load_runs([_upload_run(bucket)])
    (result,) = loaded.results
    assert result.recomputed and result.run_id == "run-s3"
    report = build_report(loaded)
    (row,) = report.pareto
    assert row["knee_concurrency"] == 2
    assert row["ttft_p99_ms"] == pytest.approx(50.0) and row["itl_p50_ms"] == pytest.approx(10.0)


def test_report_cli_reads_s3_and_prints_json(bucket: str, capsys: pytest.CaptureFixture[str]) -> None:
    uri = _upload_run(bucket)
    assert main(["report", uri, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["pareto"][0]["engine"] == "eng" and doc["runs"] == [f"{uri}/run-s3"]

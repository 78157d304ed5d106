"""Finding runs under URIs, and summaries rebuilt from stored records."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
import yaml
from report_samples import ARTICLE_VLLM, JOB, MS, make_request, make_summary, write_records, write_run

from raybench.config.loader import parse_job
from raybench.errors import StorageError
from raybench.metrics import Window, compute_step
from raybench.report.records import infer_window, summarize_engine
from raybench.report.runs import load_runs
from raybench.results.schema import RECORD_SCHEMA
from raybench.results.store import ResultStore


def _records_run(root: Path) -> Path:
    """A run with job.yaml and two steps of records (two generators each), no summary."""
    run = root / "run-rec"
    run.mkdir(parents=True)
    (run / "job.yaml").write_text(yaml.safe_dump(JOB))
    write_records(
        run, "eng", 0, [make_request("g0", 0), make_request("g0", 100), make_request("g1", 10), make_request("g1", 120)]
    )
    slow = [
        make_request("g0", 0, ttft_ms=900),
        make_request("g1", 5, ttft_ms=900),
        make_request("g1", 200, ttft_ms=900),
    ]
    write_records(run, "eng", 1, [r | {"target_concurrency": 4} for r in slow])
    return run


def test_a_run_folder_a_results_folder_and_a_summary_file(tmp_path: Path) -> None:
    write_run(tmp_path, "run-a", [make_summary("vllm", ARTICLE_VLLM)])
    write_run(tmp_path, "run-b", [make_summary("sglang", ARTICLE_VLLM), make_summary("trt", ARTICLE_VLLM)])
    (tmp_path / "not-a-run").mkdir()
    assert [r.engine_id for r in load_runs([str(tmp_path / "run-a")]).results] == ["vllm"]
    everything = load_runs([str(tmp_path)])
    assert sorted((r.run_id, r.engine_id) for r in everything.results) == [
        ("run-a", "vllm"),
        ("run-b", "sglang"),
        ("run-b", "trt"),
    ]
    assert everything.warnings == []
    one = load_runs([str(tmp_path / "run-b" / "engines" / "trt" / "summary.json")])
    assert [r.engine_id for r in one.results] == ["trt"]


def test_incomplete_run_is_read_with_a_warning(tmp_path: Path) -> None:
    write_run(tmp_path, "run-x", [make_summary("vllm", ARTICLE_VLLM)], complete=False)
    loaded = load_runs([f"file://{tmp_path / 'run-x'}"])
    assert loaded.results[0].complete is False
    assert loaded.warnings == ["run run-x is incomplete (no _COMPLETE marker): it may lack steps or engines"]


def test_nothing_there_says_what_to_give(tmp_path: Path) -> None:
    with pytest.raises(StorageError, match="give a run folder"):
        load_runs([str(tmp_path)])


def test_window_inferred_from_records_by_hand() -> None:
    rows = [make_request("g0", 0), make_request("g0", 100), make_request("g1", 10), make_request("g1", 120)]
    window = infer_window(pa.Table.from_pylist(rows, schema=RECORD_SCHEMA))
    # Opens when the last generator sent its first request (g1 at 10 ms); closes when the first
    # generator sent its last one (g0 at 100 ms).
    assert window == Window(10 * MS, 100 * MS)


def test_missing_summary_is_rebuilt_from_records(tmp_path: Path) -> None:
    run = _records_run(tmp_path)
    (run / "_COMPLETE").write_text("{}")
    loaded = load_runs([str(run)])
    (result,) = loaded.results
    assert result.recomputed and "summarized from its records" in loaded.warnings[0]
    s = result.summary
    assert s["concurrency_sweep"] == [2, 4] and s["config"] == "c1" and s["motor"] == "endpoint"
    assert s["results_at_knee"]["concurrency"] == 2  # step 1 breaks the TTFT bound (900 ms > 500 ms)
    assert s["results_at_knee"]["ttft_p99_ms"] == pytest.approx(50.0)
    assert s["results_at_knee"]["itl_p50_ms"] == pytest.approx(10.0)
    assert s["steps"][1]["slo_held"] is False and s["steps"][1]["goodput_tok_s"] == 0.0
    assert s["provenance"]["recomputed_from_records"] is True


def test_rebuilt_with_stored_windows_equals_the_driver_computation(tmp_path: Path) -> None:
    run = _records_run(tmp_path)
    spec = parse_job(JOB)
    table = ResultStore(str(run)).read_table("engines/eng/records/step=0", schema=RECORD_SCHEMA)
    window = Window(0, 200 * MS)
    expected = compute_step(
        table, window=window, slo=spec.slo, validity=spec.validity, target_concurrency=2, step_index=0
    ).to_dict()
    stored = {"steps": [expected], "motor": "x", "motor_version": "1", "provenance": {"run_id": "r"}}
    for workers in (1, 2):
        rebuilt = summarize_engine(ResultStore(str(run)), "eng", stored=stored, workers=workers)
        assert rebuilt["steps"][0] == json.loads(json.dumps(expected))
        assert rebuilt["motor"] == "x" and rebuilt["provenance"]["windows"] == "stored"

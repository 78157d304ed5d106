"""ResultStore against a real S3-compatible server on loopback (moto), and preflight failures."""

from __future__ import annotations

import pickle
from pathlib import Path

import pyarrow as pa
import pytest

from raybench.errors import StorageError
from raybench.results import RECORD_SCHEMA, ResultStore

pytestmark = pytest.mark.integration


def test_roundtrip_json_and_parquet_on_s3(bucket: str) -> None:
    store = ResultStore(f"s3://{bucket}/results").child("run-1")
    store.preflight()
    store.write_json("engines/e/summary.json", {"ok": True})
    assert store.read_json("engines/e/summary.json") == {"ok": True}
    row = {"run_id": "r", "engine_id": "e", "step_index": 0, "generator_id": "g", "request_id": "1",
           "phase": "measure", "scheduled_ns": 1, "sent_ns": 1, "done_ns": 2, "status": "ok",
           "wall_offset_ns": 0}  # fmt: skip
    store.write_table("engines/e/records/step=0/generator=g/part-1.parquet", pa.Table.from_pylist([row], RECORD_SCHEMA))
    again = pickle.loads(pickle.dumps(store))  # what a Ray actor receives
    assert again.read_table("engines/e/records/step=0", schema=RECORD_SCHEMA).num_rows == 1
    assert again.list("engines/e") == ["records", "summary.json"]


def test_explicit_endpoint_without_env(bucket: str, s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    store = ResultStore(f"s3://{bucket}/x", endpoint_url=s3_endpoint)
    store.write_text("a.txt", "hi")
    assert store.read_bytes("a.txt") == b"hi"


def test_preflight_missing_bucket_fails_fast(bucket: str) -> None:
    import time

    start = time.monotonic()
    with pytest.raises(StorageError, match="not writable"):
        ResultStore(f"s3://{bucket}-missing/results").preflight()
    assert time.monotonic() - start < 20


def test_preflight_path_under_a_file(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StorageError, match="not writable"):
        ResultStore(str(blocker / "results")).preflight()

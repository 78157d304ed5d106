"""Storage outages without a server: the retry bound, records held by the writer, the abort message."""

from __future__ import annotations

import pickle
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pydantic import ValidationError

from raybench.config.job import OutputSpec
from raybench.errors import RunAborted, StorageError, StorageOutage
from raybench.results import RECORD_SCHEMA, RecordWriter, ResultStore
from raybench.results.store import _retry
from raybench.sweep.resume import outage_aborted, storage_aborted


def _row(i: int) -> dict[str, Any]:
    return {"run_id": "r", "engine_id": "e", "step_index": 0, "generator_id": "g0", "request_id": f"e:0:{i}",
            "phase": "measure", "scheduled_ns": i, "sent_ns": i, "done_ns": i + 10, "status": "ok",
            "wall_offset_ns": 0}  # fmt: skip


class _Flaky:
    """Fails every call until `down_until` (a monotonic instant) with a 503, like a throttled store."""

    def __init__(self, down_s: float) -> None:
        self.down_until = time.monotonic() + down_s
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if time.monotonic() < self.down_until:
            raise OSError("AWS Error SLOW_DOWN (HTTP status 503) during PutObject operation")
        return "stored"


def test_transient_errors_within_the_bound_are_retried() -> None:
    flaky = _Flaky(down_s=0.5)
    assert _retry(flaky, "s3://b/x", max_outage_s=5) == "stored"
    assert flaky.calls >= 2


def test_an_outage_past_the_bound_raises_storage_outage_in_time() -> None:
    start = time.monotonic()
    with pytest.raises(StorageOutage, match=r"unavailable for over 0.5 s \(output.max_outage_s\)") as info:
        _retry(_Flaky(down_s=60), "s3://b/x/part.parquet", max_outage_s=0.5)
    assert 0.5 <= time.monotonic() - start < 2
    assert isinstance(info.value, StorageError) and info.value.what == "s3://b/x/part.parquet"
    again = pickle.loads(pickle.dumps(info.value))  # crosses Ray from a generator to the driver
    assert isinstance(again, StorageOutage) and again.max_outage_s == 0.5


def test_a_permanent_error_is_not_retried() -> None:
    calls = []

    def denied() -> None:
        calls.append(1)
        raise OSError("AWS Error ACCESS_DENIED during PutObject operation: Access Denied")

    with pytest.raises(StorageError, match="check the credentials") as info:
        _retry(denied, "s3://b/x", max_outage_s=5)
    assert not isinstance(info.value, StorageOutage) and len(calls) == 1


def test_the_bound_travels_with_the_store(tmp_path: Path) -> None:
    store = pickle.loads(pickle.dumps(ResultStore(str(tmp_path), max_outage_s=3.5)))
    assert store.max_outage_s == 3.5 and store.child("run").max_outage_s == 3.5


def test_output_spec_bound_is_validated() -> None:
    assert OutputSpec().max_outage_s == 16.0
    assert OutputSpec(max_outage_s=120).max_outage_s == 120
    with pytest.raises(ValidationError):
        OutputSpec(max_outage_s=0)


class _DownStore:
    """Delegates to a real store, but `write_table` fails (as after the store's retries) `failures` times."""

    def __init__(self, store: ResultStore, failures: int) -> None:
        self._store = store
        self.failures = failures

    def write_table(self, relative: str, table: pa.Table) -> None:
        if self.failures > 0:
            self.failures -= 1
            raise StorageOutage(relative, 0.1, "HTTP status 503")
        self._store.write_table(relative, table)


async def test_writer_holds_the_rows_of_a_failed_part_and_writes_them_again(tmp_path: Path) -> None:
    store = ResultStore(str(tmp_path))
    down = _DownStore(store, failures=2)
    writer = RecordWriter(down, "p", flush_rows=10)  # type: ignore[arg-type]
    for i in range(35):
        writer.add(_row(i))
    assert await writer.close() == 35
    assert down.failures == 0
    ids = store.read_table("p", schema=RECORD_SCHEMA).column("request_id").to_pylist()
    assert sorted(ids) == sorted(f"e:0:{i}" for i in range(35)), "a record was lost or written twice"


async def test_writer_close_raises_when_storage_is_still_down(tmp_path: Path) -> None:
    writer = RecordWriter(_DownStore(ResultStore(str(tmp_path)), failures=99), "p", flush_rows=10)  # type: ignore[arg-type]
    for i in range(15):
        writer.add(_row(i))
    with pytest.raises(StorageOutage):
        await writer.close()
    assert writer.rows_written == 0 and writer.buffered == 15  # held, not dropped


def test_abort_message_names_safe_steps_and_the_resume_command() -> None:
    outage = StorageOutage("s3://b/r/engines/a/records/step=2/part.parquet", 16.0, "HTTP status 503")
    exc = outage_aborted(outage, "job-1", "jobs/x.yaml", {"a": [0, 1], "b": []}, complete=["z"])
    assert isinstance(exc, RunAborted) and exc.exit_code == 1
    text = str(exc)
    assert "over 16 s (output.max_outage_s)" in text
    assert "z complete; a steps 0, 1" in text
    assert "raybench run jobs/x.yaml --resume job-1" in text
    nothing = str(outage_aborted(outage, "job-1", "JOB", {"a": []}, complete=[]))
    assert "no step completed yet" in nothing


def test_the_driver_finds_an_outage_behind_a_task_error_or_a_cleanup_error() -> None:
    from raybench.sweep.driver import _storage_failure

    outage = StorageOutage("s3://b/x", 2.0, "503")

    class TaskError(Exception):  # like ray.exceptions.RayTaskError: the remote exception is `.cause`
        cause = outage

    assert _storage_failure(TaskError()) is outage
    try:
        try:
            raise outage
        finally:
            raise RuntimeError("teardown failed too")
    except RuntimeError as exc:
        assert _storage_failure(exc) is outage
    assert _storage_failure(RuntimeError("other")) is None
    full = StorageError("file:///r/x: [Errno 28] No space left on device")  # a lasting failure: found too
    try:
        raise RuntimeError("task failed") from full
    except RuntimeError as exc:
        assert _storage_failure(exc) is full
        message = str(storage_aborted(full, "job-1", "jobs/x.yaml", {"a": [0]}, complete=[]))
    assert "No space left" in message and "a steps 0" in message
    assert "raybench run jobs/x.yaml --resume job-1" in message

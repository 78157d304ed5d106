"""ResultStore and RecordWriter on local disk: whole files, schema version, reading parts back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from raybench.errors import StorageError
from raybench.results import RECORD_SCHEMA, SCHEMA_VERSION, RecordWriter, ResultStore


def _row(i: int) -> dict[str, Any]:
    return {
        "run_id": "r",
        "engine_id": "e",
        "step_index": 0,
        "generator_id": "g0",
        "request_id": f"e:0:{i}",
        "phase": "measure",
        "scheduled_ns": i,
        "sent_ns": i,
        "done_ns": i + 10,
        "status": "ok",
        "wall_offset_ns": 0,
        "chunk_ns": [i + 1, i + 2],
        "chunk_tokens": [1, 1],
    }


def test_json_and_text_roundtrip(tmp_path: Path) -> None:
    store = ResultStore(str(tmp_path)).child("run-1")
    store.write_json("engines/e/summary.json", {"a": 1})
    assert store.read_json("engines/e/summary.json") == {"a": 1}
    assert store.exists("engines/e/summary.json") and not store.exists("nope")
    assert not [p for p in (tmp_path / "run-1" / "engines" / "e").iterdir() if p.name.startswith(".tmp")]


def test_store_is_picklable(tmp_path: Path) -> None:
    import pickle

    store = pickle.loads(pickle.dumps(ResultStore(str(tmp_path))))
    store.write_text("x.txt", "hi")
    assert (tmp_path / "x.txt").read_text() == "hi"


async def test_writer_flushes_parts_by_rows(tmp_path: Path) -> None:
    store = ResultStore(str(tmp_path))
    writer = RecordWriter(store, "engines/e/records/step=0/generator=g0", flush_rows=10)
    for i in range(25):
        writer.add(_row(i))
    assert await writer.close() == 25
    parts = sorted((tmp_path / "engines/e/records/step=0/generator=g0").glob("part-*.parquet"))
    assert len(parts) == 3
    meta = pq.read_schema(parts[0]).metadata
    assert meta[b"raybench.schema_version"] == SCHEMA_VERSION.encode()
    table = store.read_table("engines/e/records/step=0", schema=RECORD_SCHEMA)
    assert table.num_rows == 25
    assert sorted(table.column("request_id").to_pylist()) == sorted(f"e:0:{i}" for i in range(25))


def test_read_missing_prefix(tmp_path: Path) -> None:
    store = ResultStore(str(tmp_path))
    assert store.read_table("none", schema=RECORD_SCHEMA).num_rows == 0
    with pytest.raises(StorageError):
        store.read_table("none")
    with pytest.raises(StorageError):
        store.read_json("none.json")


async def test_writer_flushes_on_time_without_new_rows(tmp_path: Path) -> None:
    import asyncio

    store = ResultStore(str(tmp_path))
    writer = RecordWriter(store, "p", flush_rows=1000, flush_interval_s=0.2)
    writer.add(_row(1))
    await asyncio.sleep(0.6)  # no further row arrives: the timer alone must store the first one
    assert list((tmp_path / "p").glob("part-*.parquet")), "a buffered row waited past the flush interval"
    writer.add(_row(2))
    assert await writer.close() == 2
    assert store.read_table("p", schema=RECORD_SCHEMA).num_rows == 2

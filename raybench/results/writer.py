"""RecordWriter: buffers request records in a generator and flushes them as whole Parquet parts."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import pyarrow as pa

from raybench.results.schema import RECORD_SCHEMA
from raybench.results.store import ResultStore

__all__ = ["RecordWriter", "records_prefix"]


def records_prefix(engine_id: str, step_index: int) -> str:
    """Where one step's records live, relative to the run (MEASUREMENT.md layout)."""
    return f"engines/{engine_id}/records/step={step_index}"


class RecordWriter:
    """Collects record dicts; `maybe_flush` writes a part every `flush_rows` rows or `flush_interval_s`.

    Parts are converted and written in a worker thread so the event loop keeps timing requests.
    """

    def __init__(
        self, store: ResultStore, prefix: str, flush_rows: int = 20_000, flush_interval_s: float = 5.0
    ) -> None:
        self._store = store
        self._prefix = prefix
        self._flush_rows = flush_rows
        self._flush_interval_s = flush_interval_s
        self._rows: list[dict[str, Any]] = []
        self._last_flush = time.monotonic()
        self._parts = 0
        self._pending: list[asyncio.Future[None]] = []
        self.rows_written = 0

    @property
    def buffered(self) -> int:
        """Rows waiting for the next flush."""
        return len(self._rows)

    def add(self, row: dict[str, Any]) -> None:
        self._rows.append(row)
        if len(self._rows) >= self._flush_rows or time.monotonic() - self._last_flush >= self._flush_interval_s:
            self._pending.append(asyncio.ensure_future(asyncio.to_thread(self._write, self._take())))

    async def close(self) -> int:
        """Flush what is left and wait for every part to be stored; returns the rows stored."""
        if self._rows:
            self._pending.append(asyncio.ensure_future(asyncio.to_thread(self._write, self._take())))
        if self._pending:
            await asyncio.gather(*self._pending)
        self._pending = []
        return self.rows_written

    def _take(self) -> list[dict[str, Any]]:
        rows, self._rows = self._rows, []
        self._last_flush = time.monotonic()
        self.rows_written += len(rows)
        return rows

    def _write(self, rows: list[dict[str, Any]]) -> None:
        table = pa.Table.from_pylist(rows, schema=RECORD_SCHEMA)
        self._parts += 1
        self._store.write_table(f"{self._prefix}/part-{self._parts:05d}-{uuid.uuid4().hex[:8]}.parquet", table)

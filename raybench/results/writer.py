"""RecordWriter: buffers request records in a generator and flushes them as whole Parquet parts."""

from __future__ import annotations

import asyncio
import contextlib
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
        self._ticker: asyncio.Task[None] | None = None
        self.rows_written = 0

    @property
    def buffered(self) -> int:
        """Rows waiting for the next flush."""
        return len(self._rows)

    def add(self, row: dict[str, Any]) -> None:
        self._rows.append(row)
        if self._ticker is None:  # started on the first row: the writer is built outside the loop
            self._ticker = asyncio.get_running_loop().create_task(self._tick())
        if len(self._rows) >= self._flush_rows:
            self._flush()

    def _flush(self) -> None:
        self._pending.append(asyncio.ensure_future(asyncio.to_thread(self._write, self._take())))

    async def _tick(self) -> None:
        """Flush every `flush_interval_s` even when no request finishes (rows never wait longer)."""
        while True:
            await asyncio.sleep(max(self._last_flush + self._flush_interval_s - time.monotonic(), 0.0))
            if self._rows and time.monotonic() - self._last_flush >= self._flush_interval_s:
                self._flush()
            elif not self._rows:
                self._last_flush = time.monotonic()

    async def close(self) -> int:
        """Flush what is left and wait for every part to be stored; returns the rows stored."""
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
            self._ticker = None
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

"""RecordWriter: buffers request records in a generator and flushes them as whole Parquet parts."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import uuid
from typing import Any

import pyarrow as pa

from raybench.errors import StorageError
from raybench.results.schema import RECORD_SCHEMA
from raybench.results.store import ResultStore

__all__ = ["RecordWriter", "records_prefix"]


def records_prefix(engine_id: str, step_index: int) -> str:
    """Where one step's records live, relative to the run (MEASUREMENT.md layout)."""
    return f"engines/{engine_id}/records/step={step_index}"


class RecordWriter:
    """Collects record dicts; writes a part every `flush_rows` rows or `flush_interval_s` seconds.

    Parts are converted and written in a worker thread so the event loop keeps timing requests. A part
    the store could not take (the store retried it for its outage bound) is not dropped: it is held and
    written again under the same part name with the next flush; `close` raises the store's error only if
    that last write fails too.
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
        # Failed parts keep their names: written again under the same name, a part whose PUT landed
        # but whose answer was lost is replaced, never stored twice.
        self._held: list[tuple[str, list[dict[str, Any]]]] = []
        self._lock = threading.Lock()  # `_held` and `rows_written` change in the writer threads too
        self.rows_written = 0

    @property
    def buffered(self) -> int:
        """Rows waiting for the next flush (held rows of failed parts included)."""
        return len(self._rows) + sum(len(rows) for _, rows in self._held)

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
            if self.buffered and time.monotonic() - self._last_flush >= self._flush_interval_s:
                self._flush()  # held rows of a failed part go out again too
            elif not self.buffered:
                self._last_flush = time.monotonic()

    async def close(self) -> int:
        """Flush what is left and wait for every part to be stored; returns the rows stored."""
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
            self._ticker = None
        if self._pending:
            await asyncio.gather(*self._pending)
        self._pending = []
        parts = self._take()
        if parts:  # what is left, and any part that failed: one last write, which must succeed
            await asyncio.to_thread(self._write, parts, True)
        return self.rows_written

    def _take(self) -> list[tuple[str, list[dict[str, Any]]]]:
        """The parts to write now: held failed parts (same names) and the buffered rows as a new part."""
        with self._lock:
            parts, self._held = self._held, []
            if self._rows:
                self._parts += 1
                name = f"{self._prefix}/part-{self._parts:05d}-{uuid.uuid4().hex[:8]}.parquet"
                parts.append((name, self._rows))
                self._rows = []
            self.rows_written += sum(len(rows) for _, rows in parts)
        self._last_flush = time.monotonic()
        return parts

    def _write(self, parts: list[tuple[str, list[dict[str, Any]]]], last: bool = False) -> None:
        failure: StorageError | None = None
        for name, rows in parts:
            try:
                self._store.write_table(name, pa.Table.from_pylist(rows, schema=RECORD_SCHEMA))
            except StorageError as exc:
                failure = exc
                with self._lock:  # held, not lost: the next flush (or close) writes it again
                    self._held.append((name, rows))
                    self.rows_written -= len(rows)
        if failure is not None and last:
            raise failure

"""Per-request latencies and token events of record tables, exactly as MEASUREMENT.md defines them.

All intervals are taken between instants of one record, so they are on one generator's
monotonic clock and need no offset. Latency samples (TTFT, E2E, TPOT, queue, TTFT from
schedule, ITL) come from ``status == "ok"`` requests only: a failed request's timings describe
the failure, not the service. Failures are not lost: they stay in the counts and error rate
and count against goodput (see ``raybench.metrics.step``). These functions do not filter by
phase; pass measure-phase records when that is what you want.

Output token count of a request: ``output_tokens`` (server usage) when present, else the sum
of its ``chunk_tokens``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "ITL_DEFINITION",
    "RowLatencies",
    "TokenEvents",
    "e2e_ms",
    "itl_samples",
    "ok_mask",
    "output_token_counts",
    "queue_ms",
    "row_latencies",
    "token_events",
    "tpot_ms",
    "ttft_from_schedule_ms",
    "ttft_ms",
]

ITL_DEFINITION = "token-weighted inter-token gaps"

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

_NS_PER_MS = 1_000_000.0


@dataclass(frozen=True)
class TokenEvents:
    """Every token-bearing event of a table, flattened: ``row`` indexes the table's rows
    (non-decreasing: a row's events are contiguous), ``ns`` is the arrival instant on the
    generator's clock, ``tokens`` what the event carried; ``lengths`` counts each row's events."""

    row: IntArray
    ns: IntArray
    tokens: IntArray
    lengths: IntArray

    def spread(self, per_row: npt.NDArray[Any]) -> npt.NDArray[Any]:
        """A per-row array repeated onto the events (``per_row[row]``, but sequential and faster)."""
        return np.repeat(per_row, self.lengths)

    def per_row_tokens(self) -> IntArray:
        """Tokens of each row's events summed (exact integers; 0 for a row without events).

        Computed once and kept: several metrics need it.
        """
        cached = self.__dict__.get("_per_row")
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        ends = np.cumsum(self.lengths)
        total = np.concatenate(([0], np.cumsum(self.tokens)))
        sums = np.asarray(total[ends] - total[ends - self.lengths], dtype=np.int64)
        sums.flags.writeable = False
        self.__dict__["_per_row"] = sums
        return sums


@dataclass(frozen=True)
class RowLatencies:
    """Latencies aligned with the table's rows, in ms; NaN where undefined for that row."""

    ok: BoolArray
    ttft_ms: FloatArray
    e2e_ms: FloatArray
    tpot_ms: FloatArray
    queue_ms: FloatArray
    ttft_from_schedule_ms: FloatArray


def _require(table: pa.Table, names: tuple[str, ...]) -> None:
    missing = [n for n in names if n not in table.column_names]
    if missing:
        raise ValueError(f"record table lacks columns {missing}; build it with results.schema.RECORD_SCHEMA")


def _int_col(table: pa.Table, name: str) -> tuple[IntArray, BoolArray]:
    """An integer column as (int64 values with nulls as 0, valid mask)."""
    col = table.column(name)
    valid = np.asarray(pc.is_valid(col).to_numpy(zero_copy_only=False), dtype=np.bool_)
    values = np.asarray(pc.fill_null(col, 0).to_numpy(zero_copy_only=False), dtype=np.int64)
    return values, valid


def _interval_ms(later: IntArray, earlier: IntArray, defined: BoolArray) -> FloatArray:
    # Subtract in int64 first: ns instants exceed float64's exact integer range.
    out = (later - earlier).astype(np.float64) / _NS_PER_MS
    out[~defined] = np.nan
    return out


def ok_mask(table: pa.Table) -> BoolArray:
    """Rows whose request finished ``ok``."""
    _require(table, ("status",))
    ok = pc.fill_null(pc.equal(table.column("status"), "ok"), False)
    return np.asarray(ok.to_numpy(zero_copy_only=False), dtype=np.bool_)


def token_events(table: pa.Table) -> TokenEvents:
    """Flatten ``chunk_ns``/``chunk_tokens`` of every row (null lists contribute nothing)."""
    _require(table, ("chunk_ns", "chunk_tokens"))
    ns_col, tok_col = table.column("chunk_ns"), table.column("chunk_tokens")
    ns_len = pc.fill_null(pc.list_value_length(ns_col), 0)
    tok_len = pc.fill_null(pc.list_value_length(tok_col), 0)
    mismatch = pc.not_equal(ns_len, tok_len)
    if pc.any(mismatch).as_py():
        ids = table.filter(mismatch).column("request_id") if "request_id" in table.column_names else None
        bad = ids[0].as_py() if ids is not None else "?"
        raise ValueError(f"chunk_ns and chunk_tokens differ in length (request_id {bad}); give one per event")
    flat_ns, flat_tok = pc.list_flatten(ns_col), pc.list_flatten(tok_col)
    if flat_ns.null_count or flat_tok.null_count:
        raise ValueError("chunk_ns and chunk_tokens must not contain nulls")
    lengths = np.asarray(ns_len.to_numpy(), dtype=np.int64)
    return TokenEvents(
        row=np.repeat(np.arange(table.num_rows, dtype=np.int64), lengths),
        ns=np.asarray(flat_ns.to_numpy(), dtype=np.int64),
        tokens=np.asarray(flat_tok.to_numpy(), dtype=np.int64),
        lengths=lengths,
    )


def output_token_counts(table: pa.Table, events: TokenEvents | None = None) -> IntArray:
    """Per row: server-reported ``output_tokens``, else the sum of the row's ``chunk_tokens``."""
    _require(table, ("output_tokens",))
    ev = token_events(table) if events is None else events
    from_chunks = ev.per_row_tokens()
    reported, has = _int_col(table, "output_tokens")
    return np.where(has, reported, from_chunks)


def row_latencies(table: pa.Table, events: TokenEvents | None = None) -> RowLatencies:
    """Every per-request latency of MEASUREMENT.md, aligned with the rows (all statuses).

    ``events`` may pass ``token_events(table)`` when the caller already has it.
    """
    _require(table, ("scheduled_ns", "sent_ns", "first_token_ns", "last_token_ns", "done_ns"))
    sched, _ = _int_col(table, "scheduled_ns")
    sent, _ = _int_col(table, "sent_ns")
    done, _ = _int_col(table, "done_ns")
    first, has_first = _int_col(table, "first_token_ns")
    last, has_last = _int_col(table, "last_token_ns")
    out_tokens = output_token_counts(table, events)
    has_tpot = has_first & has_last & (out_tokens >= 2)
    tpot = _interval_ms(last, first, has_tpot) / np.where(has_tpot, out_tokens - 1, 1)
    everywhere = np.ones(table.num_rows, dtype=bool)
    return RowLatencies(
        ok=ok_mask(table),
        ttft_ms=_interval_ms(first, sent, has_first),
        e2e_ms=_interval_ms(done, sent, everywhere),
        tpot_ms=tpot,
        queue_ms=_interval_ms(sent, sched, everywhere),
        ttft_from_schedule_ms=_interval_ms(first, sched, has_first),
    )


def _ok_samples(per_row: FloatArray, ok: BoolArray) -> FloatArray:
    return per_row[ok & np.isfinite(per_row)]


def ttft_ms(table: pa.Table) -> FloatArray:
    """TTFT = first_token_ns - sent_ns of ok requests that produced a token."""
    lat = row_latencies(table)
    return _ok_samples(lat.ttft_ms, lat.ok)


def e2e_ms(table: pa.Table) -> FloatArray:
    """E2E = done_ns - sent_ns of ok requests."""
    lat = row_latencies(table)
    return _ok_samples(lat.e2e_ms, lat.ok)


def tpot_ms(table: pa.Table) -> FloatArray:
    """TPOT = (last_token_ns - first_token_ns) / (output tokens - 1), ok requests with >= 2 tokens."""
    lat = row_latencies(table)
    return _ok_samples(lat.tpot_ms, lat.ok)


def queue_ms(table: pa.Table) -> FloatArray:
    """Client-side wait sent_ns - scheduled_ns of ok requests."""
    lat = row_latencies(table)
    return _ok_samples(lat.queue_ms, lat.ok)


def ttft_from_schedule_ms(table: pa.Table) -> FloatArray:
    """first_token_ns - scheduled_ns of ok requests: what an open-loop user waited."""
    lat = row_latencies(table)
    return _ok_samples(lat.ttft_from_schedule_ms, lat.ok)


def itl_samples(
    table: pa.Table, events: TokenEvents | None = None, ok: BoolArray | None = None
) -> tuple[FloatArray, IntArray]:
    """ITL samples of ok requests as ``(gaps_ms, weights)``, for ``distribution(gaps, weights)``.

    ``events`` and ``ok`` (``ok_mask(table)``) may be passed when the caller has them.

    Every gap between consecutive token-bearing events of a request, divided by the tokens the
    later event carried, weighted by those tokens. Events carrying no tokens (only possible in
    malformed records) are skipped: their gap has no per-token value.
    """
    ok = ok_mask(table) if ok is None else ok
    ev = token_events(table) if events is None else events
    if ev.ns.size < 2:
        return np.empty(0, dtype=np.float64), np.empty(0, dtype=np.int64)
    same_request = ev.row[1:] == ev.row[:-1]
    keep = same_request & ev.spread(ok)[1:] & (ev.tokens[1:] > 0)
    gaps_ms = np.subtract(ev.ns[1:], ev.ns[:-1])[keep].astype(np.float64) / _NS_PER_MS
    weights = ev.tokens[1:][keep]
    if weights.size and weights.max() == 1:  # one token per event: dividing by 1 changes nothing
        return gaps_ms, weights
    return gaps_ms / weights, weights

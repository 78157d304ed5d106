"""Requested vs delivered output length: the mean gap and the note past 5 %."""

from __future__ import annotations

import pyarrow as pa

from raybench.metrics.osl import osl_accounting
from raybench.results import RECORD_SCHEMA


def _table(rows: list[tuple[int, int, str]]) -> pa.Table:
    base = {"run_id": "r", "engine_id": "e", "step_index": 0, "generator_id": "g", "phase": "measure",
            "scheduled_ns": 0, "sent_ns": 0, "done_ns": 1, "wall_offset_ns": 0}  # fmt: skip
    data = [{**base, "request_id": str(i), "requested_output_tokens": req, "output_tokens": got, "status": status}
            for i, (req, got, status) in enumerate(rows)]  # fmt: skip
    return pa.Table.from_pylist(data, RECORD_SCHEMA)


def test_exact_output_length_has_no_note() -> None:
    osl, notes = osl_accounting(_table([(100, 100, "ok"), (50, 50, "ok")]))
    assert osl == {"requested_mean": 75.0, "actual_mean": 75.0, "mismatch_pct": 0.0}
    assert notes == []


def test_short_outputs_are_flagged_and_failures_ignored() -> None:
    osl, notes = osl_accounting(_table([(100, 80, "ok"), (100, 90, "ok"), (100, 3, "timeout")]))
    assert osl["actual_mean"] == 85.0 and osl["mismatch_pct"] == -15.0
    assert len(notes) == 1 and "-15.0 %" in notes[0]


def test_no_requested_lengths() -> None:
    osl, notes = osl_accounting(RECORD_SCHEMA.empty_table())
    assert osl["mismatch_pct"] is None and notes == []

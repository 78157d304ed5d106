"""Requested versus delivered output length: did the engine honour max_tokens / ignore_eos?"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["OSL_TOLERANCE_PCT", "osl_accounting"]

OSL_TOLERANCE_PCT = 5.0


def osl_accounting(measured: pa.Table) -> tuple[dict[str, Any], list[str]]:
    """Mean requested and delivered output tokens of ok requests, their gap in %, and a note past 5 %."""
    empty: dict[str, Any] = {"requested_mean": None, "actual_mean": None, "mismatch_pct": None}
    if "requested_output_tokens" not in measured.column_names or measured.num_rows == 0:
        return empty, []
    ok = pc.fill_null(pc.equal(measured.column("status"), "ok"), False)
    rows = measured.filter(ok).select(["requested_output_tokens", "output_tokens"]).drop_null()
    if rows.num_rows == 0:
        return empty, []
    requested = rows.column("requested_output_tokens").to_numpy().astype(np.float64)
    actual = rows.column("output_tokens").to_numpy().astype(np.float64)
    mismatch = 100.0 * (actual.sum() - requested.sum()) / requested.sum() if requested.sum() else None
    out = {"requested_mean": float(requested.mean()), "actual_mean": float(actual.mean()), "mismatch_pct": mismatch}
    notes = []
    if mismatch is not None and abs(mismatch) > OSL_TOLERANCE_PCT:
        notes.append(
            f"output length: {actual.mean():.1f} tokens delivered on average vs {requested.mean():.1f} requested "
            f"({mismatch:+.1f} %); the engine ignores max_tokens/ignore_eos, so engines are not compared at equal OSL"
        )
    return out, notes

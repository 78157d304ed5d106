"""One sweep step's metrics from its records: counts, throughput, goodput, percentiles, SLO, validity.

Rules (MEASUREMENT.md) and the choices this module makes where the rules leave room:

- Only ``phase == "measure"`` records count; warm-up records are dropped first.
- Every measured request stays in the denominators: ``error_rate = failed / requests``.
- Latency distributions use ok requests only (see ``raybench.metrics.latency``).
- Throughput counts output tokens whose event instant, mapped onto the driver clock
  (``chunk_ns + wall_offset_ns``), lies in the half-open window ``[start_ns, end_ns)``, over
  every measured request whatever its status: the server did emit those tokens. When a
  request's server-reported ``output_tokens`` differs from the sum of its ``chunk_tokens``,
  its events' tokens are scaled by ``output_tokens / sum(chunk_tokens)`` so the request's
  events sum to the server's count (a request with no events cannot be placed in time and adds
  nothing).
- Goodput counts the same tokens, only of requests that meet the SLO (``meets_slo``), so
  failed and slow requests count against it: goodput <= throughput always.
- Request throughput counts ok requests whose ``done_ns + wall_offset_ns`` is in the window.
- Sums and percentiles depend only on the multiset of records, never on their order, so
  ``compute_step_from_parts(parts)`` equals ``compute_step`` over the whole table exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, TypedDict

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from raybench.config.slo import SloSpec, ValiditySpec
from raybench.metrics.latency import (
    RowLatencies,
    TokenEvents,
    itl_samples,
    output_token_counts,
    row_latencies,
    token_events,
)
from raybench.metrics.osl import osl_accounting
from raybench.metrics.percentiles import Distribution, distribution
from raybench.results.schema import RECORD_SCHEMA

__all__ = ["StepMetrics", "Window", "compute_step", "compute_step_from_parts", "meets_slo"]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

_NS_PER_S = 1_000_000_000


@dataclass(frozen=True, slots=True)
class Window:
    """A step's measurement window on the driver clock (``time.time_ns``), half-open."""

    start_ns: int
    end_ns: int

    def __post_init__(self) -> None:
        if self.end_ns <= self.start_ns:
            raise ValueError(f"window end_ns {self.end_ns} must be after start_ns {self.start_ns}")

    @property
    def length_s(self) -> float:
        return (self.end_ns - self.start_ns) / _NS_PER_S

    def contains(self, ns: npt.NDArray[np.int64]) -> BoolArray:
        """Which driver-clock instants lie in ``[start_ns, end_ns)``."""
        return (ns >= self.start_ns) & (ns < self.end_ns)


@dataclass(frozen=True)
class StepMetrics:
    """Everything measured about one step; ``to_dict()`` is its JSON form in the summary."""

    step_index: int
    concurrency: int
    ttft_p50_ms: float | None
    ttft_p99_ms: float | None
    itl_p50_ms: float | None
    throughput_tok_s: float
    goodput_tok_s: float
    goodput_pct: float | None
    request_throughput_req_s: float
    window_start_ns: int
    window_end_ns: int
    window_s: float
    requests: int
    ok: int
    failed: int
    error_rate: float
    errors_by_status: dict[str, int]
    requests_completed_in_window: int
    requests_meeting_slo: int
    token_count_sources: dict[str, int]
    slo_held: bool
    ttft_ms: Distribution
    itl_ms: Distribution
    tpot_ms: Distribution
    e2e_ms: Distribution
    queue_ms: Distribution
    ttft_from_schedule_ms: Distribution
    loop_lag_p99_ms: float | None
    clock_uncertainty_ms: float | None
    validity: dict[str, bool]
    valid: bool
    notes: tuple[str, ...]
    osl: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: distributions become dicts, ``notes`` a list, mappings are copied."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Distribution):
                value = value.to_dict()
            elif isinstance(value, dict):
                value = dict(value)
            elif isinstance(value, tuple):
                value = list(value)
            out[f.name] = value
        return out


def _meets(lat: RowLatencies, slo: SloSpec) -> BoolArray:
    # NaN compares False, so a request without a first token never meets the TTFT bound.
    meets = lat.ok & (lat.ttft_ms <= slo.ttft_p99_ms)
    no_tpot = np.isnan(lat.tpot_ms)
    meets &= no_tpot | (lat.tpot_ms <= slo.itl_p50_ms)
    if slo.tpot_p99_ms is not None:
        meets &= no_tpot | (lat.tpot_ms <= slo.tpot_p99_ms)
    if slo.e2e_p99_ms is not None:
        meets &= lat.e2e_ms <= slo.e2e_p99_ms
    return np.asarray(meets, dtype=bool)


def meets_slo(table: pa.Table, slo: SloSpec) -> BoolArray:
    """Per row: finished ok, produced a token, TTFT <= ``ttft_p99_ms``, TPOT <= ``itl_p50_ms``
    (and <= ``tpot_p99_ms`` when set) where TPOT is defined, E2E <= ``e2e_p99_ms`` when set."""
    return _meets(row_latencies(table), slo)


def _stable_sum(x: FloatArray) -> float:
    """Sequential sum in ascending order: independent of record order (merge equality), and
    monotone in its non-negative terms, so a subset (goodput) never exceeds the whole."""
    return float(np.cumsum(np.sort(x))[-1]) if x.size else 0.0


def _event_tokens(table: pa.Table, events: TokenEvents) -> FloatArray | npt.NDArray[np.int64]:
    """Tokens per event, scaled per request to the server-reported ``output_tokens``.

    Integers (int64) when no request needs scaling, the common case; floats otherwise.
    """
    chunk_sum = events.per_row_tokens()
    reported = output_token_counts(table, events)
    if np.array_equal(reported, chunk_sum):
        return events.tokens
    chunk_f, reported_f = chunk_sum.astype(np.float64), reported.astype(np.float64)
    scale = np.divide(reported_f, chunk_f, out=np.ones_like(chunk_f), where=chunk_f > 0)
    scaled: FloatArray = events.tokens.astype(np.float64) * events.spread(scale)
    return scaled


def _offsets(table: pa.Table) -> npt.NDArray[np.int64]:
    return np.asarray(table.column("wall_offset_ns").to_numpy(), dtype=np.int64)


class _Rates(TypedDict):
    throughput_tok_s: float
    goodput_tok_s: float
    goodput_pct: float | None
    request_throughput_req_s: float
    requests_completed_in_window: int


def _rates(table: pa.Table, events: TokenEvents, ok: BoolArray, meets: BoolArray, window: Window) -> _Rates:
    """Output and good tokens, and ok completions, inside the window, per second."""
    offsets = _offsets(table)
    tokens = _event_tokens(table, events)
    inside = window.contains(events.ns + events.spread(offsets))
    good = inside & events.spread(meets)
    if tokens.dtype.kind == "i":  # integer tokens: exact sums in any order, no copies
        all_tokens, good_tokens = float(np.sum(tokens, where=inside)), float(np.sum(tokens, where=good))
    else:
        floats = tokens.astype(np.float64, copy=False)
        all_tokens, good_tokens = _stable_sum(floats[inside]), _stable_sum(floats[good])
    done = np.asarray(table.column("done_ns").to_numpy(), dtype=np.int64) + offsets
    completed = int(np.count_nonzero(ok & window.contains(done)))
    return _Rates(
        throughput_tok_s=all_tokens / window.length_s,
        goodput_tok_s=good_tokens / window.length_s,
        # A ratio of token sums (good <= all exactly), not of rates: rounding cannot push it past 100.
        goodput_pct=100.0 * (good_tokens / all_tokens) if all_tokens > 0 else None,
        request_throughput_req_s=completed / window.length_s,
        requests_completed_in_window=completed,
    )


def _value_counts(column: pa.ChunkedArray) -> dict[str, int]:
    counts = pc.value_counts(pc.fill_null(column, "unknown")).to_pylist()
    return {c["values"]: int(c["counts"]) for c in sorted(counts, key=lambda c: str(c["values"]))}


class _Counts(TypedDict):
    requests: int
    ok: int
    failed: int
    error_rate: float
    errors_by_status: dict[str, int]
    requests_meeting_slo: int
    token_count_sources: dict[str, int]


def _counts(table: pa.Table, ok: BoolArray, meets: BoolArray) -> _Counts:
    """Request counts; every measured request stays in the error-rate denominator."""
    requests, n_ok = table.num_rows, int(np.count_nonzero(ok))
    return _Counts(
        requests=requests,
        ok=n_ok,
        failed=requests - n_ok,
        error_rate=(requests - n_ok) / requests if requests else 0.0,
        errors_by_status=_value_counts(table.column("status").filter(pa.array(~ok))),
        requests_meeting_slo=int(np.count_nonzero(meets)),
        token_count_sources=_value_counts(table.column("token_count_source")),
    )


class _Distributions(TypedDict):
    ttft_ms: Distribution
    itl_ms: Distribution
    tpot_ms: Distribution
    e2e_ms: Distribution
    queue_ms: Distribution
    ttft_from_schedule_ms: Distribution


def _distributions(table: pa.Table, events: TokenEvents, lat: RowLatencies) -> _Distributions:
    def ok_dist(per_row: FloatArray) -> Distribution:
        return distribution(per_row[lat.ok & np.isfinite(per_row)])

    gaps, weights = itl_samples(table, events, lat.ok)
    return _Distributions(
        ttft_ms=ok_dist(lat.ttft_ms),
        itl_ms=distribution(gaps, weights),
        tpot_ms=ok_dist(lat.tpot_ms),
        e2e_ms=ok_dist(lat.e2e_ms),
        queue_ms=ok_dist(lat.queue_ms),
        ttft_from_schedule_ms=ok_dist(lat.ttft_from_schedule_ms),
    )


def _at_most(value: float | None, bound: float | None) -> bool:
    """A bound holds when unset or when there is nothing to bound (no samples)."""
    return bound is None or value is None or value <= bound


def _slo_held(d: _Distributions, error_rate: float, slo: SloSpec) -> bool:
    """TTFT P99, ITL P50 (and optional E2E P99, TPOT P99) within bounds, errors within bound.

    A step without an ok request that produced a token has no TTFT and does not hold. ITL and
    TPOT bounds hold vacuously when every ok request produced a single token.
    """
    ttft_p99 = d["ttft_ms"].p99
    return (
        ttft_p99 is not None
        and ttft_p99 <= slo.ttft_p99_ms
        and _at_most(d["itl_ms"].p50, slo.itl_p50_ms)
        and _at_most(d["e2e_ms"].p99, slo.e2e_p99_ms)
        and _at_most(d["tpot_ms"].p99, slo.tpot_p99_ms)
        and error_rate <= slo.max_error_rate
    )


def _saturation_notes(queue_p99_ms: float | None, loop_lag_p99_ms: float | None, spec: ValiditySpec) -> list[str]:
    """Why the client, not the server, may have limited the step (empty when it did not)."""
    notes = []
    if loop_lag_p99_ms is not None and loop_lag_p99_ms > spec.loop_lag_p99_ms:
        notes.append(
            f"client saturated: loop lag P99 {loop_lag_p99_ms:.3g} ms > {spec.loop_lag_p99_ms:g} ms; add generators"
        )
    if queue_p99_ms is not None and queue_p99_ms > spec.queue_p99_ms:
        notes.append(f"client saturated: queue P99 {queue_p99_ms:.3g} ms > {spec.queue_p99_ms:g} ms; add generators")
    return notes


def _validity(
    *,
    requests: int,
    error_rate: float,
    queue_p99_ms: float | None,
    loop_lag_p99_ms: float | None,
    clock_uncertainty_ms: float | None,
    slo: SloSpec,
    spec: ValiditySpec,
) -> tuple[dict[str, bool], list[str]]:
    """The validity flags of a step and one human sentence per raised flag condition."""
    notes = _saturation_notes(queue_p99_ms, loop_lag_p99_ms, spec)
    uncertainty = clock_uncertainty_ms if clock_uncertainty_ms is not None else 0.0
    flags = {
        "client_saturated": bool(notes),
        "error_rate_exceeded": error_rate > slo.max_error_rate,
        "too_few_samples": requests < spec.min_measured_requests,
        "clock_uncertain": uncertainty > spec.max_clock_uncertainty_ms,
    }
    if flags["error_rate_exceeded"]:
        notes.append(f"error rate {error_rate:.2%} > bound {slo.max_error_rate:.2%}")
    if flags["too_few_samples"]:
        notes.append(
            f"too few samples: {requests} measured requests < {spec.min_measured_requests}; "
            "P99 is unstable, lengthen the step"
        )
    if flags["clock_uncertain"]:
        notes.append(
            f"clock uncertain: offset uncertainty {uncertainty:.3g} ms > "
            f"{spec.max_clock_uncertainty_ms:g} ms; cross-generator windows are imprecise"
        )
    return flags, notes


def _measured(table: pa.Table) -> pa.Table:
    if "phase" not in table.column_names:
        raise ValueError("record table lacks column 'phase'; build it with results.schema.RECORD_SCHEMA")
    measure = pc.fill_null(pc.equal(table.column("phase"), "measure"), False)
    if pc.all(measure).as_py() is not False:  # every row measured: no copy (None: empty table)
        return table
    return table.filter(measure)


def compute_step(
    table: pa.Table,
    *,
    window: Window,
    slo: SloSpec,
    validity: ValiditySpec,
    target_concurrency: int,
    step_index: int,
    loop_lag_p99_ms: float | None = None,
    clock_uncertainty_ms: float | None = None,
) -> StepMetrics:
    """The metrics of one step from all its records (any generators, both phases)."""
    measured = _measured(table)
    events = token_events(measured)
    lat = row_latencies(measured, events)
    meets = _meets(lat, slo)
    counts = _counts(measured, lat.ok, meets)
    dists = _distributions(measured, events, lat)
    flags, notes = _validity(
        requests=counts["requests"],
        error_rate=counts["error_rate"],
        queue_p99_ms=dists["queue_ms"].p99,
        loop_lag_p99_ms=loop_lag_p99_ms,
        clock_uncertainty_ms=clock_uncertainty_ms,
        slo=slo,
        spec=validity,
    )
    osl, osl_notes = osl_accounting(measured)
    return StepMetrics(
        step_index=step_index,
        concurrency=target_concurrency,
        ttft_p50_ms=dists["ttft_ms"].p50,
        ttft_p99_ms=dists["ttft_ms"].p99,
        itl_p50_ms=dists["itl_ms"].p50,
        window_start_ns=window.start_ns,
        window_end_ns=window.end_ns,
        window_s=window.length_s,
        slo_held=_slo_held(dists, counts["error_rate"], slo),
        loop_lag_p99_ms=loop_lag_p99_ms,
        clock_uncertainty_ms=clock_uncertainty_ms,
        validity=flags,
        valid=not any(flags.values()),
        notes=(*notes, *osl_notes),
        osl=osl,
        **_rates(measured, events, lat.ok, meets, window),
        **counts,
        **dists,
    )


def compute_step_from_parts(
    parts: list[pa.Table],
    *,
    window: Window,
    slo: SloSpec,
    validity: ValiditySpec,
    target_concurrency: int,
    step_index: int,
    loop_lag_p99_ms: float | None = None,
    clock_uncertainty_ms: float | None = None,
) -> StepMetrics:
    """``compute_step`` over record parts (e.g. one per generator or Parquet file): merged from
    raw samples, never by averaging per-part results, so it equals ``compute_step`` over the
    concatenation, in any order of parts or rows."""
    normalized = [part.select(RECORD_SCHEMA.names).cast(RECORD_SCHEMA) for part in parts]
    table = pa.concat_tables(normalized) if normalized else RECORD_SCHEMA.empty_table()
    return compute_step(
        table,
        window=window,
        slo=slo,
        validity=validity,
        target_concurrency=target_concurrency,
        step_index=step_index,
        loop_lag_p99_ms=loop_lag_p99_ms,
        clock_uncertainty_ms=clock_uncertainty_ms,
    )

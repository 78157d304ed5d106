"""Clock offsets (min-RTT sample), start skew, and the measurement window from generator reports."""

from __future__ import annotations

from typing import Any

from raybench.sweep.clock import estimate_offset, start_skew_ns
from raybench.sweep.step import StepOutcome, _window


def test_offset_keeps_the_smallest_round_trip() -> None:
    # driver wall clock = remote perf clock + 1_000; round trips of 40, 10 and 30 ns, asymmetric delays
    walls = iter([0, 40, 100, 110, 200, 230])
    remotes = iter([1_000_000 - 1_000 + 5, 1_000_000 - 1_000 + 105 - 1, 1_000_000 - 1_000 + 220])

    def wall() -> int:
        return next(walls) + 1_000_000

    off = estimate_offset("g0", "n", lambda: next(remotes), samples=3, wall_ns=wall)
    assert off.uncertainty_ns == 5 and off.samples == 3
    assert abs(off.offset_ns - 1_000) <= off.uncertainty_ns


def test_start_skew_is_the_spread_of_known_starts() -> None:
    assert start_skew_ns([10, 13, 11]) == 3
    assert start_skew_ns([10, None]) is None


def _report(reached: int | None, stopped: int | None, concurrency: int = 2, **extra: Any) -> dict[str, Any]:
    return {"reached_target_ns": reached, "stopped_issuing_ns": stopped, "concurrency": concurrency, **extra}


def test_window_opens_when_all_reached_target_and_closes_at_first_stop() -> None:
    reports = [_report(105, 500), _report(120, 480), _report(None, None, concurrency=0)]
    assert _window(reports, 100) == (120, 480)
    assert _window([_report(None, 480), _report(110, 490)], 100) == (100, 480)


def test_outcome_records_shares_and_skew_of_active_generators() -> None:
    reports = [
        _report(1, 2, generator_id="g0", node_id="n0", started_wall_ns=1_000, max_requests=5, records=5, issued=5),
        _report(1, 2, generator_id="g1", node_id="n1", started_wall_ns=1_700, max_requests=5, records=5, issued=5),
        _report(None, None, concurrency=0, generator_id="g2", active=False, started_wall_ns=9_999),
    ]
    outcome = StepOutcome(reports, 0, 1, 2)
    assert outcome.start_skew_ns == 700
    assert [s["generator_id"] for s in outcome.shares()] == ["g0", "g1", "g2"]
    assert outcome.shares()[0]["max_requests"] == 5

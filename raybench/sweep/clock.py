"""Clock offsets between the driver's wall clock and each generator's monotonic clock (MEASUREMENT.md)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["ClockOffset", "estimate_offset", "start_skew_ns"]


@dataclass(frozen=True)
class ClockOffset:
    """driver wall clock ≈ generator perf clock + offset_ns, known to ± uncertainty_ns (RTT/2)."""

    generator_id: str
    node_id: str
    offset_ns: int
    uncertainty_ns: int
    samples: int


def estimate_offset(
    generator_id: str,
    node_id: str,
    remote_clock_ns: Callable[[], int],
    samples: int = 16,
    wall_ns: Callable[[], int] = time.time_ns,
) -> ClockOffset:
    """NTP-style: `samples` round trips, keep the one with the smallest RTT; uncertainty is its RTT/2."""
    best: tuple[int, int] | None = None
    for _ in range(max(samples, 1)):
        before = wall_ns()
        remote = remote_clock_ns()
        after = wall_ns()
        rtt = after - before
        offset = (before + after) // 2 - remote
        if best is None or rtt < best[0]:
            best = (rtt, offset)
    assert best is not None
    return ClockOffset(generator_id, node_id, best[1], best[0] // 2, max(samples, 1))


def start_skew_ns(started_wall_ns: list[int | None]) -> int | None:
    """Spread of the generators' actual start instants on the driver clock (None without two)."""
    known = [s for s in started_wall_ns if s is not None]
    return max(known) - min(known) if len(known) >= 2 else None

"""Open-loop arrival schedules: absolute send instants from a seeded generator, sharded across generators.

Every generator builds the same global schedule from the same seed and keeps every `count`-th
arrival starting at `index`, so the fleet together sends exactly the global schedule and no
generator ever needs to talk to another.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

import numpy as np

__all__ = ["ARRIVALS", "Arrival", "ArrivalSchedule", "arrival_offsets_ns"]

Arrival = Literal["constant", "poisson", "gamma"]
ARRIVALS: tuple[str, ...] = ("constant", "poisson", "gamma")
_BLOCK = 4096  # arrivals drawn per block; fixed so every generator draws the same numbers


def arrival_offsets_ns(
    rate_per_s: float, arrival: str, count: int, seed: int = 0, burstiness: float = 1.0
) -> np.ndarray:
    """The first `count` arrival instants (ns after the step start) of the global schedule."""
    schedule = ArrivalSchedule(rate_per_s, arrival, seed=seed, burstiness=burstiness)
    out = np.empty(count, dtype=np.int64)
    for i, offset in zip(range(count), schedule.offsets_ns()):
        out[i] = offset
    return out


@dataclass(frozen=True)
class ArrivalSchedule:
    """A global open-loop schedule: `rate_per_s` on average, inter-arrival gaps shaped by `arrival`.

    `constant`: exactly 1/rate apart. `poisson`: exponential gaps. `gamma`: gamma gaps with shape
    `burstiness` and the same mean (burstiness < 1 is burstier than Poisson, > 1 smoother; 1 is Poisson).
    """

    rate_per_s: float
    arrival: str = "poisson"
    seed: int = 0
    burstiness: float = 1.0

    def __post_init__(self) -> None:
        if not self.rate_per_s > 0:
            raise ValueError(f"rate_per_s must be > 0, got {self.rate_per_s}")
        if self.arrival not in ARRIVALS:
            raise ValueError(f"unknown arrival {self.arrival!r}; use one of {', '.join(ARRIVALS)}")
        if not self.burstiness > 0:
            raise ValueError(f"burstiness must be > 0, got {self.burstiness}")

    def offsets_ns(self) -> Iterator[int]:
        """Every arrival instant, in ns after the step start, forever (stop by count or deadline)."""
        if self.arrival == "constant":
            k = 0
            period_s = 1.0 / self.rate_per_s
            while True:  # from the index, not a running sum: no accumulated rounding
                yield round(k * period_s * 1e9)
                k += 1
        rng = np.random.default_rng(self.seed)
        elapsed_s = 0.0
        while True:
            gaps = self._gaps(rng)
            instants = elapsed_s + np.cumsum(gaps)
            elapsed_s = float(instants[-1])
            yield from (np.rint(instants * 1e9).astype(np.int64)).tolist()

    def _gaps(self, rng: np.random.Generator) -> np.ndarray:
        mean_s = 1.0 / self.rate_per_s
        if self.arrival == "poisson":
            return rng.exponential(mean_s, _BLOCK)
        return rng.gamma(self.burstiness, mean_s / self.burstiness, _BLOCK)

    def shard(self, index: int, count: int) -> Iterator[tuple[int, int]]:
        """(global arrival number, offset ns) of the arrivals generator `index` of `count` sends."""
        if not 0 <= index < count:
            raise ValueError(f"shard index {index} outside 0..{count - 1}")
        for number, offset in enumerate(self.offsets_ns()):
            if number % count == index:
                yield number, offset

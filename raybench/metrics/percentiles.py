"""Exact distributions of latency samples: count, mean, P50/P90/P95/P99/P99.9, min, max.

Percentiles are exact (all samples, no sketches), as MEASUREMENT.md requires.

- Unweighted samples use numpy's default ``method="linear"`` percentile.
- Weighted samples (the token-weighted ITL) use the *inverted CDF* definition: the q-th
  percentile is the smallest sample value ``v`` whose cumulative weight (samples sorted by
  value) reaches ``q/100 * total weight``. For integer weights this is exactly
  ``np.percentile(np.repeat(values, weights), q, method="inverted_cdf")`` without building the
  expanded array, so a sample weighted by k tokens counts as k identical samples. Linear
  interpolation is deliberately not used there: it would invent gap values between events that
  no token ever saw.

Non-finite samples (NaN, +-inf) are dropped; an empty input gives ``count == 0`` and ``None``
for every statistic, so results are always JSON-ready and NaN-free. Means are summed over
sorted samples, so the result depends only on the multiset of samples, never on their order
(bit for bit; with non-integer weights the weighted percentiles may differ in the last bit of
the cumulative weight at a tie): computing over concatenated parts equals the whole.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["PERCENTILES", "Distribution", "distribution"]

PERCENTILES: tuple[float, ...] = (50, 90, 95, 99, 99.9)

# Same arithmetic as np.percentile (q / 100, then n * q), so weighted results match it exactly.
_QUANTILES = np.asarray(PERCENTILES, dtype=np.float64) / 100


@dataclass(frozen=True, slots=True)
class Distribution:
    """Summary of one sample set. ``count`` is the number of samples (for a weighted set: the
    samples with positive weight, e.g. inter-event gaps for ITL, not tokens)."""

    count: int
    mean: float | None
    p50: float | None
    p90: float | None
    p95: float | None
    p99: float | None
    p99_9: float | None
    min: float | None
    max: float | None

    def to_dict(self) -> dict[str, int | float | None]:
        """The JSON-ready form: keys count, mean, p50, p90, p95, p99, p99_9, min, max."""
        return asdict(self)


_EMPTY = Distribution(0, None, None, None, None, None, None, None, None)


def distribution(values: npt.ArrayLike, weights: npt.ArrayLike | None = None) -> Distribution:
    """The exact distribution of ``values``, optionally weighted (see the module docstring).

    ``weights`` must have the shape of ``values`` and be non-negative; zero-weight samples
    are ignored.
    """
    v = np.asarray(values, dtype=np.float64).ravel()
    if weights is None:
        finite = np.sort(v[np.isfinite(v)])
        if finite.size == 0:
            return _EMPTY
        pct = np.percentile(finite, PERCENTILES, method="linear")
        return _build(finite.size, float(np.sum(finite)) / finite.size, pct, finite[0], finite[-1])
    w = np.asarray(weights, dtype=np.float64).ravel()
    if w.shape != v.shape:
        raise ValueError(f"weights has {w.size} entries but values has {v.size}; give one weight per value")
    if np.any(~np.isfinite(w)) or np.any(w < 0):
        raise ValueError("weights must be finite and non-negative")
    return _weighted(v, w)


def _weighted(v: npt.NDArray[np.float64], w: npt.NDArray[np.float64]) -> Distribution:
    keep = np.isfinite(v) & (w > 0)
    if not keep.all():
        v, w = v[keep], w[keep]
    if v.size == 0:
        return _EMPTY
    # Equal values may land in any order; a percentile picks a value, so that order cannot
    # change it (with integer weights the cumulative sums are exact). The mean sums the
    # sorted products, which do not depend on the input order either.
    if w[0] == np.round(w[0]) and np.all(w == w[0]):
        # Uniform integer weights (one token per event, the common case): a plain sort gives
        # the same arrays as the general path below (same values, same cumulative sums), faster.
        v = np.sort(v)
        if w[0] == 1:
            # cum[k] = k + 1, so the first k with cum[k] >= target is ceil(target) - 1.
            return _build(v.size, float(np.sum(v)) / v.size, v[_unit_index(v.size)], v[0], v[-1])
        mean_num = float(np.sum(v * w[0]))
        cum = w[0] * np.arange(1, v.size + 1, dtype=np.float64)
    else:
        mean_num = float(np.sum(np.sort(v * w)))
        order = np.argsort(v)
        v, w = v[order], w[order]
        cum = np.cumsum(w)
    total = cum[-1]
    idx = np.searchsorted(cum, total * _QUANTILES, side="left")
    pct = v[np.minimum(idx, v.size - 1)]
    return _build(v.size, mean_num / total, pct, v[0], v[-1])


def _unit_index(n: int) -> npt.NDArray[np.intp]:
    """Indices the general path's ``searchsorted(cumsum(ones(n)), n * q)`` gives, computed directly."""
    return np.clip(np.ceil(n * _QUANTILES).astype(np.intp) - 1, 0, n - 1)


def _build(count: int, mean: float, pct: npt.NDArray[np.float64], lo: np.float64, hi: np.float64) -> Distribution:
    p50, p90, p95, p99, p99_9 = (float(x) for x in pct)
    return Distribution(count, mean, p50, p90, p95, p99, p99_9, float(lo), float(hi))

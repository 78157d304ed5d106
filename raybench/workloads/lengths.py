"""Sampling token lengths from a LengthSpec (fixed, uniform, normal, lognormal, empirical)."""

from __future__ import annotations

import math

import numpy as np

from raybench.config.workload import LengthSpec

__all__ = ["sample_length"]

_INT32_MAX = int(np.iinfo(np.int32).max)


def sample_length(spec: LengthSpec, rng: np.random.Generator) -> int:
    """One length, clipped to [spec.min, spec.max]."""
    if spec.distribution == "fixed":
        value = float(spec.mean or spec.min)
    elif spec.distribution == "uniform":
        value = float(rng.integers(spec.min, (spec.max or spec.min) + 1))
    elif spec.distribution == "normal":
        value = float(rng.normal(float(spec.mean or spec.min), spec.std))
    elif spec.distribution == "lognormal":
        mean = float(spec.mean or 1)
        sigma2 = math.log1p((spec.std / mean) ** 2)  # so the samples' mean and std are the spec's
        value = float(rng.lognormal(math.log(mean) - sigma2 / 2, math.sqrt(sigma2)))
    else:
        values = np.asarray(spec.values or [spec.min], dtype=np.int64)
        weights = np.asarray(spec.weights, dtype=np.float64) if spec.weights else np.ones(len(values))
        value = float(rng.choice(values, p=weights / weights.sum()))
    upper = spec.max if spec.max is not None else _INT32_MAX
    return min(max(round(value), spec.min), upper)  # plain Python: np.clip costs microseconds per scalar

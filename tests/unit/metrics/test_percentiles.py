"""Exact distributions: unweighted numpy 'linear', weighted 'inverted_cdf' over the expansion."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from raybench.metrics import PERCENTILES, Distribution, distribution

KEYS = ["count", "mean", "p50", "p90", "p95", "p99", "p99_9", "min", "max"]


def test_empty_gives_count_zero_and_none() -> None:
    d = distribution(np.array([]))
    assert d.count == 0
    assert d.to_dict() == dict.fromkeys(KEYS, None) | {"count": 0}
    assert distribution(np.array([]), np.array([])).count == 0


def test_unweighted_matches_numpy_linear() -> None:
    values = np.arange(1, 101, dtype=float)
    d = distribution(values)
    expected = np.percentile(values, PERCENTILES, method="linear")
    assert [d.p50, d.p90, d.p95, d.p99, d.p99_9] == list(expected)
    assert (d.count, d.mean, d.min, d.max) == (100, 50.5, 1.0, 100.0)
    assert d.p50 == 50.5


def test_non_finite_samples_are_dropped() -> None:
    d = distribution(np.array([1.0, np.nan, 3.0, np.inf]))
    assert (d.count, d.mean, d.min, d.max) == (2, 2.0, 1.0, 3.0)
    assert all(v is not None and math.isfinite(v) for v in d.to_dict().values())


def test_weighted_known_answer() -> None:
    # 10 ms with weight 1, 15 ms with weight 2: expanded [10, 15, 15].
    d = distribution(np.array([10.0, 15.0]), np.array([1, 2]))
    assert d.p50 == 15.0
    assert d.min == 10.0 and d.max == 15.0
    assert d.mean == pytest.approx(40 / 3)
    assert d.count == 2


def test_zero_weights_are_ignored_and_bad_weights_rejected() -> None:
    d = distribution(np.array([1.0, 100.0]), np.array([3, 0]))
    assert d.max == 1.0 and d.count == 1
    with pytest.raises(ValueError, match="one weight per value"):
        distribution(np.array([1.0, 2.0]), np.array([1]))
    with pytest.raises(ValueError, match="non-negative"):
        distribution(np.array([1.0]), np.array([-1]))


def test_to_dict_keys_and_frozen() -> None:
    d = distribution(np.array([1.0, 2.0]))
    assert list(d.to_dict()) == KEYS
    assert isinstance(d, Distribution)
    with pytest.raises(AttributeError):
        d.count = 3  # type: ignore[misc]


samples = st.lists(st.tuples(st.floats(-1e6, 1e6, allow_nan=False), st.integers(1, 50)), min_size=1, max_size=60)


@given(samples)
def test_weighted_equals_inverted_cdf_of_expansion(pairs: list[tuple[float, int]]) -> None:
    values = np.array([v for v, _ in pairs])
    weights = np.array([w for _, w in pairs])
    expanded = np.repeat(values, weights)
    d = distribution(values, weights)
    expected = np.percentile(expanded, PERCENTILES, method="inverted_cdf")
    assert [d.p50, d.p90, d.p95, d.p99, d.p99_9] == list(expected)
    assert (d.min, d.max) == (expanded.min(), expanded.max())
    assert d.mean == pytest.approx(expanded.mean(), rel=1e-9, abs=1e-6)


@given(samples, st.randoms())
def test_result_is_independent_of_sample_order(pairs: list[tuple[float, int]], rnd: object) -> None:
    shuffled = list(pairs)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    for weighted in (False, True):
        a = [np.array([p[0] for p in ps]) for ps in (pairs, shuffled)]
        w = [np.array([p[1] for p in ps]) if weighted else None for ps in (pairs, shuffled)]
        assert distribution(a[0], w[0]) == distribution(a[1], w[1])

"""Arrival schedules: absolute instants from a seed, the right mean rate and shape, exact sharding."""

from __future__ import annotations

import numpy as np
import pytest

from raybench.loadgen.schedule import ArrivalSchedule, arrival_offsets_ns


def test_constant_is_exact_and_does_not_drift() -> None:
    offsets = arrival_offsets_ns(3.0, "constant", 300_001)
    assert offsets[:4].tolist() == [0, 333_333_333, 666_666_667, 1_000_000_000]
    assert offsets[300_000] == 100_000 * 1_000_000_000  # no accumulated rounding after 300k arrivals


@pytest.mark.parametrize("arrival", ["poisson", "gamma"])
def test_same_seed_same_schedule_other_seed_other(arrival: str) -> None:
    a = arrival_offsets_ns(50.0, arrival, 5000, seed=0, burstiness=0.5)
    b = arrival_offsets_ns(50.0, arrival, 5000, seed=0, burstiness=0.5)
    c = arrival_offsets_ns(50.0, arrival, 5000, seed=1, burstiness=0.5)
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    assert np.all(np.diff(a) >= 0)


@pytest.mark.parametrize(
    ("arrival", "burstiness", "cv"), [("poisson", 1.0, 1.0), ("gamma", 0.25, 2.0), ("gamma", 4.0, 0.5)]
)
def test_mean_rate_and_burstiness(arrival: str, burstiness: float, cv: float) -> None:
    offsets = arrival_offsets_ns(200.0, arrival, 40_000, seed=7, burstiness=burstiness)
    gaps = np.diff(np.concatenate([[0], offsets])) / 1e9
    assert gaps.mean() == pytest.approx(1 / 200.0, rel=0.03)
    assert gaps.std() / gaps.mean() == pytest.approx(cv, rel=0.06)  # gamma CV = 1 / sqrt(shape)


def test_shards_partition_the_global_schedule() -> None:
    schedule = ArrivalSchedule(100.0, "poisson", seed=3)
    whole = arrival_offsets_ns(100.0, "poisson", 10_000, seed=3).tolist()
    merged: dict[int, int] = {}
    for g in range(3):
        for (number, offset), _ in zip(schedule.shard(g, 3), range(3334)):
            assert number % 3 == g
            merged[number] = offset
    assert [merged[k] for k in range(10_000)] == whole


def test_bad_schedules_say_what_to_fix() -> None:
    with pytest.raises(ValueError, match="constant, poisson, gamma"):
        ArrivalSchedule(1.0, "uniform")
    with pytest.raises(ValueError, match="rate_per_s"):
        ArrivalSchedule(0.0)

"""Pareto frontier and GPU counts, by hand."""

from __future__ import annotations

import numpy as np
import pytest

from raybench.report.pareto import gpu_count, pareto_mask


def test_frontier_by_hand() -> None:
    latency = [100, 200, 300, 200, 150, np.nan, 50]
    throughput = [10, 20, 15, 20, 5, 100, 1]
    # (300,15) is dominated by (200,20); (150,5) by (100,10); NaN never counts; duplicates both stay.
    assert pareto_mask(latency, throughput).tolist() == [True, True, False, True, False, False, True]


def test_frontier_of_nothing_and_mismatch() -> None:
    assert pareto_mask([], []).tolist() == []
    with pytest.raises(ValueError, match="one of each per point"):
        pareto_mask([1, 2], [1])


@pytest.mark.parametrize(
    ("summary", "expected"),
    [
        ({"hardware": "4xH100_SXM_80GB_NVLink"}, (4, True)),
        ({"hardware": "simulated-1xGPU"}, (1, True)),
        ({"hardware": "8\u00d7B200"}, (8, True)),
        ({"hardware": "a box", "provenance": {"engine_args": {"tensor_parallel_size": 2, "replicas": 3}}}, (6, True)),
        ({"hardware": "4xH100", "provenance": {"engine_args": {"gpus": 2}}}, (2, True)),
        ({"hardware": "cpu"}, (1, False)),
    ],
)
def test_gpu_count(summary, expected) -> None:
    assert gpu_count(summary) == expected

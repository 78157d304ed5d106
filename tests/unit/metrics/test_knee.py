"""Knee selection, defensible capacity, and the extend-past-knee rule."""

from __future__ import annotations

from dataclasses import replace

import pytest

from raybench.metrics import StepMetrics, compute_step, defensible_capacity_tok_s, find_knee, should_extend


@pytest.fixture(scope="module")
def base(steady, table, slo, validity, window) -> StepMetrics:
    t = table([steady(0, 100, 10, 5)])
    return compute_step(t, window=window, slo=slo, validity=validity, target_concurrency=1, step_index=0)


def sweep(base: StepMetrics, held: list[bool]) -> list[StepMetrics]:
    return [
        replace(base, step_index=i, concurrency=8 * 2**i, slo_held=h, goodput_tok_s=100.0 * (i + 1))
        for i, h in enumerate(held)
    ]


def test_knee_is_the_highest_load_step_that_holds(base) -> None:
    steps = sweep(base, [True, True, True, False, False])
    knee = find_knee(steps)
    assert knee is steps[2] and knee.concurrency == 32
    assert defensible_capacity_tok_s(knee) == 300.0


def test_no_step_holds_means_no_knee(base) -> None:
    assert find_knee(sweep(base, [False, False, False])) is None
    assert find_knee([]) is None
    assert defensible_capacity_tok_s(None) is None


def test_non_monotonic_sweep_picks_the_highest_passing_step(base) -> None:
    steps = sweep(base, [True, False, True, False])
    assert find_knee(steps) is steps[2]
    # Order run does not matter, only load does.
    assert find_knee(list(reversed(steps))) is steps[2]


def test_repeated_load_prefers_the_later_step(base) -> None:
    a = replace(base, step_index=1, concurrency=16, slo_held=True)
    b = replace(base, step_index=4, concurrency=16, slo_held=True)
    assert find_knee([b, a]) is b


@pytest.mark.parametrize(("pct", "extend"), [(None, False), (0.0, False), (49.99, False), (50.0, True), (99.0, True)])
def test_should_extend_while_goodput_pct_at_least_50(base, pct, extend) -> None:
    assert should_extend(replace(base, goodput_pct=pct)) is extend

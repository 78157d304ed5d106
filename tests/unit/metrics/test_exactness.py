"""Fast paths give exactly what the general definitions give; goodput % never exceeds 100."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raybench.metrics import Window, compute_step, distribution
from raybench.metrics.latency import token_events


@settings(max_examples=80, deadline=None)
@given(st.lists(st.floats(0, 1e4, allow_nan=False), min_size=1, max_size=60), st.sampled_from([1, 2, 3]))
def test_uniform_weights_match_the_repeated_sample_definition(values, weight) -> None:
    v = np.asarray(values)
    fast = distribution(v, np.full(v.size, weight))
    repeated = np.repeat(v, weight)
    expected = np.percentile(repeated, [50, 90, 95, 99, 99.9], method="inverted_cdf")
    assert [fast.p50, fast.p90, fast.p95, fast.p99, fast.p99_9] == expected.tolist()
    assert fast.count == v.size and fast.min == v.min() and fast.max == v.max()
    # The general (non-uniform) path agrees wherever weights happen to be equal.
    general = distribution(np.append(v, 1e9), np.append(np.full(v.size, weight), 0.5))
    assert general.p50 == np.percentile([*np.repeat(v, weight * 2).tolist(), 1e9], 50, method="inverted_cdf")


def test_goodput_pct_is_exactly_100_when_every_request_meets_the_slo(build, slo, validity) -> None:
    # Three tokens over a window of an awkward length: rates are inexact, their ratio must not be.
    reqs = [{"sent_ns": 0, "chunk_ns": [10_000_000 + i * 7_000_000 for i in range(3)]} for _ in range(7)]
    m = compute_step(
        build(reqs), window=Window(0, 3_000_000_007), slo=slo, validity=validity, target_concurrency=7, step_index=0
    )
    assert m.goodput_tok_s == m.throughput_tok_s
    assert m.goodput_pct == 100.0


def test_per_row_tokens_by_hand(build) -> None:
    rows = [{"chunk_ns": [1, 2], "chunk_tokens": [2, 3]}, {"chunk_ns": []}, {"chunk_ns": [5], "chunk_tokens": [4]}]
    table = build(rows)
    assert token_events(table).per_row_tokens().tolist() == [5, 0, 4]


@pytest.mark.parametrize("phase_mix", [["measure"] * 3, ["warmup", "measure", "measure"]])
def test_warmup_rows_never_count(build, slo, validity, window, phase_mix) -> None:
    reqs = [{"sent_ns": 0, "chunk_ns": [10_000_000, 20_000_000], "phase": p} for p in phase_mix]
    m = compute_step(build(reqs), window=window, slo=slo, validity=validity, target_concurrency=1, step_index=0)
    assert m.requests == phase_mix.count("measure")

"""Known answers for TTFT, E2E, TPOT, queue and ITL (MEASUREMENT.md definitions)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from raybench.metrics import (
    distribution,
    e2e_ms,
    itl_samples,
    output_token_counts,
    queue_ms,
    tpot_ms,
    ttft_from_schedule_ms,
    ttft_ms,
)

MS = 1_000_000


def test_ttft_e2e_queue_and_schedule(rec, table) -> None:
    t = table([rec(scheduled_ns=95 * MS, sent_ns=100 * MS, chunk_ns=[250 * MS, 260 * MS], done_ns=400 * MS)])
    assert ttft_ms(t).tolist() == [150.0]
    assert e2e_ms(t).tolist() == [300.0]
    assert queue_ms(t).tolist() == [5.0]
    assert ttft_from_schedule_ms(t).tolist() == [155.0]


def test_intervals_survive_large_instants(rec, table) -> None:
    base = 1_700_000_000_000_000_000  # wall-clock-sized ns: beyond float64's exact integers
    t = table([rec(sent_ns=base, chunk_ns=[base + 1])])
    assert ttft_ms(t).tolist() == [1e-6]


def test_tpot_uses_output_tokens_and_needs_two(rec, table) -> None:
    t = table(
        [
            # 5 tokens in 3 events from 100 ms to 500 ms: (500 - 100) / (5 - 1) = 100 ms.
            rec(chunk_ns=[100 * MS, 300 * MS, 500 * MS], chunk_tokens=[1, 2, 2]),
            # Server usage says 9 tokens: TPOT follows the server count, (500 - 100) / 8.
            rec(chunk_ns=[100 * MS, 500 * MS], output_tokens=9),
            rec(chunk_ns=[100 * MS]),  # a single token: no TPOT
        ]
    )
    assert tpot_ms(t).tolist() == [100.0, 50.0]


def test_output_token_count_falls_back_to_chunks(rec, table) -> None:
    t = table([rec(chunk_ns=[1, 2], chunk_tokens=[3, 4], output_tokens=None), rec(chunk_ns=[1], output_tokens=7)])
    assert output_token_counts(t).tolist() == [7, 7]


def test_failed_requests_are_not_latency_samples(rec, table) -> None:
    t = table(
        [
            rec(sent_ns=0, chunk_ns=[10 * MS, 20 * MS]),
            rec(sent_ns=0, chunk_ns=[900 * MS, 990 * MS], status="timeout"),
        ]
    )
    assert ttft_ms(t).tolist() == [10.0]
    assert e2e_ms(t).tolist() == [21.0]
    gaps, weights = itl_samples(t)
    assert gaps.tolist() == [10.0] and weights.tolist() == [1]


def test_itl_single_token_events_are_plain_gaps(rec, table) -> None:
    t = table([rec(chunk_ns=[0, 10 * MS, 30 * MS, 60 * MS])])
    gaps, weights = itl_samples(t)
    assert gaps.tolist() == [10.0, 20.0, 30.0]
    assert weights.tolist() == [1, 1, 1]


def test_itl_multi_token_chunks_are_divided_and_weighted(rec, table) -> None:
    # Gaps 10 ms (1 token) and 30 ms (2 tokens): samples 10 ms x1 and 15 ms x2.
    t = table([rec(chunk_ns=[0, 10 * MS, 40 * MS], chunk_tokens=[1, 1, 2])])
    gaps, weights = itl_samples(t)
    assert gaps.tolist() == [10.0, 15.0]
    assert weights.tolist() == [1, 2]
    d = distribution(gaps, weights)
    assert d.p50 == 15.0  # token-weighted: two of three tokens waited 15 ms
    assert d.mean == pytest.approx(40 / 3)


def test_itl_never_spans_two_requests(rec, table) -> None:
    t = table(
        [
            rec(chunk_ns=[0, 5 * MS]),
            rec(chunk_ns=[1000 * MS]),
            rec(chunk_ns=[]),
            rec(chunk_ns=[7 * MS, 9 * MS]),
        ]
    )
    gaps, _ = itl_samples(t)
    assert gaps.tolist() == [5.0, 2.0]


def test_chunked_and_sliced_tables(rec, table) -> None:
    a = table([rec(chunk_ns=[0, 5 * MS])])
    b = table([rec(chunk_ns=[0, 2 * MS, 3 * MS]), rec(chunk_ns=[0, 9 * MS])])
    both = pa.concat_tables([a, b])
    assert both.column("chunk_ns").num_chunks == 2
    assert itl_samples(both)[0].tolist() == [5.0, 2.0, 1.0, 9.0]
    assert itl_samples(both.slice(1, 1))[0].tolist() == [2.0, 1.0]
    assert tpot_ms(both.slice(2)).tolist() == [9.0]


def test_mismatched_chunk_lists_are_rejected(rec, table) -> None:
    t = table([rec(chunk_ns=[0, 1], chunk_tokens=[1], request_id="bad-one")])
    with pytest.raises(ValueError, match="bad-one"):
        itl_samples(t)


def test_empty_table(table) -> None:
    t = table([])
    assert ttft_ms(t).size == 0
    gaps, weights = itl_samples(t)
    assert gaps.size == 0 and weights.size == 0
    assert isinstance(gaps, np.ndarray)

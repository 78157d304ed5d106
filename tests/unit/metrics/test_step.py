"""compute_step: window, throughput, goodput, counts, SLO, validity, JSON form, merging parts."""

from __future__ import annotations

import json
import random
from dataclasses import replace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from raybench.config.slo import SloSpec, ValiditySpec
from raybench.metrics import StepMetrics, Window, compute_step, compute_step_from_parts, meets_slo

MS = 1_000_000
S = 1_000_000_000

STEP_KEYS = [
    "step_index",
    "concurrency",
    "ttft_p50_ms",
    "ttft_p99_ms",
    "itl_p50_ms",
    "throughput_tok_s",
    "goodput_tok_s",
    "goodput_pct",
    "request_throughput_req_s",
    "window_start_ns",
    "window_end_ns",
    "window_s",
    "requests",
    "ok",
    "failed",
    "error_rate",
    "errors_by_status",
    "requests_completed_in_window",
    "requests_meeting_slo",
    "token_count_sources",
    "slo_held",
    "ttft_ms",
    "itl_ms",
    "tpot_ms",
    "e2e_ms",
    "queue_ms",
    "ttft_from_schedule_ms",
    "loop_lag_p99_ms",
    "clock_uncertainty_ms",
    "validity",
    "valid",
    "notes",
    "osl",
]
FLAGS = ["client_saturated", "error_rate_exceeded", "too_few_samples", "clock_uncertain"]


@pytest.fixture
def step_kwargs(slo, validity, window) -> dict:
    return {"window": window, "slo": slo, "validity": validity, "target_concurrency": 8, "step_index": 0}


@pytest.fixture
def step(step_kwargs):
    def run(t: pa.Table, **kw) -> StepMetrics:
        return compute_step(t, **(step_kwargs | kw))

    return run


def test_only_tokens_inside_the_window_count(rec, table, step) -> None:
    t = table([rec(sent_ns=0, chunk_ns=[-10 * MS, 100 * MS, 500 * MS, 1000 * MS, 1500 * MS])])
    m = step(t, window=Window(0, 1 * S))
    assert m.throughput_tok_s == 2.0  # 100 ms and 500 ms; the window is [0, 1 s)
    assert m.window_s == 1.0


def test_window_uses_the_driver_clock(rec, table, step) -> None:
    # Generator clock reads 0..; its offset puts the events at 5.0 s and 5.2 s on the driver clock.
    t = table([rec(sent_ns=0, chunk_ns=[0, 200 * MS], wall_offset_ns=5 * S, done_ns=300 * MS)])
    assert step(t, window=Window(0, 5 * S)).throughput_tok_s == 0.0
    m = step(t, window=Window(5 * S, 6 * S))
    assert m.throughput_tok_s == 2.0
    assert m.request_throughput_req_s == 1.0 and m.requests_completed_in_window == 1


def test_chunk_tokens_are_scaled_to_server_usage(rec, table, step) -> None:
    t = table([rec(chunk_ns=[100 * MS, 2 * S], chunk_tokens=[1, 1], output_tokens=6)])
    assert step(t, window=Window(0, 1 * S)).throughput_tok_s == 3.0


def test_goodput_below_throughput_when_requests_miss_the_slo(rec, steady, table, step) -> None:
    t = table(
        [
            steady(0, ttft_ms=100, itl_ms=10, n_tokens=10),
            steady(0, ttft_ms=600, itl_ms=10, n_tokens=10),  # TTFT above the 500 ms bound
            steady(0, ttft_ms=100, itl_ms=50, n_tokens=10),  # TPOT above the 30 ms ITL bound
        ]
    )
    assert meets_slo(t, SloSpec(ttft_p99_ms=500, itl_p50_ms=30)).tolist() == [True, False, False]
    m = step(t)
    assert m.throughput_tok_s == pytest.approx(3.0)  # 30 tokens over 10 s
    assert m.goodput_tok_s == pytest.approx(1.0)
    assert m.goodput_pct == pytest.approx(100 / 3)
    assert m.requests_meeting_slo == 1


def test_optional_slo_bounds(rec, steady, table) -> None:
    t = table([steady(0, ttft_ms=100, itl_ms=20, n_tokens=3, done_ns=900 * MS)])
    assert meets_slo(t, SloSpec(ttft_p99_ms=500, itl_p50_ms=30)).tolist() == [True]
    assert meets_slo(t, SloSpec(ttft_p99_ms=500, itl_p50_ms=30, e2e_p99_ms=800)).tolist() == [False]
    assert meets_slo(t, SloSpec(ttft_p99_ms=500, itl_p50_ms=30, tpot_p99_ms=15)).tolist() == [False]
    no_token = table([rec(chunk_ns=[])])
    assert meets_slo(no_token, SloSpec(ttft_p99_ms=500, itl_p50_ms=30)).tolist() == [False]


def test_failed_requests_stay_in_the_denominators(steady, table, step) -> None:
    rows = [steady(i * MS, ttft_ms=100, itl_ms=10, n_tokens=5) for i in range(98)]
    rows.append(steady(0, ttft_ms=100, itl_ms=10, n_tokens=5, status="timeout"))
    rows.append(steady(0, ttft_ms=100, itl_ms=10, n_tokens=5, status="http_error"))
    m = step(table(rows))
    assert (m.requests, m.ok, m.failed) == (100, 98, 2)
    assert m.error_rate == 0.02
    assert m.errors_by_status == {"http_error": 1, "timeout": 1}
    # The failed requests' streamed tokens were emitted (throughput) but are not good (goodput).
    assert m.throughput_tok_s == pytest.approx(50.0)
    assert m.goodput_tok_s == pytest.approx(49.0)
    assert m.requests_completed_in_window == 98
    assert not m.slo_held and m.validity["error_rate_exceeded"]
    assert m.ttft_ms.count == 98  # latency samples: ok requests only


def test_warmup_records_are_ignored(steady, table, step) -> None:
    t = table([steady(0, 100, 10, 5), steady(0, 9000, 10, 5, phase="warmup", status="timeout")])
    m = step(t)
    assert (m.requests, m.failed, m.ttft_p99_ms) == (1, 0, 100.0)
    assert m.throughput_tok_s == 0.5


def test_article_keys_and_slo_held(steady, table, step) -> None:
    t = table([steady(i * MS, ttft_ms=100 + i, itl_ms=10, n_tokens=4) for i in range(100)])
    m = step(t, target_concurrency=32, step_index=3)
    assert (m.concurrency, m.step_index) == (32, 3)
    assert m.ttft_p50_ms == pytest.approx(149.5)
    assert m.ttft_p99_ms == pytest.approx(198.01)
    assert m.itl_p50_ms == 10.0
    assert m.tpot_ms.p50 == 10.0
    assert m.slo_held
    assert not step(t, slo=SloSpec(ttft_p99_ms=198, itl_p50_ms=30)).slo_held
    assert not step(t, slo=SloSpec(ttft_p99_ms=500, itl_p50_ms=9.9)).slo_held
    assert not step(t, slo=SloSpec(ttft_p99_ms=500, itl_p50_ms=30, e2e_p99_ms=200)).slo_held
    assert not step(t, slo=SloSpec(ttft_p99_ms=500, itl_p50_ms=30, tpot_p99_ms=9)).slo_held


def test_no_ok_request_does_not_hold(steady, table, step) -> None:
    m = step(table([steady(0, 100, 10, 5, status="disconnect")]))
    assert not m.slo_held and m.ttft_p99_ms is None and m.error_rate == 1.0
    empty = step(table([]))
    assert (empty.requests, empty.error_rate, empty.slo_held, empty.goodput_pct) == (0, 0.0, False, None)


def test_validity_flags_and_notes(steady, table, step) -> None:
    t = table([steady(i * MS, 100, 10, 3) for i in range(10)])
    m = step(t, validity=ValiditySpec(), loop_lag_p99_ms=3.1, clock_uncertainty_ms=1.5)
    assert m.validity == {
        "client_saturated": True,
        "error_rate_exceeded": False,
        "too_few_samples": True,
        "clock_uncertain": True,
    }
    assert not m.valid
    assert "client saturated: loop lag P99 3.1 ms > 2 ms; add generators" in m.notes
    assert any(n.startswith("too few samples: 10 measured requests < 100") for n in m.notes)
    assert any(n.startswith("clock uncertain: offset uncertainty 1.5 ms > 1 ms") for n in m.notes)
    ok = step(t, loop_lag_p99_ms=0.4, clock_uncertainty_ms=0.2)
    assert ok.valid and ok.notes == () and not any(ok.validity.values())


def test_queue_delay_flags_client_saturation(steady, table, step) -> None:
    t = table([steady(i * MS, 100, 10, 3, scheduled_ns=i * MS - 8 * MS) for i in range(10)])
    m = step(t)
    assert m.validity["client_saturated"] and m.queue_ms.p99 == 8.0
    assert "client saturated: queue P99 8 ms > 5 ms; add generators" in m.notes


def test_to_dict_is_json_ready(steady, table, step) -> None:
    m = step(table([steady(0, 100, 10, 5), steady(0, 100, 10, 5, status="timeout")]))
    d = m.to_dict()
    assert list(d) == STEP_KEYS
    assert list(d["validity"]) == FLAGS
    assert d["itl_ms"]["p50"] == 10.0 and isinstance(d["notes"], list)
    assert json.loads(json.dumps(d, allow_nan=False)) == d


def _generator_part(gen: int, offset_ns: int, n: int, seed: int) -> list[dict]:
    rnd = random.Random(seed)
    rows = []
    for i in range(n):
        sent = rnd.randrange(0, 9 * S)
        first = sent + rnd.randrange(1, 800) * MS
        chunks = [first + k * rnd.randrange(1, 40) * MS for k in range(rnd.randrange(1, 8))]
        status = "ok" if rnd.random() < 0.9 else "timeout"
        rows.append(
            {
                "sent_ns": sent - offset_ns,
                "chunk_ns": [c - offset_ns for c in chunks],
                "chunk_tokens": [rnd.randrange(1, 4) for _ in chunks],
                "status": status,
                "wall_offset_ns": offset_ns,
                "generator_id": f"g{gen}",
                "request_id": f"g{gen}-{i}",
            }
        )
    return rows


def test_merging_parts_equals_the_whole(build, table, step, step_kwargs) -> None:
    a = build(_generator_part(0, 3 * S, 60, seed=1))
    b = build(_generator_part(1, -2 * S, 70, seed=2))
    whole = step(pa.concat_tables([a, b]))
    assert compute_step_from_parts([a, b], **step_kwargs) == whole
    assert compute_step_from_parts([b, a], **step_kwargs) == whole
    rows = a.to_pylist() + b.to_pylist()
    random.Random(3).shuffle(rows)
    assert step(table(rows)) == whole
    assert whole.itl_ms.count > 0 and whole.failed > 0


def test_parts_read_back_from_parquet(tmp_path, build, step_kwargs) -> None:
    a = build(_generator_part(0, 0, 20, seed=4))
    pq.write_table(a, tmp_path / "part-0.parquet")
    back = pq.read_table(tmp_path / "part-0.parquet").replace_schema_metadata(None)
    assert compute_step_from_parts([back], **step_kwargs) == compute_step(a, **step_kwargs)
    assert compute_step_from_parts([], **step_kwargs).requests == 0


def test_window_must_have_length() -> None:
    with pytest.raises(ValueError, match="after start_ns"):
        Window(5, 5)
    assert replace(Window(0, S), end_ns=2 * S).length_s == 2.0

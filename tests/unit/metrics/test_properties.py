"""Property tests: goodput <= throughput, failures never help, the knee always holds, merging."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from raybench.config.slo import SloSpec, ValiditySpec
from raybench.metrics import Window, compute_step, compute_step_from_parts, find_knee
from raybench.results.schema import STATUSES

MS = 1_000_000
S = 1_000_000_000
WINDOW = Window(1 * S, 9 * S)
VALIDITY = ValiditySpec(min_measured_requests=1)


@st.composite
def request(draw: st.DrawFn) -> dict[str, Any]:
    """Keyword arguments of one record: random timings, chunking, status and clock offset."""
    sent = draw(st.integers(0, 10_000)) * MS
    first = sent + draw(st.integers(1, 1_200)) * MS
    gaps = draw(st.lists(st.integers(0, 80), max_size=6))
    chunks = [first]
    for gap in gaps:
        chunks.append(chunks[-1] + gap * MS)
    if not gaps and draw(st.booleans()):
        chunks = []  # an ok request may still stream no token at all
    tokens = draw(st.lists(st.integers(1, 4), min_size=len(chunks), max_size=len(chunks)))
    kw: dict[str, Any] = {
        "sent_ns": sent,
        "chunk_ns": chunks,
        "chunk_tokens": tokens,
        "status": draw(st.sampled_from(["ok", "ok", "ok", *STATUSES])),
        "wall_offset_ns": draw(st.sampled_from([0, S, -S // 2])),
    }
    if draw(st.booleans()):
        kw["output_tokens"] = draw(st.integers(0, 30))
    return kw


slos = st.builds(
    SloSpec,
    ttft_p99_ms=st.sampled_from([100.0, 500.0, 1000.0]),
    itl_p50_ms=st.sampled_from([5.0, 30.0, 60.0]),
    e2e_p99_ms=st.none() | st.just(1200.0),
    tpot_p99_ms=st.none() | st.just(40.0),
    max_error_rate=st.sampled_from([0.0, 0.2, 0.5]),
)


def _step(t: Any, slo: SloSpec, concurrency: int = 8) -> Any:
    return compute_step(t, window=WINDOW, slo=slo, validity=VALIDITY, target_concurrency=concurrency, step_index=0)


@settings(max_examples=60, deadline=None)
@given(st.lists(request(), max_size=25), slos)
def test_goodput_never_exceeds_throughput(build, reqs, slo) -> None:
    m = _step(build(reqs), slo)
    assert 0.0 <= m.goodput_tok_s <= m.throughput_tok_s
    assert m.goodput_pct is None or 0.0 <= m.goodput_pct <= 100.0
    assert m.requests_meeting_slo <= m.ok


@settings(max_examples=60, deadline=None)
@given(st.lists(request(), max_size=20), request(), st.sampled_from(STATUSES[1:]), slos)
def test_adding_a_failed_request_never_raises_goodput(build, reqs, extra, status, slo) -> None:
    before = _step(build(reqs), slo)
    after = _step(build([*reqs, extra | {"status": status}]), slo)
    assert after.goodput_tok_s <= before.goodput_tok_s
    assert after.error_rate >= before.error_rate
    assert after.requests == before.requests + 1


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 256), st.lists(request(), max_size=12)), max_size=6), slos)
def test_the_knee_never_holds_a_step_that_violates_the_slo(build, sweep, slo) -> None:
    steps = [_step(build(reqs), slo, concurrency) for concurrency, reqs in sweep]
    knee = find_knee(steps)
    if knee is None:
        assert not any(s.slo_held for s in steps)
        return
    assert knee.slo_held and knee.ok > 0
    assert knee.ttft_p99_ms is not None and knee.ttft_p99_ms <= slo.ttft_p99_ms
    assert knee.itl_p50_ms is None or knee.itl_p50_ms <= slo.itl_p50_ms
    assert slo.e2e_p99_ms is None or knee.e2e_ms.p99 is None or knee.e2e_ms.p99 <= slo.e2e_p99_ms
    assert slo.tpot_p99_ms is None or knee.tpot_ms.p99 is None or knee.tpot_ms.p99 <= slo.tpot_p99_ms
    assert knee.error_rate <= slo.max_error_rate
    assert not any(s.slo_held and s.concurrency > knee.concurrency for s in steps)


@settings(max_examples=40, deadline=None)
@given(st.lists(request(), max_size=25), st.integers(1, 4), st.randoms(), slos)
def test_merging_any_partition_equals_the_whole(build, reqs, n_parts, rnd, slo) -> None:
    whole = _step(build(reqs), slo)
    shuffled = list(reqs)
    rnd.shuffle(shuffled)
    parts = [build(shuffled[i::n_parts]) for i in range(n_parts)]
    merged = compute_step_from_parts(
        parts, window=WINDOW, slo=slo, validity=VALIDITY, target_concurrency=8, step_index=0
    )
    assert merged == whole
    assert merged.to_dict() == whole.to_dict()

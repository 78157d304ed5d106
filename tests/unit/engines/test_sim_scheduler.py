"""Tests of the simulated engine's iteration loop in time: token events, deadlines, cancellation."""

from __future__ import annotations

import asyncio
import itertools
import math

import pytest

from raybench.engines.sim import (
    BatchShape,
    Clock,
    CostModel,
    EngineCore,
    LinearCostModel,
    LoopClock,
    Scheduler,
    SimConfig,
    TokenEvent,
    TokenStream,
)
from raybench.errors import EngineError

pytestmark = pytest.mark.timeout(10)

MS = 1_000_000  # nanoseconds


class VirtualClock:
    """Time jumps to each deadline at once: timings are exact and tests instant."""

    def __init__(self, late_ns: int = 0) -> None:
        self.now = 0
        self.late_ns = late_ns  # every wake-up comes this much after its deadline

    def now_ns(self) -> int:
        return self.now

    async def sleep_until_ns(self, deadline_ns: int) -> None:
        self.now = max(self.now, deadline_ns + self.late_ns)
        await asyncio.sleep(0)


async def collect(stream: TokenStream) -> list[TokenEvent]:
    async with stream:
        return [event async for event in stream]


def linear(overhead_ms: float, decode_ms: float = 0.0, prefill_ms: float = 0.0) -> LinearCostModel:
    return LinearCostModel(overhead_ms, decode_ms, prefill_ms)


def make(cost: CostModel, max_num_seqs: int, clock: Clock | None = None, time_scale: float = 1.0) -> Scheduler:
    core = EngineCore(SimConfig(max_num_seqs=max_num_seqs, kv_cache_tokens=1 << 20).resolve())
    return Scheduler(core, cost, clock=clock, time_scale=time_scale)


def test_linear_cost_model_formula() -> None:
    model = linear(6.0, 0.5, 0.01)
    batch = BatchShape(num_seqs=9, new_tokens=1008, decode_seqs=8, context_tokens=123456)
    assert model.iteration_time_s(batch) == pytest.approx((6.0 + 4.0 + 10.0) / 1000)
    assert model.iteration_time_s(BatchShape()) == pytest.approx(0.006)


@pytest.mark.parametrize("bad", [-1.0, math.nan])
def test_linear_cost_model_rejects_negative_and_nan(bad: float) -> None:
    with pytest.raises(ValueError, match="decode_ms_per_seq"):
        LinearCostModel(1.0, bad, 0.0)


def test_scheduler_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="max_num_seqs"):
        make(linear(1.0), max_num_seqs=0)
    with pytest.raises(ValueError, match="time_scale"):
        make(linear(1.0), max_num_seqs=1, time_scale=0)
    scheduler = make(linear(1.0), max_num_seqs=1)
    with pytest.raises(ValueError, match="max_tokens"):
        scheduler.submit(3, max_tokens=0)
    with pytest.raises(ValueError, match="prompt_tokens"):
        scheduler.submit(-1, max_tokens=1)


async def test_exact_token_counts_and_stats() -> None:
    async with make(linear(1.0), max_num_seqs=4, clock=VirtualClock()) as scheduler:
        long, short = scheduler.submit(7, 5), scheduler.submit(3, 1)
        long_events, short_events = await asyncio.gather(collect(long), collect(short))
        stats = scheduler.stats()
    assert [e.index for e in long_events] == [0, 1, 2, 3, 4]
    assert [e.finished for e in long_events] == [False, False, False, False, True]
    assert [(e.index, e.finished) for e in short_events] == [(0, True)]
    assert (stats.running, stats.waiting) == (0, 0)
    assert (stats.prompt_tokens_total, stats.generation_tokens_total) == (10, 6)
    assert (stats.requests_finished, stats.requests_cancelled, stats.iterations) == (2, 0, 5)


async def test_iteration_times_follow_cost_model_exactly() -> None:
    # Iteration 1 prefills 4 tokens (no decoders): 10 + 0.5*4 = 12 ms; then 10 + 1*1 = 11 ms each.
    async with make(linear(10.0, 1.0, 0.5), max_num_seqs=4, clock=VirtualClock()) as scheduler:
        events = await collect(scheduler.submit(4, 3))
    assert [e.emitted_ns for e in events] == [12 * MS, 23 * MS, 34 * MS]


async def test_late_wakeups_do_not_accumulate() -> None:
    # Every wake-up is 3 ms late, yet iteration ends stay on the 10 ms grid (absolute deadlines).
    clock = VirtualClock(late_ns=3 * MS)
    async with make(linear(10.0), max_num_seqs=1, clock=clock) as scheduler:
        events = await collect(scheduler.submit(1, 6))
    assert [e.emitted_ns for e in events] == [k * 10 * MS for k in range(1, 7)]


async def test_deadline_never_earlier_than_now() -> None:
    # A wake-up later than a whole iteration: the next deadline is "now", not in the past.
    clock = VirtualClock(late_ns=25 * MS)
    async with make(linear(10.0), max_num_seqs=1, clock=clock) as scheduler:
        events = await collect(scheduler.submit(1, 3))
    assert [e.emitted_ns for e in events] == [10 * MS, 35 * MS, 60 * MS]


async def test_real_time_single_request_takes_one_iteration_per_token() -> None:
    loop = asyncio.get_running_loop()
    async with make(linear(10.0), max_num_seqs=4) as scheduler:
        start = loop.time()
        events = await collect(scheduler.submit(10, 5))
        elapsed_s = loop.time() - start
        assert scheduler.stats().iterations == 5
    assert len(events) == 5
    assert 0.050 <= elapsed_s < 0.250  # never early; the upper bound only catches gross errors
    gaps_ns = [b.emitted_ns - a.emitted_ns for a, b in itertools.pairwise(events)]
    assert min(gaps_ns) >= 10 * MS  # a late wake-up may lengthen a gap, never shorten one


async def test_requests_beyond_max_num_seqs_wait_for_a_slot() -> None:
    async with make(linear(10.0), max_num_seqs=2, clock=VirtualClock()) as scheduler:
        streams = [scheduler.submit(5, 5) for _ in range(4)]
        first = await anext(streams[0])
        stats = scheduler.stats()
        assert (first.emitted_ns, stats.running, stats.waiting) == (10 * MS, 2, 2)
        results = await asyncio.gather(*(collect(s) for s in streams))
    first_token_ns = [10 * MS] + [events[0].emitted_ns for events in results[1:]]
    # The 3rd and 4th are admitted when the first two finish, 5 iterations (50 ms) later.
    assert first_token_ns == [10 * MS, 10 * MS, 60 * MS, 60 * MS]
    assert [len(events) for events in results] == [4, 5, 5, 5]


async def test_real_time_requests_beyond_max_num_seqs_wait() -> None:
    async with make(linear(5.0), max_num_seqs=2) as scheduler:
        results = await asyncio.gather(*(collect(scheduler.submit(1, 4)) for _ in range(4)))
    first_ns = [events[0].emitted_ns for events in results]
    assert first_ns[0] == first_ns[1]
    assert first_ns[2] == first_ns[3]
    # Admitted one iteration after the first two finished: 4 iterations of 5 ms later, at least.
    assert 20 * MS <= first_ns[2] - first_ns[0] < 200 * MS


async def test_cancel_frees_the_slot_and_the_queue() -> None:
    async with make(linear(10.0), max_num_seqs=1, clock=VirtualClock()) as scheduler:
        hog = scheduler.submit(1, 1000)
        queued = scheduler.submit(1, 1)
        waiting_then_cancelled = scheduler.submit(1, 1)
        await anext(hog)
        waiting_then_cancelled.cancel()
        assert scheduler.stats().waiting == 1
        hog.cancel()
        assert scheduler.stats().running == 0
        assert [e.index for e in await collect(queued)] == [0]
        stats = scheduler.stats()
    assert (stats.running, stats.waiting) == (0, 0)
    assert (stats.requests_cancelled, stats.requests_finished) == (2, 1)


async def test_leaving_async_with_cancels_a_running_request() -> None:
    async with make(linear(1.0), max_num_seqs=2) as scheduler:
        async with scheduler.submit(1, 1000) as stream:
            await anext(stream)
            assert scheduler.stats().running == 1
        assert scheduler.stats().running == 0
        assert scheduler.stats().requests_cancelled == 1


async def test_cancelled_consumer_task_cancels_its_request() -> None:
    async with make(linear(1.0), max_num_seqs=2) as scheduler:
        task = asyncio.create_task(collect(scheduler.submit(1, 1000)))
        while scheduler.stats().generation_tokens_total < 2:
            await asyncio.sleep(0.001)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert scheduler.stats().running == 0


async def test_inter_token_latency_grows_with_batch_size() -> None:
    def itl_ns(events: list[TokenEvent]) -> int:
        return events[-1].emitted_ns - events[-2].emitted_ns

    async with make(linear(2.0, 1.0), max_num_seqs=16, clock=VirtualClock()) as scheduler:
        alone = await collect(scheduler.submit(1, 4))
        batch = await asyncio.gather(*(collect(scheduler.submit(1, 4)) for _ in range(8)))
    assert itl_ns(alone) == 3 * MS  # 2 ms + 1 decoding sequence
    assert {itl_ns(events) for events in batch} == {10 * MS}  # 2 ms + 8 decoding sequences


async def test_real_time_inter_token_latency_grows_with_batch_size() -> None:
    loop = asyncio.get_running_loop()

    async def mean_itl_s(stream: TokenStream) -> float:
        arrivals = [loop.time() async for _ in stream]
        return (arrivals[-1] - arrivals[0]) / (len(arrivals) - 1)

    async with make(linear(1.0, 1.0), max_num_seqs=16) as scheduler:
        alone = await mean_itl_s(scheduler.submit(1, 6))
        batch = await asyncio.gather(*(mean_itl_s(scheduler.submit(1, 6)) for _ in range(16)))
    assert alone < 0.006
    assert min(batch) > 0.014  # 1 ms + 16 decoding sequences = 17 ms
    assert min(batch) > 3 * alone


async def test_idle_scheduler_does_not_spin() -> None:
    async with make(linear(1.0), max_num_seqs=2) as scheduler:
        await collect(scheduler.submit(1, 3))
        iterations = scheduler.stats().iterations
        await asyncio.sleep(0.05)
        assert scheduler.stats().iterations == iterations == 3
        await collect(scheduler.submit(1, 2))  # wakes up again
        assert scheduler.stats().iterations == 5


async def test_close_fails_outstanding_requests_and_refuses_new_ones() -> None:
    scheduler = make(linear(1.0), max_num_seqs=1)
    scheduler.start()
    running, queued = scheduler.submit(1, 1000), scheduler.submit(1, 1)
    await anext(running)
    await scheduler.aclose()
    for stream in (running, queued):
        with pytest.raises(EngineError, match="shutting down"):
            _ = [e async for e in stream]
    with pytest.raises(EngineError):
        scheduler.submit(1, 1)
    await scheduler.aclose()  # idempotent


async def test_broken_cost_model_fails_requests_instead_of_hanging() -> None:
    class NaNCost:
        def iteration_time_s(self, batch: BatchShape) -> float:
            return math.nan

    async with make(NaNCost(), max_num_seqs=1) as scheduler:
        with pytest.raises(EngineError, match="invalid iteration time"):
            await collect(scheduler.submit(1, 2))
        with pytest.raises(EngineError):
            scheduler.submit(1, 1)


async def test_loop_clock_sleeps_until_an_absolute_instant() -> None:
    clock = LoopClock()
    deadline_ns = clock.now_ns() + 20 * MS
    await clock.sleep_until_ns(deadline_ns)
    assert clock.now_ns() >= deadline_ns
    await clock.sleep_until_ns(deadline_ns - 5 * MS)  # past instants return at once


async def test_time_scale_divides_every_iteration() -> None:
    # 10 ms iterations at time_scale 4 end every 2.5 ms of clock time.
    async with make(linear(10.0), max_num_seqs=1, clock=VirtualClock(), time_scale=4.0) as scheduler:
        events = await collect(scheduler.submit(1, 3))
    assert [e.emitted_ns for e in events] == [2_500_000, 5_000_000, 7_500_000]


async def test_late_wakeups_are_counted() -> None:
    async with make(linear(10.0), max_num_seqs=1, clock=VirtualClock(late_ns=3 * MS)) as scheduler:
        await collect(scheduler.submit(1, 4))
        assert scheduler.late_ns == 4 * 3 * MS

"""Open-loop runner: send each arrival of a seeded schedule at its absolute instant, whatever is in flight.

A request's `scheduled_ns` is its schedule instant, never the moment a slot freed up, so a stalled
server or a concurrency cap shows up as queue time and TTFT-from-schedule (no coordinated omission).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Protocol

from raybench.loadgen.client import RequestOutcome, begin_streaming, encode_body, send_streaming
from raybench.loadgen.closed_loop import ClosedLoopResult, PromptSource, Shard, Sink, outcome_record, turn_payload
from raybench.loadgen.conversation import Budget, TurnSender, run_session, session_source, timed_arrivals, timed_source
from raybench.loadgen.endpoint import Balancer, Endpoint
from raybench.loadgen.instant import MonotonicClock, at_instant
from raybench.loadgen.schedule import ArrivalSchedule
from raybench.loadgen.session import HttpSession

__all__ = ["Clock", "MonotonicClock", "SendFn", "run_open_loop"]

SendFn = Callable[[HttpSession, Endpoint, str, bytes, float], Awaitable[RequestOutcome]]


class Clock(Protocol):
    """What the runner needs of time; tests inject a fake (raybench.testing.FakeClock)."""

    def now_ns(self) -> int: ...
    async def sleep_until(self, target_ns: int) -> None: ...


async def run_open_loop(
    session: HttpSession,
    endpoint: Endpoint,
    source: PromptSource,
    shard: Shard,
    start_ns: int,
    sink: Sink,
    *,
    clock: Clock | None = None,
    send: SendFn = send_streaming,
) -> ClosedLoopResult:
    """Send this shard's arrivals from `start_ns` until its deadline or budget; each request to `sink`.

    A trace source (raybench.loadgen.conversation) gives the arrival instants itself; a multi-turn source
    starts a session at each arrival, whose later turns follow its think times.
    """
    if shard.rate_per_s is None:
        raise ValueError("run_open_loop needs a shard with rate_per_s; use run_closed_loop for concurrency")
    own_clock = clock is None
    clock = clock or MonotonicClock()
    deadline_ns = start_ns + int(shard.duration_s * 1e9) if shard.duration_s is not None else None
    budget = Budget(deadline_ns, shard.max_requests)
    cap = asyncio.Semaphore(shard.concurrency) if shard.concurrency > 0 else None
    out = _Out(session, Balancer(endpoint), shard.timeout_s, cap, send, sink)
    sessions = session_source(source)
    in_flight: set[asyncio.Task[None]] = set()
    first_ns, last_ns, exhausted = None, None, True
    for index, offset_ns, prompt_of in _arrivals(source, shard):
        target_ns = start_ns + offset_ns
        if not budget.open(target_ns):
            exhausted = False
            break
        work: Awaitable[object]
        if sessions is not None:
            plan = sessions.session(index)
            prefix = f"{shard.request_id_prefix}{index}"
            await clock.sleep_until(target_ns)
            work = run_session(plan, prefix, target_ns, clock, budget.take, _turn_sender(out, endpoint, index, clock))
        else:
            budget.take(target_ns)
            request = _Request.of(f"{shard.request_id_prefix}{index}", index, prompt_of(), endpoint)
            # the prompt is built before the instant: only the send is timed, and written in the wake-up itself
            work = await at_instant(clock, target_ns, lambda: _begin_one(out, request, target_ns))  # noqa: B023
        task = asyncio.create_task(_discard(work))
        in_flight.add(task)
        task.add_done_callback(in_flight.discard)
        first_ns = target_ns if first_ns is None else first_ns
        last_ns = target_ns
    stopped_ns = last_ns if exhausted or deadline_ns is None else deadline_ns  # a trace can end before the deadline
    if own_clock and isinstance(clock, MonotonicClock):
        clock.close()
    if in_flight:
        await asyncio.gather(*in_flight)
    return ClosedLoopResult(budget.taken, first_ns, stopped_ns if budget.taken else None)


def _arrivals(source: PromptSource, shard: Shard) -> Iterator[tuple[int, int, Callable[[], Any]]]:
    """(prompt index, offset ns, its prompt) of this shard's arrivals: the seeded arrival schedule, or a
    trace's own instants (every step replays the same trace: request `number` at the trace's instant)."""
    rate = shard.rate_per_s or 0.0
    base = shard.prompt_base
    timed = timed_source(source)
    if timed is not None:
        for number, offset_ns in timed_arrivals(timed, rate, shard.prompt_offset, shard.prompt_stride):
            yield base + number, offset_ns, functools.partial(timed.request, number, base)
        return
    schedule = ArrivalSchedule(rate, shard.arrival, shard.seed, shard.burstiness)
    for number, offset_ns in schedule.shard(shard.prompt_offset, shard.prompt_stride):
        yield base + number, offset_ns, functools.partial(source.prompt, base + number)


async def _discard(work: Awaitable[object]) -> None:
    await work


class _Out:
    """Where and how this shard's requests go."""

    def __init__(
        self, http: HttpSession, balancer: Balancer, timeout_s: float, cap: asyncio.Semaphore | None, send: SendFn,
        sink: Sink,
    ) -> None:  # fmt: skip
        self.http, self.balancer, self.timeout_s, self.cap, self.send, self.sink = (
            http, balancer, timeout_s, cap, send, sink
        )  # fmt: skip


def _turn_sender(out: _Out, endpoint: Endpoint, index: int, clock: Clock) -> TurnSender:
    """Sends one turn of session `index` (through the cap, like any request) and returns its reply's end."""

    async def send_turn(prompt: Any, request_id: str, scheduled_ns: int) -> int:
        request = _Request.of(request_id, index, prompt, endpoint)
        await _send_one(out.http, out.balancer, request, scheduled_ns, out.timeout_s, out.cap, out.send, out.sink)
        return clock.now_ns()

    return send_turn


class _Request:
    __slots__ = ("body", "fingerprint", "index", "request_id", "requested_output_tokens", "session_id", "turn")

    def __init__(self, request_id: str, index: int, body: bytes, fingerprint: str, requested: int) -> None:
        self.requested_output_tokens = requested
        self.request_id = request_id
        self.index = index
        self.body = body
        self.fingerprint = fingerprint
        self.session_id: str | None = None
        self.turn: int | None = None

    @classmethod
    def of(cls, request_id: str, index: int, prompt: Any, endpoint: Endpoint) -> _Request:
        """The request of `prompt`, its body encoded now (before the send instant)."""
        body = encode_body(turn_payload(endpoint, prompt))
        request = cls(request_id, index, body, prompt.fingerprint, prompt.output_tokens)
        request.session_id = getattr(prompt, "session_id", None)
        request.turn = getattr(prompt, "turn", None)
        return request


def _begin_one(out: _Out, request: _Request, scheduled_ns: int) -> Awaitable[None]:
    """The work of one arrival. When it can go out without waiting (lean client, idle connection, no cap),
    the request is written before this returns; otherwise the work sends it once it runs (a task hop later)."""
    if out.cap is None and out.send is send_streaming:
        url, slot = out.balancer.acquire(request.index)
        started = begin_streaming(out.http, out.balancer.endpoint, url, request.body, out.timeout_s)
        if started is not None:
            return _finish_one(out, request, scheduled_ns, started, slot)
        out.balancer.release(slot)
    return _send_one(out.http, out.balancer, request, scheduled_ns, out.timeout_s, out.cap, out.send, out.sink)


async def _finish_one(
    out: _Out, request: _Request, scheduled_ns: int, started: Awaitable[RequestOutcome], slot: int
) -> None:
    try:
        outcome = await started
    finally:
        out.balancer.release(slot)
    _sink_record(out.sink, outcome, request, scheduled_ns)


async def _send_one(
    session: HttpSession,
    balancer: Balancer,
    request: _Request,
    scheduled_ns: int,
    timeout_s: float,
    cap: asyncio.Semaphore | None,
    send: SendFn,
    sink: Sink,
) -> None:
    if cap is None:
        out = await _send_balanced(session, balancer, request, timeout_s, send)
    else:
        async with cap:  # FIFO: queued arrivals go out in schedule order, their wait is queue time
            out = await _send_balanced(session, balancer, request, timeout_s, send)
    _sink_record(sink, out, request, scheduled_ns)


def _sink_record(sink: Sink, out: RequestOutcome, request: _Request, scheduled_ns: int) -> None:
    record = outcome_record(out, request.request_id, scheduled_ns, request.fingerprint, request.requested_output_tokens)
    record["session_id"] = request.session_id
    record["turn"] = request.turn
    sink(record)


async def _send_balanced(
    session: HttpSession, balancer: Balancer, request: _Request, timeout_s: float, send: SendFn
) -> RequestOutcome:
    url, slot = balancer.acquire(request.index)  # the replica is chosen when the request leaves, not queued
    try:
        return await send(session, balancer.endpoint, url, request.body, timeout_s)
    finally:
        balancer.release(slot)

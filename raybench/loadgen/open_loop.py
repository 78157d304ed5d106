"""Open-loop runner: send each arrival of a seeded schedule at its absolute instant, whatever is in flight.

A request's `scheduled_ns` is its schedule instant, never the moment a slot freed up, so a stalled
server or a concurrency cap shows up as queue time and TTFT-from-schedule (no coordinated omission).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

import aiohttp

from raybench.loadgen.client import RequestOutcome, build_payload, encode_body, send_streaming
from raybench.loadgen.closed_loop import ClosedLoopResult, PromptSource, Shard, Sink, outcome_record
from raybench.loadgen.endpoint import Balancer, Endpoint
from raybench.loadgen.schedule import ArrivalSchedule

__all__ = ["Clock", "MonotonicClock", "SendFn", "run_open_loop"]

SendFn = Callable[[aiohttp.ClientSession, Endpoint, str, bytes, float], Awaitable[RequestOutcome]]

_COARSE_NS = 2_000_000  # loop timers wake up to ~1 ms off: they cover all but the last 2 ms
_FINE_MIN_NS = 100_000  # below this, yielding to the loop is cheaper than a thread handoff
_HANDOFF_NS = 60_000  # typical time from the helper thread's wake to the loop running the send


class Clock(Protocol):
    """What the runner needs of time; tests inject a fake (raybench.testing.FakeClock)."""

    def now_ns(self) -> int: ...
    async def sleep_until(self, target_ns: int) -> None: ...


class MonotonicClock:
    """perf_counter_ns, and a wait that returns at `target_ns`, not up to a millisecond off.

    Loop timers are millisecond-grained (uvloop's clock counts whole ms), so a send timed by them
    alone is off by ~0.5 ms typically. The loop timer sleeps to about 2 ms before the instant; the
    rest is a precise OS sleep in a helper thread, which hands the loop back its wake-up: no spinning,
    and the loop keeps serving other streams meanwhile.
    """

    def __init__(self) -> None:
        self._waker: ThreadPoolExecutor | None = None

    def now_ns(self) -> int:
        return time.perf_counter_ns()

    async def sleep_until(self, target_ns: int) -> None:
        remaining = target_ns - time.perf_counter_ns()
        if remaining > _COARSE_NS:
            await asyncio.sleep((remaining - _COARSE_NS) / 1e9)
            remaining = target_ns - time.perf_counter_ns()
        if remaining > _FINE_MIN_NS:
            if self._waker is None:
                self._waker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="raybench-waker")
            await asyncio.get_running_loop().run_in_executor(self._waker, _sleep_until, target_ns)
        while time.perf_counter_ns() < target_ns:  # the last few microseconds
            await asyncio.sleep(0)

    def close(self) -> None:
        if self._waker is not None:
            self._waker.shutdown(wait=False)
            self._waker = None


def _sleep_until(target_ns: int) -> None:
    remaining = target_ns - time.perf_counter_ns()
    if remaining > _HANDOFF_NS:
        time.sleep((remaining - _HANDOFF_NS) / 1e9)  # wake the loop a little early: the handoff takes time


async def run_open_loop(
    session: aiohttp.ClientSession,
    endpoint: Endpoint,
    source: PromptSource,
    shard: Shard,
    start_ns: int,
    sink: Sink,
    *,
    clock: Clock | None = None,
    send: SendFn = send_streaming,
) -> ClosedLoopResult:
    """Send this shard's arrivals from `start_ns` until its deadline or budget; each request to `sink`."""
    if shard.rate_per_s is None:
        raise ValueError("run_open_loop needs a shard with rate_per_s; use run_closed_loop for concurrency")
    own_clock = clock is None
    clock = clock or MonotonicClock()
    schedule = ArrivalSchedule(shard.rate_per_s, shard.arrival, shard.seed, shard.burstiness)
    deadline_ns = start_ns + int(shard.duration_s * 1e9) if shard.duration_s is not None else None
    cap = asyncio.Semaphore(shard.concurrency) if shard.concurrency > 0 else None
    balancer = Balancer(endpoint)
    in_flight: set[asyncio.Task[None]] = set()
    issued, first_ns, last_ns = 0, None, None
    for number, offset_ns in schedule.shard(shard.prompt_offset, shard.prompt_stride):
        target_ns = start_ns + offset_ns
        if (deadline_ns is not None and target_ns >= deadline_ns) or (
            shard.max_requests is not None and issued >= shard.max_requests
        ):
            break
        index = shard.prompt_base + number
        prompt = source.prompt(index)  # built before the instant: only the send happens on time
        body = encode_body(build_payload(endpoint, prompt.text, prompt.output_tokens))
        await clock.sleep_until(target_ns)
        request = _Request(f"{shard.request_id_prefix}{index}", index, body, prompt.fingerprint, prompt.output_tokens)
        task = asyncio.create_task(_send_one(session, balancer, request, target_ns, shard.timeout_s, cap, send, sink))
        in_flight.add(task)
        task.add_done_callback(in_flight.discard)
        issued += 1
        first_ns = target_ns if first_ns is None else first_ns
        last_ns = target_ns
    stopped_ns = deadline_ns if deadline_ns is not None else last_ns
    if own_clock and isinstance(clock, MonotonicClock):
        clock.close()
    if in_flight:
        await asyncio.gather(*in_flight)
    return ClosedLoopResult(issued, first_ns, stopped_ns if issued else None)


class _Request:
    __slots__ = ("body", "fingerprint", "index", "request_id", "requested_output_tokens")

    def __init__(self, request_id: str, index: int, body: bytes, fingerprint: str, requested: int) -> None:
        self.requested_output_tokens = requested
        self.request_id = request_id
        self.index = index
        self.body = body
        self.fingerprint = fingerprint


async def _send_one(
    session: aiohttp.ClientSession,
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
    sink(outcome_record(out, request.request_id, scheduled_ns, request.fingerprint, request.requested_output_tokens))


async def _send_balanced(
    session: aiohttp.ClientSession, balancer: Balancer, request: _Request, timeout_s: float, send: SendFn
) -> RequestOutcome:
    url, slot = balancer.acquire(request.index)  # the replica is chosen when the request leaves, not queued
    try:
        return await send(session, balancer.endpoint, url, request.body, timeout_s)
    finally:
        balancer.release(slot)

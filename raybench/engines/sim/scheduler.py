"""Continuous-batching scheduler of the simulated engine: admission, iteration timing, token events.

One background task runs iterations back to back while there is work, and sleeps on an
event when there is none. Each iteration admits waiting requests FIFO while fewer than
`max_num_seqs` run; the admitted ones are prefilled in that iteration and, like every other
running request, emit one token when it ends. Iteration durations come from a `CostModel`;
iteration ends are absolute instants on the scheduler's clock, so sleep error never accumulates.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import math
from collections import deque
from dataclasses import dataclass, field
from types import TracebackType
from typing import Protocol

from raybench.engines.sim.cost import CostModel
from raybench.errors import EngineError

__all__ = ["Clock", "LoopClock", "Scheduler", "SchedulerStats", "TokenEvent", "TokenStream"]

_NS_PER_S = 1_000_000_000
_log = logging.getLogger(__name__)


class Clock(Protocol):
    """Monotonic time for the scheduler; inject a virtual one to make timing tests exact and instant."""

    def now_ns(self) -> int: ...

    async def sleep_until_ns(self, deadline_ns: int) -> None: ...


class LoopClock:
    """The running event loop's clock (`loop.time()`), waited on with absolute `call_at` deadlines."""

    def now_ns(self) -> int:
        return round(asyncio.get_running_loop().time() * _NS_PER_S)

    async def sleep_until_ns(self, deadline_ns: int) -> None:
        loop = asyncio.get_running_loop()
        if deadline_ns <= self.now_ns():
            return
        woken: asyncio.Future[None] = loop.create_future()
        handle = loop.call_at(deadline_ns / _NS_PER_S, _resolve, woken)
        try:
            await woken
        finally:
            handle.cancel()


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


@dataclass(frozen=True)
class TokenEvent:
    """One output token: its 0-based index, whether it is the last, and the iteration end instant."""

    index: int
    finished: bool
    emitted_ns: int


@dataclass(frozen=True)
class SchedulerStats:
    """A snapshot of the scheduler's gauges and counters (counters start at 0 and only grow)."""

    running: int
    waiting: int
    prompt_tokens_total: int
    generation_tokens_total: int
    iterations: int
    requests_finished: int
    requests_cancelled: int


class _State(enum.Enum):
    WAITING = "waiting"
    RUNNING = "running"
    FINISHED = "finished"
    CANCELLED = "cancelled"
    FAILED = "failed"


@dataclass(eq=False)
class _Request:
    prompt_tokens: int
    max_tokens: int
    events: asyncio.Queue[TokenEvent | BaseException] = field(default_factory=asyncio.Queue)
    generated_tokens: int = 0
    state: _State = _State.WAITING


class TokenStream:
    """One request's token events, in order. Leaving `async with` (or `cancel()`) frees its slot.

    Iterating raises `EngineError` if the scheduler closes or fails before the last token.
    """

    def __init__(self, scheduler: Scheduler, request: _Request) -> None:
        self._scheduler = scheduler
        self._request = request
        self._exhausted = False

    @property
    def prompt_tokens(self) -> int:
        return self._request.prompt_tokens

    @property
    def max_tokens(self) -> int:
        return self._request.max_tokens

    def cancel(self) -> None:
        """Remove the request from the queue or the batch; a no-op once it finished."""
        self._scheduler._cancel(self._request)

    def __aiter__(self) -> TokenStream:
        return self

    async def __anext__(self) -> TokenEvent:
        if self._exhausted:
            raise StopAsyncIteration
        item = await self._request.events.get()
        if isinstance(item, BaseException):
            self._exhausted = True
            raise item
        self._exhausted = item.finished
        return item

    async def __aenter__(self) -> TokenStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.cancel()


class Scheduler:
    """The iteration loop. `start()` (or `async with`) inside a running loop; `submit()` per request."""

    def __init__(self, cost_model: CostModel, max_num_seqs: int, clock: Clock | None = None) -> None:
        if max_num_seqs < 1:
            raise ValueError(f"max_num_seqs must be >= 1, got {max_num_seqs}")
        self._cost_model = cost_model
        self._max_num_seqs = max_num_seqs
        self._clock: Clock = clock if clock is not None else LoopClock()
        self._waiting: deque[_Request] = deque()
        self._running: list[_Request] = []
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closed_error: EngineError | None = None
        self._prompt_tokens_total = 0
        self._generation_tokens_total = 0
        self._iterations = 0
        self._requests_finished = 0
        self._requests_cancelled = 0

    @property
    def max_num_seqs(self) -> int:
        return self._max_num_seqs

    def start(self) -> None:
        if self._task is not None:
            raise RuntimeError("Scheduler.start() called twice")
        if self._closed_error is not None:
            raise self._closed_error
        self._task = asyncio.get_running_loop().create_task(self._run(), name="raybench-sim-scheduler")

    async def aclose(self) -> None:
        """Stop the loop; requests still queued or running fail with `EngineError`. Idempotent."""
        if self._closed_error is None:
            self._closed_error = EngineError("the simulated engine is shutting down")
        task, self._task = self._task, None
        self._fail_all(self._closed_error)
        if task is not None and not task.done():
            task.cancel()
            # gather: waits for the loop to stop, yet still lets the caller itself be cancelled.
            await asyncio.gather(task, return_exceptions=True)

    async def __aenter__(self) -> Scheduler:
        self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def submit(self, prompt_tokens: int, max_tokens: int) -> TokenStream:
        """Queue a request; its stream yields exactly `max_tokens` events unless cancelled."""
        if prompt_tokens < 0:
            raise ValueError(f"prompt_tokens must be >= 0, got {prompt_tokens}")
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
        if self._closed_error is not None:
            raise self._closed_error
        request = _Request(prompt_tokens=prompt_tokens, max_tokens=max_tokens)
        self._waiting.append(request)
        self._wake.set()
        return TokenStream(self, request)

    def stats(self) -> SchedulerStats:
        return SchedulerStats(
            running=len(self._running),
            waiting=len(self._waiting),
            prompt_tokens_total=self._prompt_tokens_total,
            generation_tokens_total=self._generation_tokens_total,
            iterations=self._iterations,
            requests_finished=self._requests_finished,
            requests_cancelled=self._requests_cancelled,
        )

    def _cancel(self, request: _Request) -> None:
        if request.state is _State.WAITING:
            self._waiting.remove(request)
        elif request.state is _State.RUNNING:
            self._running.remove(request)
        else:
            return
        request.state = _State.CANCELLED
        self._requests_cancelled += 1

    async def _run(self) -> None:
        try:
            deadline_ns = self._clock.now_ns()
            while True:
                if not self._running and not self._waiting:
                    await self._wait_for_work()
                    deadline_ns = self._clock.now_ns()
                    continue
                # Absolute deadlines: being late shortens the next wait, never shifts the timeline.
                deadline_ns = max(deadline_ns + self._start_iteration(), self._clock.now_ns())
                await self._clock.sleep_until_ns(deadline_ns)
                self._end_iteration(deadline_ns)
        except Exception as exc:
            _log.exception("scheduler loop failed; failing every queued and running request")
            self._closed_error = EngineError(f"the simulated engine's scheduler failed: {exc!r}")
            self._fail_all(self._closed_error)

    async def _wait_for_work(self) -> None:
        while not self._running and not self._waiting:
            self._wake.clear()
            await self._wake.wait()

    def _start_iteration(self) -> int:
        """Admit waiting requests FIFO, then return this iteration's duration in nanoseconds."""
        admitted = 0
        prefill_tokens = 0
        while self._waiting and len(self._running) < self._max_num_seqs:
            request = self._waiting.popleft()
            request.state = _State.RUNNING
            self._running.append(request)
            admitted += 1
            prefill_tokens += request.prompt_tokens
        self._prompt_tokens_total += prefill_tokens
        context_tokens = sum(r.prompt_tokens + r.generated_tokens for r in self._running)
        duration_s = self._cost_model.iteration_time_s(prefill_tokens, len(self._running) - admitted, context_tokens)
        if not (math.isfinite(duration_s) and duration_s >= 0.0):
            raise ValueError(f"cost model returned an invalid iteration time: {duration_s!r} s")
        return round(duration_s * _NS_PER_S)

    def _end_iteration(self, end_ns: int) -> None:
        """Every request still in the batch emits one token; finished ones leave the batch."""
        self._iterations += 1
        self._generation_tokens_total += len(self._running)
        still_running: list[_Request] = []
        for request in self._running:
            index = request.generated_tokens
            request.generated_tokens += 1
            finished = request.generated_tokens >= request.max_tokens
            request.events.put_nowait(TokenEvent(index=index, finished=finished, emitted_ns=end_ns))
            if finished:
                request.state = _State.FINISHED
                self._requests_finished += 1
            else:
                still_running.append(request)
        self._running = still_running

    def _fail_all(self, error: EngineError) -> None:
        for request in (*self._waiting, *self._running):
            request.state = _State.FAILED
            request.events.put_nowait(error)
        self._waiting.clear()
        self._running.clear()

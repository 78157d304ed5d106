"""The simulated engine's iteration loop in time: runs the `EngineCore`, delivers token events.

One background task runs iterations back to back while there is work, and sleeps on an event
when there is none. Each iteration the core picks the batch (admission, chunked prefill, KV
blocks, preemption), the `CostModel` gives its duration, and when it ends every sampled token is
delivered to its request's stream. Iteration ends are absolute instants on the scheduler's
clock, so sleep error never accumulates; `time_scale` divides every duration.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Protocol

from raybench.engines.sim.core import CoreStats, EngineCore, SeqState, Sequence_
from raybench.engines.sim.cost import CostModel
from raybench.engines.sim.kvcache import Token
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


SchedulerStats = CoreStats


Item = TokenEvent | BaseException


class TokenStream:
    """One request's token events, in order. Leaving `async with` (or `cancel()`) frees its slot.

    Iterating raises `EngineError` if the engine closes or fails before the last token.
    """

    def __init__(self, events: asyncio.Queue[Item], cancel: Callable[[], None], seq: Sequence_) -> None:
        self._events = events
        self._cancel = cancel
        self.seq = seq  # the sequence whose prefill served the prompt
        self._exhausted = False

    @property
    def prompt_tokens(self) -> int:
        return self.seq.prompt_len

    @property
    def cached_tokens(self) -> int:
        """Prompt tokens served from the prefix cache (known once the request was admitted)."""
        return self.seq.cached_tokens

    def cancel(self) -> None:
        """Remove the request from the queue or the batch; a no-op once it finished."""
        self._cancel()

    def __aiter__(self) -> TokenStream:
        return self

    async def __anext__(self) -> TokenEvent:
        if self._exhausted:
            raise StopAsyncIteration
        item = await self._events.get()
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
    """The iteration loop of one engine instance. `start()` (or `async with`) inside a running loop."""

    def __init__(
        self, core: EngineCore, cost_model: CostModel, *, clock: Clock | None = None, time_scale: float = 1.0
    ) -> None:
        if not (time_scale > 0 and math.isfinite(time_scale)):
            raise ValueError(f"time_scale must be > 0, got {time_scale!r}")
        self.core = core
        self._cost_model = cost_model
        self._time_scale = time_scale
        self._clock: Clock = clock if clock is not None else LoopClock()
        self._queues: dict[Sequence_, asyncio.Queue[Item]] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closed_error: EngineError | None = None
        self.busy_ns = 0  # simulated time spent in iterations
        self.late_ns = 0  # how late iteration ends were delivered: grows if the simulator lacks CPU

    @property
    def clock(self) -> Clock:
        return self._clock

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

    def submit(self, prompt: Sequence[Token] | int, max_tokens: int, *, precomputed: bool = False) -> TokenStream:
        """Queue a request (its prompt tokens, or just their count); its stream yields `max_tokens` events.

        `precomputed`: the prompt's KV arrives with the request (the decode side of disaggregation);
        its first event then has index 1, the prefill side having produced token 0.
        """
        if self._closed_error is not None:
            raise self._closed_error
        seq = self.core.new_sequence(prompt, max_tokens, precomputed=precomputed)
        if precomputed:
            seq.generated = 1
        queue: asyncio.Queue[Item] = asyncio.Queue()
        self._queues[seq] = queue
        self.core.add(seq)
        self._wake.set()
        return TokenStream(queue, lambda: self._cancel(seq), seq)

    def stats(self) -> CoreStats:
        return self.core.stats()

    def _cancel(self, seq: Sequence_) -> None:
        self._queues.pop(seq, None)
        self.core.cancel(seq)

    async def _run(self) -> None:
        try:
            deadline_ns = self._clock.now_ns()
            while True:
                if not self.core.has_work:
                    await self._wait_for_work()
                    deadline_ns = self._clock.now_ns()
                    continue
                # Absolute deadlines: being late shortens the next wait, never shifts the timeline.
                duration_ns = self._plan_iteration()
                self.busy_ns += duration_ns
                deadline_ns = max(deadline_ns + duration_ns, self._clock.now_ns())
                await self._clock.sleep_until_ns(deadline_ns)
                self.late_ns += max(self._clock.now_ns() - deadline_ns, 0)
                self._deliver(deadline_ns)
        except Exception as exc:
            _log.exception("scheduler loop failed; failing every queued and running request")
            self._closed_error = EngineError(f"the simulated engine's scheduler failed: {exc!r}")
            self._fail_all(self._closed_error)

    async def _wait_for_work(self) -> None:
        while not self.core.has_work:
            self._wake.clear()
            await self._wake.wait()

    def _plan_iteration(self) -> int:
        """Let the core choose the batch; this iteration's (scaled) duration in nanoseconds."""
        duration_s = self._cost_model.iteration_time_s(self.core.plan())
        if not (math.isfinite(duration_s) and duration_s >= 0.0):
            raise ValueError(f"cost model returned an invalid iteration time: {duration_s!r} s")
        return round(duration_s / self._time_scale * _NS_PER_S)

    def _deliver(self, end_ns: int) -> None:
        for seq, index, finished in self.core.complete():
            queue = self._queues.pop(seq) if finished else self._queues.get(seq)
            if queue is not None:
                queue.put_nowait(TokenEvent(index=index, finished=finished, emitted_ns=end_ns))

    def _fail_all(self, error: EngineError) -> None:
        for seq, queue in list(self._queues.items()):
            if seq.state in (SeqState.WAITING, SeqState.RUNNING):
                self.core.cancel(seq)
            queue.put_nowait(error)
        self._queues.clear()

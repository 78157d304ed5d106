"""Planning without a server: closed-loop load on a simulated engine in virtual time, instantly.

`VirtualClock` is a discrete-event clock: every sleeper waits on a heap, and time jumps to the
earliest deadline once the event loop has nothing else to run. `closed_loop()` drives N users
(each sends a request, reads every token, sends the next) for a virtual duration and returns
what a benchmark would measure. Tests use it to check the model's behaviour; planners use it to
size a deployment before running a sweep.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from raybench.engines.sim.config import SimConfig
from raybench.engines.sim.engine import Engine, build_engine

__all__ = ["LoadResult", "VirtualClock", "closed_loop"]

_NS_PER_S = 1_000_000_000


class VirtualClock:
    """Simulated time for any number of sleepers; `run_until_ns` advances it."""

    def __init__(self) -> None:
        self._now = 0
        self._heap: list[tuple[int, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    def now_ns(self) -> int:
        return self._now

    async def sleep_until_ns(self, deadline_ns: int) -> None:
        if deadline_ns <= self._now:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._heap, (deadline_ns, next(self._order), future))
        await future

    async def run_until_ns(self, end_ns: int) -> None:
        """Wake sleepers in deadline order until the next deadline is past `end_ns` (or none is left)."""
        while True:
            await _settle()
            while self._heap and self._heap[0][2].done():  # cancelled sleepers
                heapq.heappop(self._heap)
            if not self._heap or self._heap[0][0] > end_ns:
                self._now = max(self._now, end_ns)
                return
            deadline_ns, _, future = heapq.heappop(self._heap)
            self._now = deadline_ns
            future.set_result(None)


async def _settle() -> None:
    """Yield until no callback is ready: every task woken so far has run as far as it can."""
    loop = asyncio.get_running_loop()
    for _ in range(10_000):
        await asyncio.sleep(0)
        if not getattr(loop, "_ready", None):
            await asyncio.sleep(0)
            if not getattr(loop, "_ready", None):
                return


@dataclass
class LoadResult:
    """What one closed-loop step measured (latencies in ms, from requests that finished)."""

    concurrency: int
    duration_s: float
    output_tokens: int = 0
    requests: int = 0
    ttft_ms: list[float] = field(default_factory=list)
    itl_ms: list[float] = field(default_factory=list)
    cached_tokens: int = 0
    max_running: int = 0
    max_waiting: int = 0
    max_kv_usage: float = 0.0
    preemptions: int = 0

    @property
    def throughput_tok_s(self) -> float:
        return self.output_tokens / self.duration_s

    def p(self, values: list[float], q: float) -> float:
        return float(np.percentile(values, q)) if values else float("nan")


@dataclass(frozen=True)
class _Prompts:
    """Unique prompts, apart from a shared prefix; every `long_every`-th one is `long_isl` long."""

    isl: int
    shared_prefix_tokens: int = 0
    long_every: int = 0
    long_isl: int = 0

    def make(self, n: int) -> list[str | int]:
        long = self.long_every and n % self.long_every == self.long_every - 1
        length = self.long_isl if long else self.isl
        prefix: list[str | int] = [f"shared{i}" for i in range(min(self.shared_prefix_tokens, length))]
        return prefix + [f"r{n}w{i}" for i in range(length - len(prefix))]


async def closed_loop(
    config: SimConfig,
    concurrency: int,
    *,
    isl: int,
    osl: int,
    duration_s: float,
    shared_prefix_tokens: int = 0,
    long_prompt_every: int = 0,
    long_isl: int = 0,
    warmup_s: float = 0.0,
) -> LoadResult:
    """`concurrency` users for `warmup_s + duration_s` of virtual time; see the module docstring.

    Measured, as MEASUREMENT.md does: tokens arriving within the window after `warmup_s`, and the
    latencies of requests sent within it that finished by its end. Prompts are unique apart from an
    optional shared prefix; every `long_prompt_every`-th request has `long_isl` tokens, not `isl`.
    """
    clock = VirtualClock()
    engine = build_engine(config, clock=clock)
    result = LoadResult(concurrency=concurrency, duration_s=duration_s)
    prompts = _Prompts(isl, shared_prefix_tokens, long_prompt_every, long_isl)
    ids = itertools.count()
    window = (round(warmup_s * _NS_PER_S), round((warmup_s + duration_s) * _NS_PER_S))
    engine.start()

    def prompt() -> list[str | int]:
        return prompts.make(next(ids))

    users = [asyncio.create_task(_user(engine, clock, prompt, osl, window, result)) for _ in range(concurrency)]
    try:
        await clock.run_until_ns(window[1])
    finally:
        for task in users:
            task.cancel()
        await asyncio.gather(*users, return_exceptions=True)
        await engine.aclose()
    result.preemptions = engine.stats().preemptions
    return result


async def _user(
    engine: Engine,
    clock: VirtualClock,
    prompt: Callable[[], list[str | int]],
    osl: int,
    window: tuple[int, int],
    result: LoadResult,
) -> None:
    """One closed-loop user: send, read every token, send again, until the window ends."""
    start_ns, end_ns = window
    while clock.now_ns() < end_ns:
        sent_ns = clock.now_ns()
        arrivals: deque[int] = deque()
        async with engine.submit(prompt(), osl) as stream:
            async for event in stream:
                arrivals.append(event.emitted_ns)
                result.output_tokens += start_ns <= event.emitted_ns <= end_ns
                _observe(engine, result)
        if arrivals[-1] > end_ns:
            return
        if sent_ns < start_ns:
            continue
        result.requests += 1
        result.cached_tokens += stream.cached_tokens
        result.ttft_ms.append((arrivals[0] - sent_ns) / 1e6)
        result.itl_ms.extend((b - a) / 1e6 for a, b in itertools.pairwise(arrivals))


def _observe(engine: Engine, result: LoadResult) -> None:
    stats = engine.stats()
    result.max_running = max(result.max_running, stats.running)
    result.max_waiting = max(result.max_waiting, stats.waiting)
    result.max_kv_usage = max(result.max_kv_usage, stats.kv_usage)

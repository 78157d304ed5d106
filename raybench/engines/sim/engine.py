"""The simulated engine as the server sees it: one aggregated instance, or disaggregated P/D pools.

Disaggregated: a request is prefilled on the least-loaded prefill worker (which produces its
first token), its KV cache then crosses the link (prompt tokens x KV bytes per token / link
bandwidth), and it decodes on the least-loaded decode worker, whose batches therefore never
carry prefill chunks. Each worker is one TP group modelled like an aggregated instance.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from dataclasses import fields
from types import TracebackType
from typing import Protocol

from raybench.engines.sim.config import SimConfig
from raybench.engines.sim.core import CoreStats, EngineCore
from raybench.engines.sim.kvcache import Token
from raybench.engines.sim.perf import RooflineCostModel, kv_bytes_per_token
from raybench.engines.sim.scheduler import Clock, Item, LoopClock, Scheduler, TokenEvent, TokenStream
from raybench.errors import EngineError

__all__ = ["DisaggregatedEngine", "Engine", "build_engine", "combine_stats"]

_NS_PER_S = 1_000_000_000


class Engine(Protocol):
    """What the HTTP server drives: start, submit requests, read stats, close."""

    def start(self) -> None: ...

    async def aclose(self) -> None: ...

    def submit(self, prompt: Sequence[Token] | int, max_tokens: int) -> TokenStream: ...

    def stats(self) -> CoreStats: ...

    @property
    def late_ns(self) -> int: ...


def build_engine(config: SimConfig, *, clock: Clock | None = None) -> Engine:
    """The engine `config` describes, on `clock` (the event loop's by default)."""
    resolved = config.resolve()
    clock = clock if clock is not None else LoopClock()

    def worker() -> Scheduler:
        return Scheduler(EngineCore(resolved), RooflineCostModel(resolved), clock=clock, time_scale=config.time_scale)

    if not config.disaggregated:
        return worker()
    transfer_s_per_token = kv_bytes_per_token(resolved) / (config.kv_link_gb_s * 1e9) / config.time_scale
    prefill = [worker() for _ in range(config.prefill_workers)]
    decode = [worker() for _ in range(config.decode_workers)]
    return DisaggregatedEngine(prefill, decode, transfer_s_per_token=transfer_s_per_token, clock=clock)


def combine_stats(parts: Sequence[CoreStats]) -> CoreStats:
    """Sums over workers; KV usage is the fraction of all their blocks in use, its peak the largest."""
    blocks = sum(p.kv_blocks for p in parts)
    fractions = ("kv_usage", "peak_kv_usage")
    totals = {f.name: sum(getattr(p, f.name) for p in parts) for f in fields(CoreStats) if f.name not in fractions}
    used = sum(p.kv_usage * p.kv_blocks for p in parts)
    peak = max((p.peak_kv_usage for p in parts), default=0.0)
    return CoreStats(kv_usage=used / blocks if blocks else 0.0, peak_kv_usage=peak, **totals)


class DisaggregatedEngine:
    """Prefill and decode worker pools joined by a KV transfer (implements `Engine`)."""

    def __init__(
        self, prefill: list[Scheduler], decode: list[Scheduler], *, transfer_s_per_token: float, clock: Clock
    ) -> None:
        if not prefill or not decode:
            raise ValueError("a disaggregated engine needs at least one prefill and one decode worker")
        self.prefill, self.decode = prefill, decode
        self._transfer_s_per_token = transfer_s_per_token
        self._clock = clock
        self._tasks: set[asyncio.Task[None]] = set()
        self.transfers = 0
        self._single_token_finished = 0

    def start(self) -> None:
        for worker in (*self.prefill, *self.decode):
            worker.start()

    async def aclose(self) -> None:
        for worker in (*self.prefill, *self.decode):
            await worker.aclose()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def __aenter__(self) -> DisaggregatedEngine:
        self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def stats(self) -> CoreStats:
        """Both pools summed, except that a request counts as finished once: where it really ended."""
        combined = combine_stats([w.stats() for w in (*self.prefill, *self.decode)])
        finished = sum(w.stats().requests_finished for w in self.decode) + self._single_token_finished
        return dataclasses.replace(combined, requests_finished=finished)

    @property
    def late_ns(self) -> int:
        return sum(w.late_ns for w in (*self.prefill, *self.decode))

    def submit(self, prompt: Sequence[Token] | int, max_tokens: int) -> TokenStream:
        first = _least_loaded(self.prefill).submit(prompt, 1)
        queue: asyncio.Queue[Item] = asyncio.Queue()
        task = asyncio.get_running_loop().create_task(self._relay(first, prompt, max_tokens, queue))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

        def cancel() -> None:
            task.cancel()

        return TokenStream(queue, cancel, first.seq)

    async def _relay(
        self, first: TokenStream, prompt: Sequence[Token] | int, max_tokens: int, queue: asyncio.Queue[Item]
    ) -> None:
        try:
            async with first:
                event = await anext(first)
            queue.put_nowait(TokenEvent(0, max_tokens == 1, event.emitted_ns))
            if max_tokens == 1:
                self._single_token_finished += 1
                return
            transfer_ns = round(first.prompt_tokens * self._transfer_s_per_token * _NS_PER_S)
            await self._clock.sleep_until_ns(event.emitted_ns + transfer_ns)
            self.transfers += 1
            async with _least_loaded(self.decode).submit(prompt, max_tokens, precomputed=True) as rest:
                async for event in rest:
                    queue.put_nowait(event)
        except EngineError as exc:
            queue.put_nowait(exc)


def _least_loaded(workers: list[Scheduler]) -> Scheduler:
    return min(workers, key=lambda w: len(w.core.running) + len(w.core.waiting))

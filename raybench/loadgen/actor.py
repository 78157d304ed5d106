"""LoadGeneratorActor: a Ray actor that arms its shard of each step, starts it at one instant, stores its records."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import ray

from raybench.loadgen.closed_loop import Shard, run_closed_loop
from raybench.loadgen.endpoint import Endpoint
from raybench.loadgen.lag import LoopLagMonitor
from raybench.loadgen.loop_thread import LoopThread
from raybench.loadgen.open_loop import MonotonicClock, run_open_loop
from raybench.loadgen.session import StreamSession, new_session, warm_connections
from raybench.results.store import ResultStore
from raybench.results.writer import RecordWriter, records_prefix
from raybench.workloads.base import PromptSource

__all__ = ["GeneratorStep", "LoadGenerator", "LoadGeneratorActor"]


@dataclass(frozen=True)
class GeneratorStep:
    """Everything a generator needs for one step: who it is in it, and its shard of the load."""

    run_id: str
    engine_id: str
    step_index: int
    phase: str
    target_concurrency: int
    shard: Shard
    wall_offset_ns: int
    target_rate_per_s: float | None = None  # open loop: the step's global rate (shard.rate_per_s set)
    attempt: int = 0  # which execution of the step this is; records carry it


class LoadGenerator:
    """The generator itself (no Ray): owns an HTTP session, runs shards, writes records."""

    def __init__(self, generator_id: str, store: ResultStore, node_id: str = "") -> None:
        self.generator_id = generator_id
        self.node_id = node_id
        self._store = store
        self._session: StreamSession | None = None
        self._client_impl = ""
        self._warmed = 0
        self._armed: GeneratorStep | None = None
        self._endpoint: Endpoint | None = None
        self._source: PromptSource | None = None
        self._writer: RecordWriter | None = None

    def node(self) -> str:
        """The Ray node this generator runs on."""
        return self.node_id

    def clock_ns(self) -> int:
        """This process's monotonic clock, sampled for the driver's offset estimate."""
        return time.perf_counter_ns()

    async def prepare(self, endpoint: Endpoint, source: PromptSource, connections: int, client: str = "auto") -> None:
        """Open a session (`client`: auto, lean or aiohttp; see StreamSession) and warm `connections`
        keep-alive connections."""
        await self.close()
        self._session = new_session(client)
        self._client_impl = self._session.impl_for(endpoint)
        self._endpoint = endpoint
        self._source = source
        await warm_connections(self._session, endpoint, connections)
        self._warmed = connections

    async def arm(self, step: GeneratorStep) -> dict[str, Any]:
        """The ready barrier: hold `step` and warm the connections its shard needs beyond those open."""
        if self._session is None or self._endpoint is None:
            raise RuntimeError("prepare() must be called before arm()")
        need = step.shard.concurrency
        if need > self._warmed:
            await warm_connections(self._session, self._endpoint, need)
            self._warmed = need
        self._armed = step
        return {"generator_id": self.generator_id, "connections": self._warmed}

    async def start(self, start_wall_ns: int) -> dict[str, Any]:
        """Run the armed step from the driver-clock instant `start_wall_ns`."""
        if self._armed is None:
            raise RuntimeError("arm() must be called before start()")
        step, self._armed = self._armed, None
        return await self.run(step, start_wall_ns)

    async def run(self, step: GeneratorStep, start_wall_ns: int) -> dict[str, Any]:
        """Run `step` from the driver-clock instant `start_wall_ns`; return this generator's report."""
        if self._session is None or self._endpoint is None or self._source is None:
            raise RuntimeError("prepare() must be called before run()")
        prefix = f"{records_prefix(step.engine_id, step.step_index)}/generator={self.generator_id}"
        self._writer = RecordWriter(self._store, prefix)
        base = {
            "run_id": step.run_id,
            "engine_id": step.engine_id,
            "step_index": step.step_index,
            "attempt": step.attempt,
            "generator_id": self.generator_id,
            "node_id": self.node_id,
            "phase": step.phase,
            "target_concurrency": step.target_concurrency,
            "target_rate_per_s": step.target_rate_per_s,
            "wall_offset_ns": step.wall_offset_ns,
        }
        writer = self._writer
        monitor = LoopLagMonitor()
        monitor.start()
        runner = run_open_loop if step.shard.rate_per_s is not None else run_closed_loop
        start_ns = start_wall_ns - step.wall_offset_ns
        woke_ns = await _sleep_until(start_ns)
        result = await runner(
            self._session, self._endpoint, self._source, step.shard, start_ns, lambda row: writer.add({**base, **row})
        )
        stats = await monitor.stop()
        rows = await writer.close()
        return {
            "generator_id": self.generator_id,
            "node_id": self.node_id,
            "issued": result.issued,
            "records": rows,
            "attempt": step.attempt,
            "concurrency": step.shard.concurrency,
            "client_impl": self._client_impl,
            "max_requests": step.shard.max_requests,
            "active": _active(step.shard),
            "started_wall_ns": woke_ns + step.wall_offset_ns,
            "reached_target_ns": _to_wall(result.reached_target_ns, step.wall_offset_ns),
            "stopped_issuing_ns": _to_wall(result.stopped_issuing_ns, step.wall_offset_ns),
            **stats,
        }

    def progress(self) -> int:
        """Records completed so far in the running step."""
        return self._writer.rows_written + self._writer.buffered if self._writer is not None else 0

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


async def _sleep_until(start_ns: int) -> int:
    """Wait for the common start instant precisely (not to the loop timer's millisecond); returns the wake."""
    clock = MonotonicClock()
    try:
        await clock.sleep_until(start_ns)
    finally:
        clock.close()
    return time.perf_counter_ns()


def _active(shard: Shard) -> bool:
    """Whether this generator has any load in the step (closed loop: slots; open loop: a request budget)."""
    if shard.rate_per_s is None:
        return shard.concurrency > 0
    return shard.max_requests is None or shard.max_requests > 0


def _to_wall(instant_ns: int | None, offset_ns: int) -> int | None:
    return None if instant_ns is None else instant_ns + offset_ns


@ray.remote
class LoadGeneratorActor:
    """The Ray actor: a threaded actor whose generator runs on its own loop thread (see LoopThread),
    so progress queries from the driver never wait behind, or delay, the timed streams."""

    def __init__(self, generator_id: str, store: ResultStore) -> None:
        self._loop = LoopThread(f"raybench-{generator_id}")
        self._gen = LoadGenerator(generator_id, store, ray.get_runtime_context().get_node_id())

    def node(self) -> str:
        return self._gen.node()

    def clock_ns(self) -> int:
        return self._gen.clock_ns()

    def prepare(self, endpoint: Endpoint, source: PromptSource, connections: int, client: str = "auto") -> None:
        self._loop.run(self._gen.prepare(endpoint, source, connections, client))

    def run(self, step: GeneratorStep, start_wall_ns: int) -> dict[str, Any]:
        return self._loop.run(self._gen.run(step, start_wall_ns))

    def arm(self, step: GeneratorStep) -> dict[str, Any]:
        return self._loop.run(self._gen.arm(step))

    def start(self, start_wall_ns: int) -> dict[str, Any]:
        return self._loop.run(self._gen.start(start_wall_ns))

    def progress(self) -> int:
        return self._gen.progress()

    def close(self) -> None:
        self._loop.run(self._gen.close())
        self._loop.stop()

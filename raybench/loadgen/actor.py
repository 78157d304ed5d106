"""LoadGeneratorActor: an async Ray actor that runs its shard of each step and stores its records."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

import aiohttp
import ray

from raybench.config.workload import SyntheticWorkloadSpec
from raybench.loadgen.closed_loop import Shard, run_closed_loop
from raybench.loadgen.endpoint import Endpoint
from raybench.loadgen.lag import LoopLagMonitor
from raybench.loadgen.loop_thread import LoopThread
from raybench.results.store import ResultStore
from raybench.results.writer import RecordWriter, records_prefix
from raybench.workloads.synthetic import SyntheticSource

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


class LoadGenerator:
    """The generator itself (no Ray): owns an HTTP session, runs shards, writes records."""

    def __init__(self, generator_id: str, store_uri: str, node_id: str = "") -> None:
        self.generator_id = generator_id
        self.node_id = node_id
        self._store = ResultStore(store_uri)
        self._session: aiohttp.ClientSession | None = None
        self._endpoint: Endpoint | None = None
        self._source: SyntheticSource | None = None
        self._writer: RecordWriter | None = None

    def node(self) -> str:
        """The Ray node this generator runs on."""
        return self.node_id

    def clock_ns(self) -> int:
        """This process's monotonic clock, sampled for the driver's offset estimate."""
        return time.perf_counter_ns()

    async def prepare(self, endpoint: Endpoint, workload: SyntheticWorkloadSpec, connections: int) -> None:
        """Open a session sized to `connections` and warm that many keep-alive connections."""
        await self.close()
        connector = aiohttp.TCPConnector(limit=0, limit_per_host=0, keepalive_timeout=60)
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=30)
        self._session = aiohttp.ClientSession(connector=connector, timeout=timeout, read_bufsize=1 << 20)
        self._endpoint = endpoint
        self._source = SyntheticSource(workload)
        await asyncio.gather(*(self._warm(i) for i in range(connections)))

    async def _warm(self, index: int) -> None:
        assert self._session is not None and self._endpoint is not None
        base = self._endpoint.base_urls[index % len(self._endpoint.base_urls)]
        try:
            async with self._session.get(base + "/v1/models") as response:
                await response.read()
        except aiohttp.ClientError:
            pass  # a failing endpoint shows up as failed records, where it is counted

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
            "generator_id": self.generator_id,
            "node_id": self.node_id,
            "phase": step.phase,
            "target_concurrency": step.target_concurrency,
            "target_rate_per_s": None,
            "wall_offset_ns": step.wall_offset_ns,
        }
        writer = self._writer
        monitor = LoopLagMonitor()
        monitor.start()
        result = await run_closed_loop(
            self._session,
            self._endpoint,
            self._source,
            step.shard,
            start_wall_ns - step.wall_offset_ns,
            lambda row: writer.add({**base, **row}),
        )
        stats = await monitor.stop()
        rows = await writer.close()
        return {
            "generator_id": self.generator_id,
            "node_id": self.node_id,
            "issued": result.issued,
            "records": rows,
            "concurrency": step.shard.concurrency,
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


def _to_wall(instant_ns: int | None, offset_ns: int) -> int | None:
    return None if instant_ns is None else instant_ns + offset_ns


@ray.remote
class LoadGeneratorActor:
    """The Ray actor: a threaded actor whose generator runs on its own loop thread (see LoopThread),
    so progress queries from the driver never wait behind, or delay, the timed streams."""

    def __init__(self, generator_id: str, store_uri: str) -> None:
        self._loop = LoopThread(f"raybench-{generator_id}")
        self._gen = LoadGenerator(generator_id, store_uri, ray.get_runtime_context().get_node_id())

    def node(self) -> str:
        return self._gen.node()

    def clock_ns(self) -> int:
        return self._gen.clock_ns()

    def prepare(self, endpoint: Endpoint, workload: SyntheticWorkloadSpec, connections: int) -> None:
        self._loop.run(self._gen.prepare(endpoint, workload, connections))

    def run(self, step: GeneratorStep, start_wall_ns: int) -> dict[str, Any]:
        return self._loop.run(self._gen.run(step, start_wall_ns))

    def progress(self) -> int:
        return self._gen.progress()

    def close(self) -> None:
        self._loop.run(self._gen.close())
        self._loop.stop()

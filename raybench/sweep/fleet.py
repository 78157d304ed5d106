"""The fleet of LoadGenerator actors: placement, clock offsets, and splitting a step's load across them."""

from __future__ import annotations

import contextlib
import time
from dataclasses import asdict, dataclass
from typing import Any

import ray

from raybench.config.job import FleetSpec
from raybench.config.workload import SyntheticWorkloadSpec
from raybench.loadgen.actor import GeneratorStep, LoadGeneratorActor
from raybench.loadgen.endpoint import Endpoint

__all__ = ["ClockOffset", "Fleet", "split_evenly"]


def split_evenly(total: int, parts: int) -> list[int]:
    """`total` split into `parts` integers differing by at most one; the first ones take the remainder."""
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


@dataclass(frozen=True)
class ClockOffset:
    """driver wall clock ≈ generator perf clock + offset_ns, known to ± uncertainty_ns (RTT/2)."""

    generator_id: str
    node_id: str
    offset_ns: int
    uncertainty_ns: int
    samples: int


class Fleet:
    """N generator actors spread across the cluster's nodes, created once per run."""

    def __init__(self, spec: FleetSpec, store_uri: str) -> None:
        self.spec = spec
        self.ids = [f"g{i}" for i in range(spec.generators)]
        self._actors = [
            LoadGeneratorActor.options(  # type: ignore[attr-defined]
                num_cpus=spec.num_cpus_per_generator,
                scheduling_strategy="SPREAD",
                max_concurrency=4,
            ).remote(gid, store_uri)
            for gid in self.ids
        ]
        self.node_ids: list[str] = ray.get([a.node.remote() for a in self._actors])
        self.offsets: list[ClockOffset] = []

    def measure_offsets(self, samples: int = 16) -> list[ClockOffset]:
        """NTP-style: keep the round trip with the smallest RTT for each generator."""
        self.offsets = [
            self._offset(gid, node, actor, samples) for gid, node, actor in zip(self.ids, self.node_ids, self._actors)
        ]
        return self.offsets

    @staticmethod
    def _offset(gid: str, node: str, actor: Any, samples: int) -> ClockOffset:
        best: tuple[int, int] | None = None
        for _ in range(samples):
            before = time.time_ns()
            remote_ns = ray.get(actor.clock_ns.remote())
            after = time.time_ns()
            rtt = after - before
            offset = (before + after) // 2 - remote_ns
            if best is None or rtt < best[0]:
                best = (rtt, offset)
        assert best is not None
        return ClockOffset(gid, node, best[1], best[0] // 2, samples)

    def prepare(self, endpoint: Endpoint, workload: SyntheticWorkloadSpec, max_concurrency: int) -> None:
        """Give every generator the endpoint and workload; warm connections for the largest step."""
        shares = split_evenly(max_concurrency, len(self._actors))
        ray.get([a.prepare.remote(endpoint, workload, n) for a, n in zip(self._actors, shares)])

    def submit(self, steps: list[GeneratorStep], start_wall_ns: int) -> list[Any]:
        """Start one step on all generators at the common instant; returns the pending reports."""
        return [a.run.remote(step, start_wall_ns) for a, step in zip(self._actors, steps)]

    def progress(self) -> int:
        """Requests completed so far in the running step, over the whole fleet."""
        return int(sum(ray.get([a.progress.remote() for a in self._actors])))

    def describe(self) -> list[dict[str, Any]]:
        """Each generator's id, node and clock offset, for provenance."""
        return [asdict(o) for o in self.offsets] or [
            {"generator_id": g, "node_id": n} for g, n in zip(self.ids, self.node_ids)
        ]

    def shutdown(self) -> None:
        for actor in self._actors:
            with contextlib.suppress(ray.exceptions.RayError):
                ray.get(actor.close.remote(), timeout=10)
            with contextlib.suppress(ray.exceptions.RayError):
                ray.kill(actor)
        self._actors = []

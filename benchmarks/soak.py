"""Soak: one real LoadGeneratorActor at steady closed-loop load against the loopback fake server for a
long time; its RSS and open file descriptors sampled after every step, every record counted.

    python benchmarks/soak.py --duration-s 3600 --concurrency 16      # an hour (its own local Ray)

Prints the figures as JSON. tests/integration/test_soak.py runs `soak()` for ~2 minutes on the shared
test cluster and asserts: RSS after warm-up vs end within 10 %, no fd growth, records == requests sent.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import tempfile
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import pyarrow.dataset as ds
import ray

from raybench.config.workload import SyntheticWorkloadSpec
from raybench.loadgen.actor import GeneratorStep, LoadGeneratorActor
from raybench.loadgen.closed_loop import Shard
from raybench.loadgen.endpoint import Endpoint
from raybench.results.store import ResultStore
from raybench.testing.fake_openai import FakeOpenAIServer, FakeServerThread, Script
from raybench.workloads import source_for

PROMPTS_PER_STEP = 10_000_000


@dataclass
class SoakFigures:
    """What a soak measured: per-step samples, and the totals the assertions use."""

    duration_s: float
    concurrency: int
    steps: int = 0
    requests_sent: int = 0  # what the generator issued
    records: int = 0  # what it stored (reports)
    records_read_back: int = 0  # rows found in the store afterwards
    requests_served: int = 0  # what the fake server received
    failed: int = 0
    rss_mib: list[float] = field(default_factory=list)  # after each step
    fds: list[int] = field(default_factory=list)
    baseline_step: int = 0  # the first step after warm-up

    @property
    def rss_growth_pct(self) -> float:
        base = self.rss_mib[self.baseline_step]
        return (self.rss_mib[-1] - base) / base * 100

    @property
    def fd_growth(self) -> int:
        return self.fds[-1] - self.fds[self.baseline_step]

    def summary(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(rss_growth_pct=round(self.rss_growth_pct, 2), fd_growth=self.fd_growth,
                    rss_baseline_mib=self.rss_mib[self.baseline_step], rss_end_mib=self.rss_mib[-1],
                    requests_per_s=round(self.requests_sent / self.duration_s, 1))  # fmt: skip
        return data


def _rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def _fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _step(index: int, concurrency: int, step_s: float, offset_ns: int) -> GeneratorStep:
    shard = Shard(concurrency=concurrency, duration_s=step_s, max_requests=None,
                  prompt_base=(index + 1) * PROMPTS_PER_STEP, prompt_stride=1, prompt_offset=0, timeout_s=30.0,
                  request_id_prefix=f"soak:{index}:")  # fmt: skip
    return GeneratorStep("soak", "fake", index, "measure", concurrency, shard, offset_ns)


def soak(out_uri: str, duration_s: float, concurrency: int = 8, step_s: float = 10.0,
         warmup_s: float = 20.0) -> SoakFigures:  # fmt: skip
    """Run steps of `step_s` back to back for `duration_s` on one generator actor (Ray must be initialised;
    the actor runs on this host, whose /proc it samples)."""
    figures = SoakFigures(duration_s=duration_s, concurrency=concurrency)
    store = ResultStore(out_uri)
    fake = FakeOpenAIServer(Script(ttft_ms=20, itl_ms=5), model="fake-model")
    with FakeServerThread([fake]):
        actor = LoadGeneratorActor.options(num_cpus=0.5).remote("g0", store)  # type: ignore[attr-defined]
        try:
            endpoint = Endpoint(base_urls=(fake.base_url,), model="fake-model")
            source = source_for(
                SyntheticWorkloadSpec.model_validate({"isl": {"mean": 32}, "osl": {"mean": 16, "std": 0}})
            )
            ray.get(actor.prepare.remote(endpoint, source, concurrency))
            pid = int(ray.get(actor.__ray_call__.remote(lambda _self: os.getpid())))
            offset_ns = time.time_ns() - int(ray.get(actor.clock_ns.remote()))
            started = time.monotonic()
            while time.monotonic() - started < duration_s:
                start_wall_ns = time.time_ns() + 50_000_000
                report = ray.get(actor.run.remote(_step(figures.steps, concurrency, step_s, offset_ns), start_wall_ns))
                figures.steps += 1
                figures.requests_sent += int(report["issued"])
                figures.records += int(report["records"])
                figures.rss_mib.append(round(_rss_mib(pid), 1))
                figures.fds.append(_fds(pid))
                if time.monotonic() - started < warmup_s:
                    figures.baseline_step = figures.steps  # the sample after the next step, once warm
            figures.baseline_step = min(figures.baseline_step, figures.steps - 1)
            ray.get(actor.close.remote())
        finally:
            ray.kill(actor)
        figures.requests_served = len(fake.streams)
    table = ds.dataset(store.path("engines/fake/records"), filesystem=store.filesystem, format="parquet").to_table()
    figures.records_read_back = table.num_rows
    figures.failed = table.num_rows - sum(1 for s in table.column("status").to_pylist() if s == "ok")
    return figures


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration-s", type=float, default=600.0)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--step-s", type=float, default=10.0)
    parser.add_argument("--warmup-s", type=float, default=20.0)
    parser.add_argument("--output", default=None, help="records folder (default: a temporary one)")
    args = parser.parse_args(argv)
    ray.init(address="local", _node_ip_address="127.0.0.1", include_dashboard=False, logging_level=logging.WARNING)
    try:
        with tempfile.TemporaryDirectory(prefix="raybench-soak-") as tmp:
            figures = soak(args.output or tmp, args.duration_s, args.concurrency, args.step_s, args.warmup_s)
            print(json.dumps(figures.summary(), indent=1))
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()

"""Open-loop (rate) steps through the whole job: a global Poisson schedule sharded over two generator
actors, a concurrency cap, every arrival sent once, at its instant, against the loopback fake server."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.dataset as ds
import pytest

from raybench.config import parse_job
from raybench.loadgen.schedule import arrival_offsets_ns
from raybench.sweep import run_job

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def fake_server() -> Iterator[str]:
    argv = [sys.executable, "-m", "raybench.testing.fake_openai", "--ttft-ms", "5", "--itl-ms", "2"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        yield f"http://127.0.0.1:{int(proc.stdout.readline())}/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_rate_steps_send_the_global_schedule(ray_cluster: Any, fake_server: str, tmp_path: Path) -> None:
    spec = parse_job({
        "name": "openloop", "model": {"name": "fake-model"},
        "engines": [{"kind": "endpoint", "id": "fake", "base_url": fake_server, "motor": "fake"}],
        "workload": {"isl": {"mean": 16}, "osl": {"mean": 4}},
        "load": {"mode": "rate", "rates_per_s": [40, 80], "requests": 60, "arrival": "poisson", "seed": 3,
                 "max_concurrency": 16},
        "slo": {"ttft_p99_ms": 1000, "itl_p50_ms": 100},
        "fleet": {"generators": 2}, "output": {"uri": str(tmp_path)},
    })  # fmt: skip
    result = run_job(spec)
    assert result.ok, result.failures
    records = tmp_path / result.run_id / "engines" / "fake" / "records"
    table = ds.dataset(records, format="parquet").to_table().to_pylist()
    for step, rate in enumerate([40.0, 80.0]):
        rows = [r for r in table if r["step_index"] == step]
        assert len(rows) == 60 and len({r["request_id"] for r in rows}) == 60
        assert {r["generator_id"] for r in rows} == {"g0", "g1"}
        assert all(r["status"] == "ok" and r["target_rate_per_s"] == rate for r in rows)
        wall = np.sort([r["scheduled_ns"] + r["wall_offset_ns"] for r in rows])
        expected = arrival_offsets_ns(rate, "poisson", 60, seed=3)
        # the common start instant is not in the records: compare the schedule's shape, to clock accuracy
        assert np.abs((wall - wall[0]) - (expected - expected[0])).max() < 5_000_000
        assert max(r["sent_ns"] - r["scheduled_ns"] for r in rows) < 1_000_000_000

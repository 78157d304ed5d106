"""The `endpoint` kind against a real loopback server raybench did not launch (the simulated engine)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest

from raybench.config import parse_job
from raybench.deploy import free_port
from raybench.sweep import run_job

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def sim_server() -> Iterator[str]:
    port = free_port("127.0.0.1")
    argv = [sys.executable, "-m", "raybench.engines.sim", "--port", str(port), "--model", "ext-model",
            "--iteration-overhead-ms", "2"]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and "ready" not in proc.stdout.readline():
            pass
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_endpoint_kind_chat_with_request_count(ray_cluster: Any, sim_server: str, tmp_path: Path) -> None:
    spec = parse_job({
        "name": "ext", "model": {"name": "ext-model"},
        "engines": [{"kind": "endpoint", "id": "ext", "base_url": sim_server, "motor": "sim-external"}],
        "workload": {"isl": {"mean": 32}, "osl": {"mean": 8}, "api": "chat"},
        "load": {"steps": [3, 5], "requests": 25}, "slo": {"ttft_p99_ms": 1000, "itl_p50_ms": 100},
        "fleet": {"generators": 2}, "output": {"uri": str(tmp_path)},
    })  # fmt: skip
    result = run_job(spec)
    assert result.ok, result.failures
    summary = result.summaries["ext"]
    assert summary["motor"] == "sim-external"
    assert [s["requests"] for s in summary["steps"]] == [25, 25]
    table = ds.dataset(tmp_path / result.run_id / "engines" / "ext" / "records", format="parquet").to_table()
    assert table.num_rows == 50
    assert set(table.column("generator_id").to_pylist()) == {"g0", "g1"}
    assert set(table.column("output_tokens").to_pylist()) == {8}

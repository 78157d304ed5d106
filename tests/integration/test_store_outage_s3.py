"""Object storage under stress, on loopback: generators writing concurrently to a real S3-compatible server
(moto), a server answering 503 for a while (FaultProxy) losing nothing, an outage past `output.max_outage_s`
stopping the run with the safe steps named, and bad credentials failing the preflight."""

from __future__ import annotations

import asyncio
import threading
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3  # type: ignore[import-untyped]
import pyarrow.compute as pc
import pytest
import yaml

from raybench.cli import main
from raybench.config import parse_job
from raybench.errors import StorageError
from raybench.results import RECORD_SCHEMA, RecordWriter, ResultStore
from raybench.sweep import run_job
from raybench.testing.fault_proxy import FaultProxy

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

REQUESTS = 24
JOB: dict[str, Any] = {
    "name": "s3run", "model": {"name": "sim-model"},
    "engines": [{"kind": "simulated", "id": "sim", "max_num_seqs": 32}],
    "workload": {"isl": {"mean": 32, "std": 0}, "osl": {"mean": 8, "std": 0}, "seed": 3},
    "load": {"steps": [3, 6], "requests": REQUESTS, "warmup_requests": 3},
    "slo": {"ttft_p99_ms": 2000, "itl_p50_ms": 100}, "validity": {"min_measured_requests": 1},
    "fleet": {"generators": 3, "num_cpus_per_generator": 0.25},
}  # fmt: skip


@pytest.fixture(scope="module")
def s3_env(s3_endpoint: str) -> Iterator[str]:
    """AWS variables for the whole module, set before the cluster starts so its workers inherit them."""
    with pytest.MonkeyPatch.context() as mp:
        for key, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing"),
                           ("AWS_REGION", "us-east-1"), ("AWS_ENDPOINT_URL", s3_endpoint)):  # fmt: skip
            mp.setenv(key, value)
        yield s3_endpoint


@pytest.fixture(scope="module")
def ray_cluster(s3_env: str, ray_cluster: Any) -> Any:
    return ray_cluster


@pytest.fixture
def s3_bucket(s3_env: str) -> str:
    name = f"rb-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=s3_env, region_name="us-east-1").create_bucket(Bucket=name)
    return name


def _row(generator: str, i: int) -> dict[str, Any]:
    return {"run_id": "r", "engine_id": "e", "step_index": 0, "generator_id": generator,
            "request_id": f"{generator}:{i}", "phase": "measure", "scheduled_ns": i, "sent_ns": i,
            "done_ns": i + 10, "status": "ok", "wall_offset_ns": 0}  # fmt: skip


def test_generators_write_concurrently_to_s3(ray_cluster: Any, s3_bucket: str) -> None:
    spec = parse_job({**JOB, "output": {"uri": f"s3://{s3_bucket}/runs"}})
    result = run_job(spec)
    assert result.ok, result.failures
    run = ResultStore(f"s3://{s3_bucket}/runs").child(result.run_id)
    assert run.exists("_COMPLETE") and run.exists("engines/sim/summary.json")
    table = run.read_table("engines/sim/records", schema=RECORD_SCHEMA)
    assert set(table.column("generator_id").to_pylist()) == {"g0", "g1", "g2"}
    ids = table.column("request_id").to_pylist()
    assert len(ids) == len(set(ids)) == 2 * REQUESTS + 3, "one row per request, none lost or written twice"


async def test_a_server_503ing_for_a_while_loses_nothing(s3_env: str, s3_bucket: str) -> None:
    rows_per_writer, writers = 300, 4
    with FaultProxy(s3_env) as proxy:
        store = ResultStore(f"s3://{s3_bucket}/flaky", endpoint_url=proxy.url, max_outage_s=20)
        group = [RecordWriter(store, f"records/generator=g{g}", flush_rows=40) for g in range(writers)]
        for i in range(rows_per_writer):
            if i == 60:
                proxy.fail_for(3.0)  # parts in flight and parts still to come meet the 503s
            for g, writer in enumerate(group):
                writer.add(_row(f"g{g}", i))
            await asyncio.sleep(0.005)
        stored = await asyncio.gather(*(w.close() for w in group))
        assert proxy.failed > 0, "the outage window was never hit"
    assert stored == [rows_per_writer] * writers
    ids = ResultStore(f"s3://{s3_bucket}/flaky").read_table("records", schema=RECORD_SCHEMA).column("request_id")
    assert sorted(ids.to_pylist()) == sorted(f"g{g}:{i}" for g in range(writers) for i in range(rows_per_writer))


def test_a_run_through_a_server_503ing_for_a_while_loses_nothing(
    ray_cluster: Any, s3_bucket: str, s3_env: str, tmp_path: Path
) -> None:
    with FaultProxy(s3_env) as proxy:
        runner, codes, _ = _start_run(tmp_path, s3_bucket, proxy.url, max_outage_s=16)
        _wait_for_step_0(s3_env, s3_bucket, runner)
        time.sleep(2.5)  # step 1 (4 s) stores its records at its end: the 503s begin before and outlast it
        proxy.fail_for(4.0)
        runner.join(timeout=120)
        assert proxy.failed > 0, "the outage window was never hit"
    assert codes == [0]
    (run_id,) = ResultStore(f"s3://{s3_bucket}/runs").list()
    table = ResultStore(f"s3://{s3_bucket}/runs").child(run_id).read_table("engines/sim/records", schema=RECORD_SCHEMA)
    measured = table.filter(pc.equal(table.column("phase"), "measure"))
    for k in (0, 1):
        ids = measured.filter(pc.equal(measured.column("step_index"), k)).column("request_id").to_pylist()
        assert len(ids) > 0 and len(ids) == len(set(ids)), f"step {k}: a record was written twice"
    summary = ResultStore(f"s3://{s3_bucket}/runs").child(run_id).read_json("engines/sim/summary.json")
    assert [s["requests"] for s in summary["steps"]] == [
        measured.filter(pc.equal(measured.column("step_index"), k)).num_rows for k in (0, 1)
    ], "every record of each step is stored"


def test_an_outage_past_the_bound_stops_the_run_naming_safe_steps(
    ray_cluster: Any, s3_bucket: str, s3_env: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FaultProxy(s3_env, error_code="ServiceUnavailable") as proxy:
        runner, codes, path = _start_run(tmp_path, s3_bucket, proxy.url, max_outage_s=2)
        s3 = _wait_for_step_0(s3_env, s3_bucket, runner)
        proxy.fail_for(600)  # storage goes away during step 1, for good
        runner.join(timeout=120)
        assert not runner.is_alive(), "the run did not stop"
        err = capsys.readouterr().err
        assert codes == [1], err
        assert "Traceback" not in err
        assert "unavailable for over 2 s (output.max_outage_s)" in err, err
        assert "safe (completion markers written): sim steps 0;" in err, err
        assert f"raybench run {path} --resume s3run-" in err, err
        assert _markers(s3, s3_bucket) == ["step=0.json"], "the step in flight must not be marked"

        proxy.fail_for(0)  # storage is back: the command the message gave finishes the run
        run_id = err.split("--resume ")[1].split()[0]
        assert main(["run", str(path), "--resume", run_id]) == 0
    assert _markers(s3, s3_bucket) == ["step=0.json", "step=1.json"]


def _start_run(
    tmp_path: Path, bucket: str, endpoint: str, max_outage_s: float
) -> tuple[threading.Thread, list[int], Path]:
    """`raybench run` (in this process, on the module's cluster) of a 2-step job writing through `endpoint`."""
    output = {"uri": f"s3://{bucket}/runs", "endpoint_url": endpoint, "max_outage_s": max_outage_s}
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump({**JOB, "load": {"steps": [2, 4], "duration_s": 4}, "output": output}))
    codes: list[int] = []
    runner = threading.Thread(target=lambda: codes.append(main(["run", str(path)])), daemon=True)
    runner.start()
    return runner, codes, path


def _wait_for_step_0(endpoint: str, bucket: str, runner: threading.Thread) -> Any:
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    deadline = time.monotonic() + 90
    while not _markers(s3, bucket):
        assert runner.is_alive() and time.monotonic() < deadline, "step 0 never completed"
        time.sleep(0.05)
    return s3


def _markers(s3: Any, bucket: str) -> list[str]:
    listing = s3.list_objects_v2(Bucket=bucket, Prefix="runs/")
    keys = [o["Key"] for o in listing.get("Contents", [])]
    return sorted(k.rsplit("/", 1)[1] for k in keys if "/steps/" in k and not k.endswith("/"))  # not folder keys


def test_bad_credentials_fail_the_preflight(s3_bucket: str, s3_env: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # moto accepts any key unless told to authenticate: with INITIAL_NO_AUTH_ACTION_COUNT at 0 (its
    # /moto-api/reset-auth endpoint sets it), only keys of IAM users created in moto are valid.
    _reset_auth(s3_env, "0")
    try:
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAWRONGWRONGWRONG1")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong")
        start = time.monotonic()
        with pytest.raises(StorageError, match=r"not writable.*check the credentials"):
            ResultStore(f"s3://{s3_bucket}/results").preflight()
        assert time.monotonic() - start < 20
    finally:
        _reset_auth(s3_env, "inf")


def _reset_auth(endpoint: str, count: str) -> None:
    url = f"{endpoint}/moto-api/reset-auth"
    request = urllib.request.Request(url, data=count.encode(), headers={"Content-Type": "text/plain"}, method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200

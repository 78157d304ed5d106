"""Server faults through a real run: one job, one endpoint engine per fault, each pointing at a loopback fake
server scripted to misbehave. Every request sent is one record with the right status; failures are counted
in the summary's error rate and raise the step's validity flag; tolerated oddities leave `ok` records.
Also here (one cluster for both): a results disk that fills up mid-run (a real size-limited tmpfs, filled
once step 0 is marked) stops the run naming the full disk, the safe steps and the resume command; once
space is freed the resumed run completes with every record of every step, none duplicated."""

from __future__ import annotations

import errno
import os
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest

from raybench.config import parse_job
from raybench.errors import RunAborted
from raybench.results.schema import select_attempt
from raybench.sweep import run_job
from raybench.sweep.driver import RunResult
from raybench.testing.fake_openai import FakeOpenAIServer, FakeServerThread, Script

pytestmark = [pytest.mark.integration, pytest.mark.timeout(400)]

REQUESTS = 12
TOKENS = 6
TIMEOUT_S = 1.5
NORMAL = Script(ttft_ms=5, itl_ms=2)


@dataclass(frozen=True)
class Fault:
    """A scripted fault and what raybench must record for the requests that hit it."""

    name: str
    script: Script
    every_third: bool  # only requests 1, 4, 7, 10 get the script (the others are normal), else all of them
    status: str  # of the faulty requests
    error_type: str | None  # None: any (the read path names transport errors), "" : none (an ok record)

    def faulty(self) -> int:
        return REQUESTS // 3 if self.every_third else self.count_all()

    def count_all(self) -> int:
        return self.script.burst_requests or REQUESTS

    def script_for(self) -> Callable[[int, dict[str, Any]], Script]:
        def pick(number: int, _body: dict[str, Any]) -> Script:
            return self.script if not self.every_third or number % 3 == 1 else NORMAL

        return pick


def _s(**faults: Any) -> Script:
    return Script(ttft_ms=5, itl_ms=2, **faults)


def _burst(status: int) -> Fault:
    script = _s(burst_status=status, burst_from=3, burst_requests=4)
    return Fault(f"burst-{status}", script, False, "http_error", f"http_{status}")


FAULTS = [
    _burst(429),
    _burst(500),
    _burst(503),
    Fault("reset", _s(reset_after_chunks=2), True, "disconnect", None),
    Fault("stall-resume", _s(stall_after_chunks=2, stall_ms=300), True, "ok", ""),
    Fault("stall-timeout", _s(stall_after_chunks=2, stall_ms=5000), True, "timeout", "timeout"),
    Fault("malformed", _s(malformed_after_chunks=2), True, "protocol_error", "malformed_event"),
    Fault("no-done", _s(send_done=False), True, "ok", ""),
    Fault("truncated", _s(end_after_chunks=2), True, "disconnect", "stream_incomplete"),
    Fault("oversize", _s(oversize_event_bytes=1 << 20), True, "ok", ""),
    Fault("html", Script(content_type="text/html"), True, "protocol_error", "wrong_content_type"),
    Fault("plain-json", Script(plain_json=True), True, "protocol_error", "not_streaming"),
    Fault("slow-headers", _s(header_delay_ms=300), True, "ok", ""),
    Fault("headers-timeout", Script(header_delay_ms=5000), True, "timeout", "timeout"),
]


@pytest.fixture(scope="module")
def faults_run(ray_cluster: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunResult, Path, Any]]:
    servers = [FakeOpenAIServer(script_for=f.script_for()) for f in FAULTS]
    with FakeServerThread(servers) as fakes:
        out = tmp_path_factory.mktemp("faults")
        engines = [{"kind": "endpoint", "id": f.name, "base_url": f"{s.base_url}/v1", "motor": "fake"}
                   for f, s in zip(FAULTS, fakes.servers)]  # fmt: skip
        spec = parse_job({
            "name": "faults", "model": {"name": "fake-model"}, "engines": engines,
            "workload": {"isl": {"mean": 16}, "osl": {"mean": TOKENS, "std": 0}},
            "load": {"steps": [2], "requests": REQUESTS, "request_timeout_s": TIMEOUT_S},
            "slo": {"ttft_p99_ms": 5000, "itl_p50_ms": 1000, "max_error_rate": 0.05},
            "validity": {"min_measured_requests": REQUESTS, "loop_lag_p99_ms": 1000, "queue_p99_ms": 1000,
                         "max_clock_uncertainty_ms": 1000},
            "fleet": {"generators": 1}, "output": {"uri": str(out)},
        })  # fmt: skip
        result = run_job(spec)
        yield result, out / result.run_id, fakes


def _records(run_dir: Path, engine_id: str) -> list[dict[str, Any]]:
    table = ds.dataset(run_dir / "engines" / engine_id / "records", format="parquet").to_table()
    return sorted(table.to_pylist(), key=lambda r: r["sent_ns"])


@pytest.mark.parametrize("fault", FAULTS, ids=[f.name for f in FAULTS])
def test_fault_is_recorded_counted_and_flagged(faults_run: tuple[RunResult, Path, Any], fault: Fault) -> None:
    result, run_dir, fakes = faults_run
    assert result.ok, result.failures  # faults fail requests, never the run
    assert (run_dir / "_COMPLETE").is_file()
    records = _records(run_dir, fault.name)
    served = fakes[FAULTS.index(fault)].streams
    assert len(records) == len(served) == REQUESTS, "one record per request sent, none lost, none invented"
    assert len({r["request_id"] for r in records}) == REQUESTS
    hit = [r for r in records if r["status"] == fault.status] if fault.status != "ok" else records
    assert len(hit) == (fault.faulty() if fault.status != "ok" else REQUESTS), [r["status"] for r in records]
    assert all(r["status"] == "ok" for r in records if r not in hit)
    for r in hit:
        if fault.error_type:
            assert r["error_type"] == fault.error_type, r
            assert r["error_message"], r
        elif fault.error_type is None:
            assert r["error_type"] and r["error_message"], r
        else:
            assert r["error_type"] is None and r["output_tokens"] == TOKENS, r
        assert r["done_ns"] >= r["sent_ns"] > 0
    step = result.summaries[fault.name]["steps"][0]
    failed = 0 if fault.status == "ok" else len(hit)
    assert step["requests"] == REQUESTS and step["failed"] == failed
    assert step["error_rate"] == pytest.approx(failed / REQUESTS)
    assert step["errors_by_status"] == ({fault.status: failed} if failed else {})
    assert step["validity"]["error_rate_exceeded"] is bool(failed)
    assert step["valid"] is not bool(failed), step["notes"]


def test_burst_hits_exactly_its_window(faults_run: tuple[RunResult, Path, Any]) -> None:
    _result, run_dir, fakes = faults_run
    served = fakes[0].streams
    statuses = [s.status for s in served]
    assert statuses == ["ok"] * 3 + ["http_error"] * 4 + ["ok"] * 5
    assert {r["http_status"] for r in _records(run_dir, "burst-429") if r["status"] == "http_error"} == {429}


def test_stall_and_slow_headers_show_in_the_timings(faults_run: tuple[RunResult, Path, Any]) -> None:
    _result, run_dir, _fakes = faults_run
    stalled = _records(run_dir, "stall-resume")
    gaps_ms = [max(b - a for a, b in zip(r["chunk_ns"], r["chunk_ns"][1:])) / 1e6 for r in stalled]
    assert sum(g >= 290 for g in gaps_ms) == REQUESTS // 3, gaps_ms  # the stall is in the ITL, not hidden
    slow = _records(run_dir, "slow-headers")
    ttfts_ms = [(r["first_token_ns"] - r["sent_ns"]) / 1e6 for r in slow]
    assert sum(t >= 290 for t in ttfts_ms) == REQUESTS // 3, ttfts_ms  # header delay counts as TTFT


def test_oversize_event_is_parsed_whole(faults_run: tuple[RunResult, Path, Any]) -> None:
    _result, run_dir, _fakes = faults_run
    for r in _records(run_dir, "oversize"):
        assert r["status"] == "ok" and r["output_tokens"] == TOKENS and sum(r["chunk_tokens"]) == TOKENS


# -- a results disk that fills up mid-run ----------------------------------------------------------------

DISK_REQUESTS = 20


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs (needs root: mounting is the only honest way to get ENOSPC from the kernel)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a size-limited tmpfs needs root")
    argv = ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)]
    done = subprocess.run(argv, check=False, capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(disk: Path) -> Path:
    """Write one file until the kernel says the disk is full; returns it (delete it to free the space)."""
    filler = disk / f"filler-{uuid.uuid4().hex}"
    block = b"\0" * (64 << 10)
    with filler.open("wb", buffering=0) as stream:
        try:
            while True:
                stream.write(block)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
    return filler


def _fill_after_step_0(out: Path, stop: threading.Event, filled: list[Path]) -> None:
    while not stop.is_set():
        if list(out.glob("*/engines/disk/steps/step=0.json")):
            filled.append(_fill(out))
            return
        time.sleep(0.01)


def test_full_disk_stops_the_run_resumably(ray_cluster: Any, small_disk: Path) -> None:
    out = small_disk
    with FakeServerThread([FakeOpenAIServer(Script(ttft_ms=20, itl_ms=10))]) as fakes:
        spec = parse_job({
            "name": "diskfull", "model": {"name": "fake-model"},
            "engines": [{"kind": "endpoint", "id": "disk", "base_url": fakes[0].base_url, "motor": "fake"}],
            "workload": {"isl": {"mean": 16}, "osl": {"mean": 10, "std": 0}},
            "load": {"steps": [1, 2, 3], "requests": DISK_REQUESTS},
            "slo": {"ttft_p99_ms": 5000, "itl_p50_ms": 1000}, "fleet": {"generators": 1},
            "output": {"uri": str(out)},
        })  # fmt: skip
        stop, filled = threading.Event(), []
        watcher = threading.Thread(target=_fill_after_step_0, args=(out, stop, filled), daemon=True)
        watcher.start()
        try:
            with pytest.raises(RunAborted) as caught:
                run_job(spec, job_path="job.yaml")
        finally:
            stop.set()
            watcher.join(timeout=10)
        message = str(caught.value)
        (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
        assert filled, "the disk was never filled: the run finished first"
        assert "No space left on device" in message and "the disk is full" in message, message
        assert "disk steps 0" in message, message
        assert f"raybench run job.yaml --resume {run_dir.name}" in message, message
        assert not (run_dir / "_COMPLETE").exists()

        filled[0].unlink()  # space is back
        result = run_job(spec, resume=run_dir.name, job_path="job.yaml")
    assert result.ok, result.failures
    assert (run_dir / "_COMPLETE").is_file()
    table = ds.dataset(run_dir / "engines/disk/records", format="parquet").to_table()
    for step in result.summaries["disk"]["steps"]:
        rows = select_attempt(table.filter(pc.equal(table.column("step_index"), step["step_index"])), step["attempt"])
        ids = rows.column("request_id").to_pylist()
        assert len(ids) == len(set(ids)) == DISK_REQUESTS == step["requests"], step["step_index"]
    assert not list(run_dir.rglob(".tmp-*")), "a temporary part was left behind"

"""Secrets and hostile input: a real `raybench run` to S3 (moto) with an API key the fake server requires and
distinctive storage credentials, then every artifact is searched for them: every stored object (Parquet
decoded too), the engine log, the Ray session logs, stdout/stderr of run, runs and report, the HTML page.
Strings from the spec and the server carry <script>; the HTML report keeps them text. Specs never run code."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import boto3
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

import raybench
from raybench.testing.fake_openai import FakeOpenAIServer, FakeServerThread, Script

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

API_KEY = "sk-rbsecret-0f3c9a7d51e2"
ACCESS_KEY_ID = "AKIARBSECRET7Q2W9E4R"
SECRET_ACCESS_KEY = "rbsecret/Wq8v+Zx2Lm5Np7Rt9Kc3Hd6Jf1Gb4Ys0"
SECRETS = (API_KEY, ACCESS_KEY_ID, SECRET_ACCESS_KEY)
HOSTILE = "<script>alert(1)</script>"


def _env(s3_endpoint: str, ray_tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS" and not k.startswith("AWS_")}
    env.update(
        PYTHONPATH=os.pathsep.join([str(Path(raybench.__file__).parents[1]), env.get("PYTHONPATH", "")]),
        RB_TEST_API_KEY=API_KEY, AWS_ACCESS_KEY_ID=ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY=SECRET_ACCESS_KEY,
        AWS_REGION="us-east-1", AWS_ENDPOINT_URL=s3_endpoint, RAY_TMPDIR=str(ray_tmp),
    )  # fmt: skip
    return env


def _cli(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "raybench", *args], cwd=cwd, env=env, check=False,
                          capture_output=True, text=True, timeout=240)  # fmt: skip


@pytest.fixture
def ray_tmp() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="rbs", dir="/tmp"))  # short: Ray's socket paths must fit 107 bytes
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _stored(bucket: str, s3_endpoint: str) -> dict[str, bytes]:
    """Every object of the bucket, with each Parquet part's decoded rows appended as JSON text."""
    s3 = boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1",
                      aws_access_key_id="testing", aws_secret_access_key="testing")  # fmt: skip
    out: dict[str, bytes] = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for obj in page.get("Contents", []):
            data = s3.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read()
            if obj["Key"].endswith(".parquet"):
                rows = pq.read_table(pa.BufferReader(data)).to_pylist()
                data += json.dumps(rows, default=str).encode()
            out[obj["Key"]] = data
    return out


def test_no_secret_in_any_artifact_and_html_stays_text(bucket: str, s3_endpoint: str, tmp_path: Path,
                                                       ray_tmp: Path) -> None:  # fmt: skip
    hostile_error = Script(ttft_ms=5, itl_ms=2, burst_status=500, burst_from=2, burst_requests=2,
                           error_message=f"{HOSTILE} upstream said no")  # fmt: skip
    env = _env(s3_endpoint, ray_tmp)
    with FakeServerThread([FakeOpenAIServer(hostile_error, model=f"m-{HOSTILE}", api_key=API_KEY)]) as fakes:
        job = tmp_path / "job.yaml"
        job.write_text(yaml.safe_dump({
            "name": "secrets", "model": {"name": f"m-{HOSTILE}"},
            "engines": [
                {"kind": "endpoint", "id": "ext", "base_url": fakes[0].base_url, "api_key_env": "RB_TEST_API_KEY",
                 "config": HOSTILE},
                {"kind": "simulated", "id": "sim", "max_num_seqs": 8, "config": HOSTILE},
            ],
            "workload": {"isl": {"mean": 16}, "osl": {"mean": 6, "std": 0}},
            "load": {"steps": [2], "requests": 16}, "slo": {"ttft_p99_ms": 5000, "itl_p50_ms": 1000},
            "fleet": {"generators": 1, "num_cpus_per_generator": 0.5},
        }))  # fmt: skip
        run = _cli(["run", str(job), "--output", f"s3://{bucket}/results"], env, tmp_path)
        assert run.returncode == 0, run.stdout + run.stderr
        served = fakes[0].streams
    assert [s.status for s in served].count("ok") == 14, "the key reached the server on every request"
    runs = _cli(["runs", f"s3://{bucket}/results", "--json"], env, tmp_path)
    (run_id,) = [r["run_id"] for r in json.loads(runs.stdout)]
    page = tmp_path / "report.html"
    report = _cli(["report", f"s3://{bucket}/results/{run_id}", "--html", str(page)], env, tmp_path)
    assert report.returncode == 0, report.stdout + report.stderr

    stored = _stored(bucket, s3_endpoint)
    artifacts = {f"s3://{bucket}/{key}": data for key, data in stored.items()}
    for name, proc in (("run", run), ("runs", runs), ("report", report)):
        artifacts[f"{name} stdout"], artifacts[f"{name} stderr"] = proc.stdout.encode(), proc.stderr.encode()
    artifacts["report.html"] = page.read_bytes()
    ray_logs = [p for p in ray_tmp.rglob("*") if p.is_file() and not p.is_socket() and p.stat().st_size < 50 << 20]
    assert any("worker" in p.name for p in ray_logs), "the run's Ray session logs were not where expected"
    artifacts.update({str(p): p.read_bytes() for p in ray_logs})
    assert any(k.endswith("/logs/replica-0.log") for k in artifacts), sorted(stored)
    assert any(b"RB_TEST_API_KEY" in data for data in artifacts.values()), "the search would miss a stored spec"
    assert any(b"upstream said no" in data for data in artifacts.values()), "the search misses record text"
    leaks = [(name, secret) for name, data in artifacts.items() for secret in SECRETS if secret.encode() in data]
    assert not leaks, leaks

    html = page.read_text()
    assert "<script" not in html.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_python_tag_in_a_spec_is_refused_not_run(tmp_path: Path, command: str) -> None:
    flag = tmp_path / "pwned"
    job = tmp_path / "job.yaml"
    job.write_text(f"name: !!python/object/apply:os.system ['touch {flag}']\nmodel: {{name: m}}\n")
    env = {**os.environ, "PYTHONPATH": str(Path(raybench.__file__).parents[1])}
    done = subprocess.run([sys.executable, "-m", "raybench", command, str(job)], cwd=tmp_path, env=env,
                          check=False, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert "YAML tag refused" in done.stderr and "never code" in done.stderr, done.stderr
    assert not flag.exists(), "the spec ran code"

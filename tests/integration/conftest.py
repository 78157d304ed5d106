"""One small multi-node Ray cluster on 127.0.0.1, shared by the integration tests of a module."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import ray

from raybench.testing.local_cluster import LocalClusterSpec, NodeSpec, start_local_cluster


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[Any]:
    """A head and two worker nodes, every one bound to 127.0.0.1."""
    cluster = start_local_cluster(LocalClusterSpec(workers=[NodeSpec(), NodeSpec()]))
    try:
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """An S3-compatible server (moto) on 127.0.0.1, for the whole test session."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture
def bucket(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh bucket, with the standard AWS variables pointing at the loopback server."""
    import boto3

    for key, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing"),
                       ("AWS_REGION", "us-east-1"), ("AWS_ENDPOINT_URL", s3_endpoint)):  # fmt: skip
        monkeypatch.setenv(key, value)
    name = f"rb-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1").create_bucket(Bucket=name)
    return name

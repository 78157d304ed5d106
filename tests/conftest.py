"""Shared test setup: unit tests must never start Ray (an autouse guard makes ray.init raise)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

# Ray rewrites a loopback cluster address to the host's outward IP when a driver connects, unless
# "Ray clusters" are off; off, every node, driver and worker of the tests stays on 127.0.0.1.
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"


@pytest.fixture(autouse=True)
def _no_ray_in_unit_tests(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    if "tests/unit" in Path(str(request.node.fspath)).as_posix():
        import ray

        def refuse(*_args: object, **_kwargs: object) -> None:
            raise AssertionError("unit tests must not start Ray; move this test to tests/integration")

        monkeypatch.setattr(ray, "init", refuse)
    yield

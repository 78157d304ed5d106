"""A bounded soak in the default suite: ~2 minutes of steady closed-loop load through a real LoadGeneratorActor
against the loopback fake server (benchmarks/soak.py, which runs longer): the generator's RSS stays within
10 % of its post-warm-up value, it holds no more file descriptors at the end, and no record is lost."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import ray

pytestmark = [pytest.mark.integration, pytest.mark.timeout(400)]

DURATION_S = 120.0
ROOT = Path(__file__).resolve().parents[2]


def _soak_module() -> Any:
    spec = importlib.util.spec_from_file_location("raybench_soak", ROOT / "benchmarks" / "soak.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def one_node_ray() -> Iterator[None]:
    """One loopback node: the soak runs one generator on this host (it samples that process's /proc), and
    a single node starts in half the time of the shared three-node cluster."""
    ray.init(address="local", num_cpus=2, _node_ip_address="127.0.0.1", include_dashboard=False,
             logging_level="WARNING")  # fmt: skip
    try:
        yield
    finally:
        ray.shutdown()


def test_generator_memory_and_fds_stay_flat_and_no_record_is_lost(one_node_ray: None, tmp_path: Path) -> None:
    figures = _soak_module().soak(str(tmp_path / "records"), DURATION_S, concurrency=8, step_s=10.0, warmup_s=20.0)
    print("soak figures:", json.dumps(figures.summary()))  # the numbers docs/reliability.md records
    assert figures.steps >= DURATION_S / 10 and figures.requests_sent > 20 * DURATION_S, figures.summary()
    assert figures.requests_sent == figures.records == figures.records_read_back == figures.requests_served
    assert figures.failed == 0, figures.summary()
    assert abs(figures.rss_growth_pct) <= 10.0, figures.rss_mib
    # a leak of one socket or file per request would show thousands; Ray's own channels may add one or two
    assert figures.fd_growth <= 2, figures.fds

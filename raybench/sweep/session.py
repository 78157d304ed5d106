"""Which Ray to use: the cluster of a `ray job submit`, one already initialised, or an embedded local one."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager

import ray

from raybench.environment import in_ray_job

__all__ = ["ray_session"]


@contextmanager
def ray_session(min_cpus: int, dashboard: bool = False) -> Iterator[str]:
    """Yield a description of the Ray in use; stop it at the end only if this call started it."""
    if ray.is_initialized():
        yield "existing Ray session"
        return
    if in_ray_job():
        ray.init(address="auto", logging_level=logging.WARNING)
        try:
            yield "Ray cluster (joined)"
        finally:
            ray.shutdown()
        return
    ray.init(
        address="local",  # a fresh instance, never a cluster some other `ray start` left on this machine
        _node_ip_address="127.0.0.1",
        include_dashboard=dashboard,
        dashboard_host="127.0.0.1",
        num_cpus=max(os.cpu_count() or 1, min_cpus),
        logging_level=logging.WARNING,
        configure_logging=True,
    )
    try:
        yield "embedded local Ray (127.0.0.1)"
    finally:
        ray.shutdown()

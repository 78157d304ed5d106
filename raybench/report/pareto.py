"""The Pareto frontier of throughput against latency, and GPU counts for per-GPU figures.

A point is on the frontier when no other point has at least its throughput with at most its
latency while being strictly better on one of the two. Points with a missing (NaN) coordinate
are never on it.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["gpu_count", "pareto_mask"]

_GPU_LABEL = re.compile(r"(\d+)\s*[x\u00d7]", re.IGNORECASE)  # 4xH100, or with a multiplication sign


def pareto_mask(latency_ms: npt.ArrayLike, throughput: npt.ArrayLike) -> npt.NDArray[np.bool_]:
    """Which points are Pareto-optimal (lower latency and higher throughput are better)."""
    lat = np.asarray(latency_ms, dtype=np.float64).ravel()
    thr = np.asarray(throughput, dtype=np.float64).ravel()
    if lat.shape != thr.shape:
        raise ValueError(f"latency has {lat.size} points but throughput has {thr.size}; give one of each per point")
    finite = np.isfinite(lat) & np.isfinite(thr)
    lat_j, thr_j = lat[finite][None, :], thr[finite][:, None].T
    # Pairwise (points x points): sweeps have tens of steps per engine, so n^2 stays small.
    no_worse = (lat_j <= lat[:, None]) & (thr_j >= thr[:, None])
    better = (lat_j < lat[:, None]) | (thr_j > thr[:, None])
    dominated = np.any(no_worse & better, axis=1)
    return np.asarray(finite & ~dominated, dtype=np.bool_)


def gpu_count(summary: dict[str, Any]) -> tuple[int, bool]:
    """GPUs an engine used, and whether that number is known (True) or assumed to be 1 (False).

    From the engine args (``gpus``, or tensor x pipeline parallel x replicas) when they say,
    else from a hardware label such as ``4xH100_SXM`` or ``simulated-1xGPU``.
    """
    args = (summary.get("provenance") or {}).get("engine_args") or {}
    if isinstance(args.get("gpus"), int) and args["gpus"] > 0:
        return int(args["gpus"]), True
    parallel = [args.get(k) for k in ("tensor_parallel_size", "tp", "pipeline_parallel_size", "pp")]
    sizes = [int(v) for v in parallel if isinstance(v, int) and v > 0]
    if sizes:
        replicas = args["replicas"] if isinstance(args.get("replicas"), int) else 1
        return int(np.prod(sizes)) * max(1, replicas), True
    match = _GPU_LABEL.search(str(summary.get("hardware") or ""))
    if match and int(match.group(1)) > 0:
        return int(match.group(1)), True
    return 1, False

"""What a replica records about what really ran: engine version, environment subset, GPUs (no secrets)."""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import Any

import aiohttp

__all__ = ["ENV_KEYS", "env_subset", "gpu_inventory", "server_version"]

# The environment that decides what an engine does on its GPUs; never keys, tokens or passwords.
ENV_KEYS = (
    "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "NCCL_DEBUG", "NCCL_P2P_DISABLE",
    "NCCL_IB_DISABLE", "VLLM_USE_V1", "VLLM_ATTENTION_BACKEND", "PREFIX_CACHING", "ATTENTION", "OMP_NUM_THREADS",
)  # fmt: skip


def env_subset(extra: dict[str, str]) -> dict[str, str]:
    """ENV_KEYS as the server sees them (this process's environment plus the plan's additions)."""
    merged = {**os.environ, **extra}
    return {k: merged[k] for k in ENV_KEYS if k in merged}


def gpu_inventory(timeout_s: float = 10.0) -> list[dict[str, str]]:
    """One entry per GPU `nvidia-smi` lists (name, driver, memory); [] without nvidia-smi."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return []
    query = "--query-gpu=index,name,driver_version,memory.total,uuid"
    try:
        out = subprocess.run(
            [exe, query, "--format=csv,noheader"], check=False, capture_output=True, text=True, timeout=timeout_s
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    keys = ("index", "name", "driver_version", "memory_total", "uuid")
    return [dict(zip(keys, (p.strip() for p in line.split(",")))) for line in out.stdout.splitlines() if line.strip()]


async def server_version(base_url: str, probe: tuple[str, str] | None, timeout_s: float = 5.0) -> str | None:
    """The version the running server reports at `probe` = (path, JSON key); None when it does not."""
    if probe is None:
        return None
    path, key = probe
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout_s)) as session,
            session.get(base_url + path) as response,
        ):
            body: Any = await response.json(content_type=None) if response.status == 200 else None
    except (aiohttp.ClientError, TimeoutError, ValueError):
        return None
    value = body.get(key) if isinstance(body, dict) else None
    return str(value) if value not in (None, "") else None

"""Readiness of an OpenAI-compatible server: /health answers 200 and /v1/models lists the model."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import aiohttp

__all__ = ["ReadyState", "check_ready", "wait_ready"]


class ReadyState:
    """Result of one readiness probe: ready or not, and why not."""

    def __init__(self, ready: bool, reason: str = "", models: list[str] | None = None) -> None:
        self.ready = ready
        self.reason = reason
        self.models = models or []


async def check_ready(
    base_url: str, model: str, health_path: str | None = "/health", timeout_s: float = 5.0
) -> ReadyState:
    """Probe once; never raises."""
    timeout = aiohttp.ClientTimeout(total=timeout_s)
    try:
        async with aiohttp.ClientSession(timeout=timeout) as session:
            if health_path:
                async with session.get(base_url + health_path) as response:
                    if response.status != 200:
                        return ReadyState(False, f"{health_path} answered HTTP {response.status}")
            async with session.get(base_url + "/v1/models") as response:
                if response.status != 200:
                    return ReadyState(False, f"/v1/models answered HTTP {response.status}")
                body = await response.json(content_type=None)
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
        return ReadyState(False, f"{type(exc).__name__}: {exc}")
    models = [str(m.get("id")) for m in body.get("data", []) if isinstance(m, dict)] if isinstance(body, dict) else []
    if model not in models:
        return ReadyState(False, f"model {model!r} not among served models {models}", models)
    return ReadyState(True, "", models)


async def wait_ready(
    base_url: str,
    model: str,
    timeout_s: float,
    health_path: str | None = "/health",
    alive: Callable[[], bool] = lambda: True,
    interval_s: float = 0.25,
) -> ReadyState:
    """Poll until ready, the deadline, or `alive()` turns False (the process died)."""
    deadline = time.monotonic() + timeout_s
    state = ReadyState(False, "not probed yet")
    while time.monotonic() < deadline:
        if not alive():
            return ReadyState(False, "the server process exited")
        state = await check_ready(base_url, model, health_path)
        if state.ready:
            return state
        await asyncio.sleep(interval_s)
    return ReadyState(False, f"not ready within {timeout_s:g} s (last: {state.reason})", state.models)

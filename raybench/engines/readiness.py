"""Readiness of an OpenAI-compatible server: its own health rule, then /v1/models lists the model."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

import aiohttp

__all__ = ["ReadinessRule", "ReadyState", "check_ready", "served_model_state", "wait_ready"]


@dataclass(frozen=True)
class ReadinessRule:
    """An engine's readiness: `health_path` answers 200 (engines answer 503 or refuse while loading),
    every `extra_paths` answers 200 (e.g. TGI /info, SGLang /get_model_info), and /v1/models lists the model."""

    health_path: str | None = "/health"
    extra_paths: tuple[str, ...] = ()

    def describe(self) -> str:
        parts = [f"GET {p} -> 200" for p in ((self.health_path,) if self.health_path else ()) + self.extra_paths]
        return ", ".join([*parts, "GET /v1/models lists the served model"])


class ReadyState:
    """Result of one readiness probe: ready or not, and why not."""

    def __init__(self, ready: bool, reason: str = "", models: list[str] | None = None) -> None:
        self.ready = ready
        self.reason = reason
        self.models = models or []


async def check_ready(
    base_url: str,
    model: str,
    health_path: str | None = "/health",
    timeout_s: float = 5.0,
    extra_paths: tuple[str, ...] = (),
) -> ReadyState:
    """Probe once; never raises."""
    timeout = aiohttp.ClientTimeout(total=timeout_s)
    try:
        async with aiohttp.ClientSession(timeout=timeout) as session:
            for path in ((health_path,) if health_path else ()) + tuple(extra_paths):
                async with session.get(base_url + path) as response:
                    if response.status != 200:
                        return ReadyState(False, f"{path} answered HTTP {response.status}")
            return await served_model_state(session, base_url, model)
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
        return ReadyState(False, f"{type(exc).__name__}: {exc}")


async def served_model_state(session: aiohttp.ClientSession, base_url: str, model: str) -> ReadyState:
    """Ready when GET /v1/models lists `model`; transport errors are the caller's to catch."""
    async with session.get(base_url + "/v1/models") as response:
        if response.status != 200:
            return ReadyState(False, f"/v1/models answered HTTP {response.status}")
        body = await response.json(content_type=None)
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
    extra_paths: tuple[str, ...] = (),
) -> ReadyState:
    """Poll until ready, the deadline, or `alive()` turns False (the process died)."""
    deadline = time.monotonic() + timeout_s
    state = ReadyState(False, "not probed yet")
    while time.monotonic() < deadline:
        if not alive():
            return ReadyState(False, "the server process exited")
        state = await check_ready(base_url, model, health_path, extra_paths=extra_paths)
        if state.ready:
            return state
        await asyncio.sleep(interval_s)
    return ReadyState(False, f"not ready within {timeout_s:g} s (last: {state.reason})", state.models)

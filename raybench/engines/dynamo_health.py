"""Readiness of a Dynamo deployment: the frontend's /health body lists every expected worker, /v1/models the model.

The frontend answers `/health` with 200 and `{"status": "healthy", "instances": [...]}` as soon as it runs,
before any worker has registered; each instance names its `namespace`, `component` and `endpoint`. Ready
means: for every expected component (`backend` for aggregated and decode workers, `prefill` for prefill
workers), at least the expected number of distinct instances serve `generate`, and /v1/models lists the model.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import aiohttp

from raybench.engines.readiness import ReadyState, served_model_state

__all__ = ["check_dynamo_ready", "describe_rule", "missing_instances", "registered_instances", "wait_dynamo_ready"]


def registered_instances(body: Any, namespace: str) -> dict[str, int]:
    """component -> number of distinct instances serving `generate` in `namespace`, from a /health body."""
    seen: dict[str, set[str]] = {}
    instances = body.get("instances") if isinstance(body, dict) else None
    for item in instances if isinstance(instances, list) else []:
        if not isinstance(item, dict) or item.get("endpoint") != "generate" or item.get("namespace") != namespace:
            continue
        seen.setdefault(str(item.get("component")), set()).add(str(item.get("instance_id")))
    return {component: len(ids) for component, ids in seen.items()}


def missing_instances(body: Any, namespace: str, expected: dict[str, int]) -> str | None:
    """Why the body does not show every expected worker yet (None: it does)."""
    if not isinstance(body, dict):
        return "/health answered no JSON object"
    found = registered_instances(body, namespace)
    short = [f"{c}: {found.get(c, 0)} of {n}" for c, n in sorted(expected.items()) if found.get(c, 0) < n]
    return f"workers registered so far in namespace {namespace!r}: {', '.join(short)}" if short else None


def describe_rule(namespace: str, expected: dict[str, int]) -> str:
    wanted = ", ".join(f"{n} x {c}" for c, n in sorted(expected.items()))
    return f"GET /health lists {wanted} generate instances in namespace {namespace!r}, GET /v1/models lists the model"


async def check_dynamo_ready(
    base_url: str, model: str, namespace: str, expected: dict[str, int], timeout_s: float = 5.0
) -> ReadyState:
    """Probe the frontend once; never raises."""
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout_s)) as session:
            async with session.get(base_url + "/health") as response:
                if response.status != 200:
                    return ReadyState(False, f"/health answered HTTP {response.status}")
                health = await response.json(content_type=None)
            reason = missing_instances(health, namespace, expected)
            if reason:
                return ReadyState(False, reason)
            return await served_model_state(session, base_url, model)
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
        return ReadyState(False, f"{type(exc).__name__}: {exc}")


async def wait_dynamo_ready(
    base_url: str,
    model: str,
    namespace: str,
    expected: dict[str, int],
    timeout_s: float,
    alive: Callable[[], bool] = lambda: True,
    interval_s: float = 0.25,
) -> ReadyState:
    """Poll until ready, the deadline, or `alive()` turns False (a Dynamo process died)."""
    deadline = time.monotonic() + timeout_s
    state = ReadyState(False, "not probed yet")
    while time.monotonic() < deadline:
        if not alive():
            return ReadyState(False, f"a Dynamo process exited (last: {state.reason})")
        state = await check_dynamo_ready(base_url, model, namespace, expected)
        if state.ready:
            return state
        await asyncio.sleep(interval_s)
    return ReadyState(False, f"not ready within {timeout_s:g} s (last: {state.reason})", state.models)

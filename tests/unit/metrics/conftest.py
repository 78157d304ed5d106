"""Hand-built per-request records (RECORD_SCHEMA) for the metrics tests."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa
import pytest

from raybench.config.slo import SloSpec, ValiditySpec
from raybench.metrics import Window
from raybench.results.schema import RECORD_SCHEMA

MS = 1_000_000
S = 1_000_000_000

_AUTO: Any = object()
_ids = itertools.count()


def make_record(
    *,
    sent_ns: int = 0,
    chunk_ns: Sequence[int] = (),
    chunk_tokens: Sequence[int] | None = None,
    scheduled_ns: int | None = None,
    first_token_ns: Any = _AUTO,
    last_token_ns: Any = _AUTO,
    done_ns: int | None = None,
    output_tokens: Any = _AUTO,
    status: str = "ok",
    phase: str = "measure",
    wall_offset_ns: int = 0,
    **other: Any,
) -> dict[str, Any]:
    """One record; token instants, counts and done_ns follow from the chunks unless given."""
    tokens = list(chunk_tokens) if chunk_tokens is not None else [1] * len(chunk_ns)
    row: dict[str, Any] = {
        "run_id": "run",
        "engine_id": "eng",
        "step_index": 0,
        "generator_id": "g0",
        "node_id": "n0",
        "request_id": f"req-{next(_ids)}",
        "phase": phase,
        "target_concurrency": 8,
        "target_rate_per_s": None,
        "scheduled_ns": sent_ns if scheduled_ns is None else scheduled_ns,
        "sent_ns": sent_ns,
        "first_chunk_ns": chunk_ns[0] if chunk_ns else None,
        "first_token_ns": (chunk_ns[0] if chunk_ns else None) if first_token_ns is _AUTO else first_token_ns,
        "last_token_ns": (chunk_ns[-1] if chunk_ns else None) if last_token_ns is _AUTO else last_token_ns,
        "done_ns": done_ns if done_ns is not None else (chunk_ns[-1] if chunk_ns else sent_ns) + MS,
        "chunk_ns": list(chunk_ns),
        "chunk_tokens": tokens,
        "input_tokens": 16,
        "output_tokens": sum(tokens) if output_tokens is _AUTO else output_tokens,
        "token_count_source": "server_usage",
        "status": status,
        "http_status": 200 if status == "ok" else 500,
        "error_type": None if status == "ok" else "ServerError",
        "error_message": None if status == "ok" else "boom",
        "wall_offset_ns": wall_offset_ns,
        "prompt_fingerprint": "fp",
    }
    row.update(other)
    return row


def make_table(rows: Sequence[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(list(rows), schema=RECORD_SCHEMA)


def steady_record(start_ns: int, ttft_ms: float, itl_ms: float, n_tokens: int, **kw: Any) -> dict[str, Any]:
    """A request sent at start_ns with the given TTFT and a constant gap between n single tokens."""
    first = start_ns + round(ttft_ms * MS)
    chunks = [first + round(i * itl_ms * MS) for i in range(n_tokens)]
    return make_record(sent_ns=start_ns, chunk_ns=chunks, **kw)


@pytest.fixture(scope="session")
def rec() -> Callable[..., dict[str, Any]]:
    return make_record


@pytest.fixture(scope="session")
def steady() -> Callable[..., dict[str, Any]]:
    return steady_record


@pytest.fixture(scope="session")
def table() -> Callable[[Sequence[dict[str, Any]]], pa.Table]:
    return make_table


@pytest.fixture(scope="session")
def build() -> Callable[[Sequence[dict[str, Any]]], pa.Table]:
    """A table from a list of make_record keyword dicts."""
    return lambda kwargs: make_table([make_record(**kw) for kw in kwargs])


@pytest.fixture(scope="session")
def slo() -> SloSpec:
    return SloSpec(ttft_p99_ms=500, itl_p50_ms=30, max_error_rate=0.01)


@pytest.fixture(scope="session")
def validity() -> ValiditySpec:
    return ValiditySpec(min_measured_requests=1)


@pytest.fixture(scope="session")
def window() -> Window:
    return Window(0, 10 * S)

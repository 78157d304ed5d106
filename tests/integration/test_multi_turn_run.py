"""Multi-turn sessions through a real run on the simulated engine: session_id and turn in every record,
turns in order with their think time, and the history the engine saw equal to the source's prompts."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest

from raybench.config import parse_job
from raybench.sweep import run_job
from raybench.workloads import MultiTurnSource, source_for

pytestmark = pytest.mark.integration

THINK_S = 0.2


def test_multi_turn_chat_sessions_end_to_end(ray_cluster: Any, tmp_path: Path) -> None:
    workload = {"kind": "multi_turn", "api": "chat", "turns": {"mean": 3}, "user_tokens": {"mean": 12},
                "osl": {"distribution": "uniform", "min": 4, "max": 12}, "system_tokens": 20,
                "think_time": {"mean_s": THINK_S}}  # fmt: skip
    spec = parse_job({
        "name": "mt", "model": {"name": "sim-model"}, "engines": [{"kind": "simulated", "id": "sim"}],
        "workload": workload, "load": {"steps": [4], "requests": 24},
        "slo": {"ttft_p99_ms": 2000, "itl_p50_ms": 100}, "fleet": {"generators": 2}, "output": {"uri": str(tmp_path)},
    })  # fmt: skip
    result = run_job(spec)
    assert result.ok, result.failures
    table = ds.dataset(tmp_path / result.run_id / "engines" / "sim" / "records", format="parquet").to_table()
    rows = [r for r in table.to_pylist() if r["phase"] == "measure"]
    assert len(rows) == 24 and all(r["status"] == "ok" for r in rows)
    source = source_for(spec.workload)
    assert isinstance(source, MultiTurnSource)
    sessions: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        sessions.setdefault(row["session_id"], []).append(row)
    # 4 slots over 2 generators, 12 requests each: about 2 whole sessions of 3 turns per slot (a slot that
    # finishes early may start a third session, taking the last request its sibling would have sent)
    assert sum(len(t) == 3 for t in sessions.values()) >= 6
    for session_id, turns in sessions.items():
        turns.sort(key=lambda r: r["turn"])
        assert [r["turn"] for r in turns] == list(range(len(turns)))  # in order, none skipped
        planned = source.session(int(session_id[1:])).turns
        for row, prompt in zip(turns, planned):
            assert row["input_tokens"] == prompt.input_tokens  # the sim counts the words of every message
            assert row["requested_output_tokens"] == prompt.output_tokens == row["output_tokens"]
            assert row["prompt_fingerprint"] == prompt.fingerprint
        for prev, nxt in itertools.pairwise(turns):
            assert nxt["scheduled_ns"] - prev["done_ns"] >= THINK_S * 1e9  # the think time is waited
            assert nxt["sent_ns"] >= nxt["scheduled_ns"]
    assert result.summaries["sim"]["dataset"] == "multi_turn"

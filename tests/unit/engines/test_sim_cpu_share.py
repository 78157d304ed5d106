"""The simulator's own CPU share per step: exposed at /metrics, mapped by the adapter, summarized per step."""

from __future__ import annotations

import time

import pytest

from raybench.config.job import ModelSpec
from raybench.engines import adapter_for
from raybench.engines.metrics import DIALECTS, extract, parse_prometheus, summarize_step
from raybench.engines.sim.core import CoreStats
from raybench.engines.sim.exposition import render_metrics
from raybench.engines.simulated import SimulatedAdapter

STATS = CoreStats(
    running=16, waiting=3, kv_usage=0.01, kv_blocks=100, prompt_tokens_total=10, generation_tokens_total=20,
    iterations=5, requests_finished=2, requests_cancelled=0, preemptions=0, prefix_queries_tokens=10,
    prefix_hits_tokens=0,
)  # fmt: skip


def _adapter() -> SimulatedAdapter:
    from raybench.config.engine import ENGINE_SPECS

    spec = ENGINE_SPECS["simulated"].model_validate({"kind": "simulated"})
    adapter = adapter_for(spec, ModelSpec(name="sim", precision="fp8"), "sim-0")
    assert isinstance(adapter, SimulatedAdapter)
    return adapter


def _rows(replica: str, scraped_ns: int, text: str) -> list[dict[str, object]]:
    values = extract(parse_prometheus(text), _adapter().metric_map())
    return [
        {"step_index": 0, "replica": replica, "scraped_ns": scraped_ns, "metric": m, "source": s, "value": v}
        for m, (s, v) in values.items()
    ]


def test_the_adapter_maps_vllm_names_and_the_simulators_cpu_counter() -> None:
    metric_map = _adapter().metric_map()
    assert set(DIALECTS["vllm"].names) < set(metric_map.names)
    values = extract(parse_prometheus(render_metrics("sim", STATS, cpu_seconds=12.5)), metric_map)
    assert values["sim_cpu_seconds_total"] == ("raybench_sim_cpu_seconds_total", 12.5)
    assert values["running_requests"][1] == 16
    # a real vLLM exposes no such counter: its steps get no simulator share
    assert "sim_cpu_seconds_total" not in extract(parse_prometheus("process_cpu_seconds_total 3.0\n"), metric_map)


def test_step_share_is_cpu_seconds_per_wall_second_of_the_busiest_replica() -> None:
    second = 1_000_000_000
    rows = [
        *_rows("replica-0", 0, render_metrics("sim", STATS, cpu_seconds=10.0)),
        *_rows("replica-0", 4 * second, render_metrics("sim", STATS, cpu_seconds=10.2)),
        *_rows("replica-1", 0, render_metrics("sim", STATS, cpu_seconds=1.0)),
        *_rows("replica-1", 2 * second, render_metrics("sim", STATS, cpu_seconds=1.3)),
    ]
    summary = summarize_step(rows)
    assert summary["sim_cpu_share"] == pytest.approx(0.15)  # replica-1: 0.3 s of CPU over 2 s
    assert summary["running_requests_max"] == 16


def test_share_tracks_the_process_cpu_time_the_server_reports() -> None:
    # The server renders time.process_time(): a process busy for the whole interval shows about 1 core.
    first = render_metrics("sim", STATS, cpu_seconds=time.process_time())
    start_ns = time.monotonic_ns()
    while time.monotonic_ns() - start_ns < 200_000_000:
        sum(range(1000))
    end_ns = time.monotonic_ns()
    rows = _rows("replica-0", start_ns, first) + _rows(
        "replica-0", end_ns, render_metrics("sim", STATS, cpu_seconds=time.process_time())
    )
    assert 0.05 < summarize_step(rows)["sim_cpu_share"] < 1.5  # loose: the test machine is shared


def test_no_share_without_two_scrapes_of_the_counter() -> None:
    one = _rows("replica-0", 0, render_metrics("sim", STATS, cpu_seconds=1.0))
    assert summarize_step(one)["sim_cpu_share"] is None
    assert summarize_step([])["sim_cpu_share"] is None

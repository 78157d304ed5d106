"""The fleet on a real 3-node Ray cluster on 127.0.0.1: spreading, 1-vs-3 agreement, a generator killed mid-step.

Timing tolerances here hold on a loaded 2-core machine shared with other work: the issue's 2 ms
TTFT agreement is measured by benchmarks/fleet.py (docs/benchmarks.md), not asserted here.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest
import ray

from raybench.config import parse_job
from raybench.results.schema import select_attempt
from raybench.sweep import run_job

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

STEP_PROMPT_BASE = 10_000_000  # raybench.sweep.step._PROMPTS_PER_STEP: step k's prompts start at (k + 1) x this


def _job(out: Path, generators: int, requests: int, steps: list[int], **load: Any) -> Any:
    return parse_job({
        "name": "fleet", "model": {"name": "sim-model"},
        "engines": [{"kind": "simulated", "id": "sim", "max_num_seqs": 32}],
        "workload": {"isl": {"mean": 64, "std": 0}, "osl": {"mean": 24, "std": 0}, "seed": 3},
        "load": {"steps": steps, "requests": requests, **load},
        "slo": {"ttft_p99_ms": 2000, "itl_p50_ms": 100},
        "fleet": {"generators": generators, "num_cpus_per_generator": 0.5}, "output": {"uri": str(out)},
    })  # fmt: skip


def _records(out: Path, run_id: str) -> pa.Table:
    return ds.dataset(out / run_id / "engines" / "sim" / "records", format="parquet").to_table()


def test_three_generators_land_on_distinct_nodes_and_agree_with_one(ray_cluster: Any, tmp_path: Path) -> None:
    runs = {}
    for generators in (3, 1):
        result = run_job(_job(tmp_path, generators, requests=90, steps=[6], warmup_requests=6))
        assert result.ok, result.failures
        runs[generators] = result
    three = _records(tmp_path, runs[3].run_id)
    measured = three.filter(pc.equal(three.column("phase"), "measure"))
    by_gen = {g: set() for g in ("g0", "g1", "g2")}
    for g, n in zip(measured.column("generator_id").to_pylist(), measured.column("node_id").to_pylist()):
        by_gen[g].add(n)
    assert all(len(nodes) == 1 for nodes in by_gen.values())
    assert len(set().union(*by_gen.values())) == 3, f"generators share a node: {by_gen}"
    step3, step1 = runs[3].summaries["sim"]["steps"][0], runs[1].summaries["sim"]["steps"][0]
    assert step3["requests"] == step1["requests"] == 90
    shares = step3["generators"]
    assert [s["concurrency"] for s in shares] == [2, 2, 2] and [s["max_requests"] for s in shares] == [30, 30, 30]
    # Same server load, same prompts: the merged percentiles of 3 generators match 1 generator's.
    # Loose bounds (a loaded 2-core machine); the 2 ms figure is benchmarks/fleet.py's.
    assert step3["ttft_p50_ms"] == pytest.approx(step1["ttft_p50_ms"], abs=15, rel=0.25)
    assert step3["ttft_p99_ms"] == pytest.approx(step1["ttft_p99_ms"], abs=40, rel=0.5)
    assert step3["start_skew_ms"] is not None and step3["start_skew_ms"] < 50


def _kill_generator_mid_step(out: Path, generator: str, stop: threading.Event) -> list[str]:
    """Once the warm-up's records exist (step 0 is starting), wait a little and kill `generator`."""
    killed: list[str] = []
    while not stop.is_set():
        warm = list(out.glob("*/engines/sim/records/step=-1/generator=*/part-*.parquet"))
        names = [str(n) for n in ray.util.list_named_actors()]
        victim = next((n for n in names if n.endswith(f"-{generator}-0")), None)
        if warm and victim:
            time.sleep(1.0)
            ray.kill(ray.get_actor(victim), no_restart=True)
            killed.append(victim)
            return killed
        time.sleep(0.05)
    return killed


def test_killed_generator_step_is_rerun_without_duplicates_or_gaps(ray_cluster: Any, tmp_path: Path) -> None:
    spec = _job(tmp_path, 3, requests=150, steps=[6], warmup_requests=6)
    stop = threading.Event()
    killed: list[str] = []
    killer = threading.Thread(target=lambda: killed.extend(_kill_generator_mid_step(tmp_path, "g1", stop)))
    killer.start()
    try:
        result = run_job(spec)
    finally:
        stop.set()
        killer.join(timeout=10)
    assert killed, "the generator was never killed"
    assert result.ok, result.failures
    step = result.summaries["sim"]["steps"][0]
    assert step["attempt"] == 1 and step["lost_attempts"] == [{"attempt": 0, "generators": ["g1"]}]
    assert step["requests"] == 150
    table = _records(tmp_path, result.run_id)
    step0 = table.filter(pc.equal(table.column("step_index"), 0))
    counted = select_attempt(step0, 1)
    ids = counted.column("request_id").to_pylist()
    assert len(ids) == len(set(ids)) == 150, "the counted attempt has duplicates or gaps"
    assert {int(i.rsplit(":", 1)[1]) - STEP_PROMPT_BASE for i in ids} == set(range(150))
    dead = select_attempt(step0, 0)
    assert set(dead.column("attempt").to_pylist()) <= {0}  # the dead attempt's records stay, labelled
    assert result.summaries["sim"]["provenance"]["generators_revived"][0]["generator_id"] == "g1"


def test_timed_warmup_and_extension_past_the_listed_steps(ray_cluster: Any, tmp_path: Path) -> None:
    spec = _job(tmp_path, 2, requests=12, steps=[2], warmup_s=0.5, extend_past_knee=True, max_steps=3)
    result = run_job(spec)
    assert result.ok, result.failures
    steps = result.summaries["sim"]["steps"]
    assert [s["concurrency"] for s in steps] == [2, 4, 8]  # x2 past a single listed step, capped by max_steps
    assert all(s["requests"] == 12 for s in steps)  # warm-up records are excluded from every step
    table = _records(tmp_path, result.run_id)
    warm = table.filter(pc.equal(table.column("phase"), "warmup"))
    assert warm.num_rows > 0 and set(warm.column("step_index").to_pylist()) == {-1}
    markers = sorted(p.name for p in (tmp_path / result.run_id / "engines" / "sim" / "steps").iterdir())
    assert markers == ["step=0.json", "step=1.json", "step=2.json"]

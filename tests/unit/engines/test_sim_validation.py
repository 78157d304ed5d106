"""benchmarks/sim_validation.py reproduces the error column of docs/simulator.md, row by row."""

from __future__ import annotations

import asyncio
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from raybench.engines.sim import SimConfig
from raybench.engines.sim.planning import closed_loop

ROOT = Path(__file__).resolve().parents[3]
_MINUS = "\N{MINUS SIGN}"  # docs write negative errors with U+2212
_ROW = re.compile(r"^\| (?P<key>[A-Z]\d+) \|.*\| \**(?P<error>[+\N{MINUS SIGN}-]\d+) %\** \|$")


def _validation() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sim_validation", ROOT / "benchmarks" / "sim_validation.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


def _documented_errors() -> dict[str, int]:
    text = (ROOT / "docs" / "simulator.md").read_text()
    section = text.split("## Checked against public measurements", 1)[1].split("### What the errors say", 1)[0]
    rows = (_ROW.match(line) for line in section.splitlines())
    return {m["key"]: int(m["error"].replace(_MINUS, "-")) for m in rows if m}


VALIDATION = _validation()
DOCUMENTED = _documented_errors()


def test_every_check_is_documented_and_every_documented_row_is_checked() -> None:
    assert {check.key for check in VALIDATION.CHECKS} == set(DOCUMENTED)
    assert len(DOCUMENTED) >= 30


@pytest.mark.parametrize("check", VALIDATION.CHECKS, ids=lambda c: c.key)
def test_the_documented_error_is_what_the_simulator_gives_now(check: Any) -> None:
    simulated = VALIDATION.simulate(check)
    error = 100.0 * (simulated - check.measured) / check.measured
    assert error == pytest.approx(DOCUMENTED[check.key], abs=1.0), (check.key, simulated)


def test_the_analytic_batch_agrees_with_the_discrete_event_engine_at_batch_one() -> None:
    config = SimConfig(model_preset="llama-3.1-8b", precision="bf16", tp=1)
    cycle_s = VALIDATION.batch_cycle_s(config, 1, 256, 64)
    result = asyncio.run(closed_loop(config, 1, isl=256, osl=64, duration_s=2.0))
    per_request_s = (sum(result.ttft_ms) + sum(result.itl_ms)) / 1e3 / result.requests
    assert per_request_s == pytest.approx(cycle_s, rel=0.02)


def test_saturated_batch_is_whole_sequences_that_fit_the_cache() -> None:
    config = SimConfig(model_preset="llama-3.1-8b", profile="trtllm", precision="fp8", tp=1, max_num_seqs=2048)
    batch = VALIDATION.saturated_batch(config, 128, 2048)
    assert batch == config.resolve().kv_cache_tokens // (128 + 2048)
    assert VALIDATION.saturated_batch(SimConfig(max_num_seqs=16), 128, 128) == 16

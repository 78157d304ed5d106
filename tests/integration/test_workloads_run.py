"""Non-synthetic workloads through a real run: ShareGPT with a local tokenizer, shared prefix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest

from raybench.config import parse_job
from raybench.sweep import run_job
from raybench.testing.tiny_model import build_tiny_model_dir

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def _job(workload: dict[str, Any], out: Path, tokenizer: str | None = None) -> Any:
    return parse_job({
        "name": "wl", "model": {"name": "sim-model", "tokenizer": tokenizer},
        "engines": [{"kind": "simulated", "id": "sim"}], "workload": workload,
        "load": {"steps": [4], "requests": 24}, "slo": {"ttft_p99_ms": 2000, "itl_p50_ms": 100},
        "fleet": {"generators": 2}, "output": {"uri": str(out)},
    })  # fmt: skip


def test_sharegpt_with_local_tokenizer(ray_cluster: Any, tmp_path: Path) -> None:
    tokenizer = str(build_tiny_model_dir(tmp_path / "tok"))
    sample = str(ROOT / "examples" / "data" / "sharegpt_sample.json")
    workload = {"kind": "sharegpt", "path": sample, "max_isl": 1500, "max_osl": 4000,
                "osl": {"distribution": "uniform", "min": 8, "max": 32}}  # fmt: skip
    spec = _job(workload, tmp_path / "r", tokenizer)
    result = run_job(spec)
    assert result.ok, result.failures
    summary = result.summaries["sim"]
    assert summary["dataset"] == "sharegpt"
    prov = summary["provenance"]
    assert prov["token_counter"]["exact"] is True and prov["token_counter"]["identity"].startswith("hf:")
    assert prov["workload"]["loaded"]["kept"] > 0
    table = ds.dataset(tmp_path / "r" / result.run_id / "engines" / "sim" / "records", format="parquet").to_table()
    assert table.num_rows == 24
    assert 8 <= min(table.column("output_tokens").to_pylist()) <= max(table.column("output_tokens").to_pylist()) <= 32


def test_shared_prefix_prompts_reach_the_engine(ray_cluster: Any, tmp_path: Path) -> None:
    workload = {"kind": "shared_prefix", "groups": 2, "prefix_tokens": 100, "suffix_tokens": {"mean": 10},
                "osl": {"mean": 4}}  # fmt: skip
    result = run_job(_job(workload, tmp_path))
    assert result.ok, result.failures
    table = ds.dataset(tmp_path / result.run_id / "engines" / "sim" / "records", format="parquet").to_table()
    assert table.num_rows == 24
    assert set(table.column("input_tokens").to_pylist()) == {
        110
    }  # 100-token prefix + 10-token suffix, as the sim counts

"""Matrix expansion: cells, exclusions, per-cell overrides, validation of every cell up front."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from raybench.cli import main
from raybench.config.matrix import MatrixSpec
from raybench.errors import ConfigError
from raybench.sweep.matrix import expand, load_matrix

BASE: dict[str, Any] = {
    "name": "base", "model": {"name": "placeholder"}, "engines": [{"kind": "simulated"}],
    "workload": {"isl": {"mean": 64}, "osl": {"mean": 16}}, "load": {"steps": [1, 2], "duration_s": 1},
    "slo": {"ttft_p99_ms": 500, "itl_p50_ms": 30},
}  # fmt: skip
MATRIX: dict[str, Any] = {
    "name": "mx",
    "base": BASE,
    "models": [
        {"name": "m-8b", "precision": "bf16"},
        {"name": "m-8b", "precision": "fp8"},
        {"name": "m-70b", "precision": "fp8"},
    ],
    "engines": [{"kind": "simulated", "id": "v"}, {"kind": "simulated", "id": "s", "max_num_seqs": 8}],
    "configs": {"default": {}, "long": {"workload.isl.mean": 512}},
    "exclude": [{"model": "m-70b", "config": "long"}],
    "overrides": [{"match": {"engine": "s", "precision": "fp8"}, "set": {"load.steps": [4, 8]}}],
}


def test_expands_cells_minus_exclusions_with_overrides() -> None:
    cells = expand(MatrixSpec.model_validate(MATRIX), BASE)
    assert len(cells) == 3 * 2 * 2 - 2
    names = [c.name for c in cells]
    assert len(set(names)) == len(names)
    assert "mx-m-8b-fp8-s-long" in names and "mx-m-70b-fp8-v-long" not in names
    by_name = {c.name: c.spec for c in cells}
    assert by_name["mx-m-8b-bf16-v-long"].workload.isl.mean == 512  # type: ignore[union-attr]
    assert by_name["mx-m-8b-fp8-s-default"].load.steps == [4, 8]
    assert by_name["mx-m-8b-bf16-s-default"].load.steps == [1, 2]
    assert by_name["mx-m-70b-fp8-s-default"].model.precision == "fp8"
    assert all(len(c.spec.engines) == 1 for c in cells)


def test_bad_cell_is_reported_before_anything_runs() -> None:
    bad = {**MATRIX, "configs": {"default": {}, "broken": {"load.duration_s": -1}}}
    with pytest.raises(ConfigError) as info:
        expand(MatrixSpec.model_validate(bad), BASE)
    assert any("load.duration_s" in p.path for p in info.value.problems)


def test_engines_need_ids() -> None:
    with pytest.raises(ValueError, match="distinct `id`"):
        MatrixSpec.model_validate({**MATRIX, "engines": [{"kind": "simulated"}]})


def test_all_excluded() -> None:
    with pytest.raises(ConfigError, match="every cell is excluded"):
        expand(MatrixSpec.model_validate({**MATRIX, "exclude": [{}]}), BASE)


def test_base_file_relative_to_matrix_and_dry_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(BASE))
    (tmp_path / "m.yaml").write_text(yaml.safe_dump({**MATRIX, "base": "base.yaml"}))
    spec, base = load_matrix(tmp_path / "m.yaml")
    assert base["name"] == "base" and spec.name == "mx"
    assert main(["matrix", str(tmp_path / "m.yaml"), "--dry-run"]) == 0
    assert "10 cells" in capsys.readouterr().out


def test_shipped_matrix_example_expands(capsys: pytest.CaptureFixture[str]) -> None:
    root = Path(__file__).resolve().parents[3]
    spec, base = load_matrix(root / "jobs" / "matrix-example.yaml")
    cells = expand(spec, base)
    assert len(cells) == 8
    presets = {(c.coords["model"], c.coords["precision"]): c.spec.engines[0] for c in cells}
    assert presets[("llama-3.1-8b", "bf16")].model_preset == "llama-3.1-8b"  # type: ignore[union-attr]
    assert presets[("llama-3.1-70b", "fp8")].precision == "fp8"  # type: ignore[union-attr]
    assert main(["validate", str(root / "jobs")]) == 0
    assert "matrix matrix-example, 8 cells" in capsys.readouterr().err

"""Job spec validation: every bad input gives one problem per mistake, with its path and a fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from raybench.config import JobSpec, load_job, parse_job
from raybench.errors import ConfigError

GOOD: dict[str, Any] = {
    "name": "t",
    "model": {"name": "m", "precision": "fp8"},
    "engines": [{"kind": "simulated"}, {"kind": "endpoint", "base_url": "http://127.0.0.1:8000/v1"}],
    "workload": {"isl": {"mean": 128}, "osl": {"mean": 32}},
    "load": {"steps": [1, 2, 4], "duration_s": 5},
    "slo": {"ttft_p99_ms": 500, "itl_p50_ms": 30},
}


def _problems(data: Any, overrides: list[str] | None = None) -> dict[str, str]:
    with pytest.raises(ConfigError) as info:
        parse_job(data, overrides=overrides)
    return {p.path: p.message for p in info.value.problems}


def _with(path: str, value: Any) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(yaml.safe_dump(GOOD))
    node: Any = data
    parts = path.split(".")
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if isinstance(node, list):
        node[int(parts[-1])] = value
    else:
        node[parts[-1]] = value
    return data


def test_good_spec_parses_with_defaults() -> None:
    spec = parse_job(GOOD)
    assert isinstance(spec, JobSpec)
    assert spec.engine_ids() == ["simulated-0", "endpoint-1"]
    assert spec.engines[1].base_url == "http://127.0.0.1:8000"  # type: ignore[union-attr]
    assert spec.output.uri == "./results"
    assert spec.fleet.generators == 1
    assert spec.workload.seed == 0


def test_unknown_key_names_path_and_suggests() -> None:
    problems = _problems(_with("engines.0.max_num_seq", 4))
    assert "engines.0.max_num_seq" in problems
    assert "did you mean 'max_num_seqs'" in problems["engines.0.max_num_seq"]


def test_unknown_top_level_key_lists_allowed_keys() -> None:
    problems = _problems({**GOOD, "sloo": {}})
    assert "allowed keys here" in problems["sloo"].lower()
    assert "slo" in problems["sloo"]


def test_wrong_types_each_reported() -> None:
    data = _with("load.steps", [1, "x"])
    data["workload"]["isl"]["mean"] = "ten"
    problems = _problems(data)
    assert problems["load.steps.1"].startswith("must be a whole number")
    assert problems["workload.isl.mean"].startswith("must be a whole number")


def test_empty_steps() -> None:
    assert "must not be empty" in _problems(_with("load.steps", []))["load.steps"]


def test_negative_duration() -> None:
    assert "greater than 0" in _problems(_with("load.duration_s", -3))["load.duration_s"]


def test_duration_and_requests_are_exclusive() -> None:
    data = _with("load.requests", 100)
    assert "exactly one of" in _problems(data)["load"]


def test_repeated_and_nonpositive_steps() -> None:
    assert "repeat" in _problems(_with("load.steps", [1, 1]))["load"]
    assert ">= 1" in _problems(_with("load.steps", [0, 2]))["load"]


def test_unknown_engine_kind_lists_kinds() -> None:
    message = _problems(_with("engines.0", {"kind": "warp"}))["engines.0.kind"]
    assert "simulated" in message and "endpoint" in message and "'warp'" in message


def test_missing_required_says_what_to_add() -> None:
    data = yaml.safe_load(yaml.safe_dump(GOOD))
    del data["slo"]["itl_p50_ms"]
    assert "add `itl_p50_ms:" in _problems(data)["slo.itl_p50_ms"]


def test_endpoint_url_must_be_http() -> None:
    assert "http://" in _problems(_with("engines.1.base_url", "127.0.0.1:8000"))["engines.1.base_url"]


def test_duplicate_engine_ids() -> None:
    data = _with("engines", [{"kind": "simulated", "id": "a"}, {"kind": "simulated", "id": "a"}])
    assert "distinct `id`" in next(iter(_problems(data).values()))


def test_not_a_mapping() -> None:
    assert "YAML mapping" in _problems(["a"])[""]
    assert "empty file" in _problems(None)[""]


def test_overrides_apply_and_validate() -> None:
    spec = parse_job(GOOD, overrides=["load.duration_s=30", "engines.0.max_num_seqs=8", "output.uri=s3://b/p"])
    assert spec.load.duration_s == 30
    assert spec.engines[0].max_num_seqs == 8  # type: ignore[union-attr]
    assert spec.output.uri == "s3://b/p"
    assert "greater than 0" in _problems(GOOD, ["load.duration_s=-1"])["load.duration_s"]


def test_bad_override_syntax() -> None:
    problems = _problems(GOOD, ["load.duration_s", "engines.7.x=1"])
    assert "path=value" in problems["--set"]
    assert "cannot index" in problems["engines.7.x"]


def test_load_job_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_job(tmp_path / "nope.yaml")
    assert "no job file" in str(info.value.problems[0])
    with pytest.raises(ConfigError) as info:
        load_job(tmp_path)
    assert "directory" in str(info.value.problems[0])


def test_load_job_bad_yaml_names_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: q\nmodel: {name: m\n  engines: [\n")
    with pytest.raises(ConfigError) as info:
        load_job(bad)
    assert "line 3" in info.value.problems[0].message


def test_all_shipped_jobs_validate() -> None:
    jobs = sorted(Path(__file__).resolve().parents[3].joinpath("jobs").glob("*.yaml"))
    assert jobs, "jobs/ holds no job spec"
    for job in jobs:
        if job.name.startswith("matrix"):
            continue  # matrices: test_matrix.py expands them
        load_job(job)

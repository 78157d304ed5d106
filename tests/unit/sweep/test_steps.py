"""Sweep planning: ranges, warm-up by time, extension past the knee, attempts, knee over step dicts."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from pydantic import ValidationError

from raybench.config.load import LoadSpec
from raybench.results.schema import RECORD_SCHEMA, SCHEMA_VERSION, select_attempt
from raybench.sweep.step import make_request, sweep_requests
from raybench.sweep.steps import _extend, knee_of


def test_geometric_and_linear_ranges_expand_to_steps() -> None:
    load = LoadSpec.model_validate({"step_range": {"start": 1, "stop": 64, "factor": 2}, "duration_s": 1})
    assert load.steps == [1, 2, 4, 8, 16, 32, 64]
    lin = LoadSpec.model_validate({"step_range": {"scale": "linear", "start": 4, "stop": 16, "step": 4}, "requests": 5})
    assert lin.steps == [4, 8, 12, 16]
    rate = LoadSpec.model_validate({"mode": "rate", "step_range": {"start": 2.5, "stop": 10, "factor": 2},
                                    "duration_s": 1})  # fmt: skip
    assert rate.rates_per_s == [2.5, 5.0, 10.0]
    # the dumped spec (job.yaml) lists the expanded steps and the range: it parses back to the same spec
    assert LoadSpec.model_validate(load.model_dump(mode="json")) == load


def test_geometric_concurrencies_are_whole_and_distinct() -> None:
    load = LoadSpec.model_validate({"step_range": {"start": 1, "stop": 6, "factor": 1.5}, "duration_s": 1})
    assert load.steps == [1, 2, 3, 5]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"step_range": {"scale": "linear", "start": 1, "stop": 4, "factor": 2}, "duration_s": 1}, "takes `step`"),
        ({"step_range": {"start": 1, "stop": 4}, "duration_s": 1}, "takes `factor`"),
        ({"step_range": {"start": 8, "stop": 4, "factor": 2}, "duration_s": 1}, "swap them"),
        ({"step_range": {"start": 1, "stop": 4, "factor": 2}, "steps": [1, 3], "duration_s": 1}, "not both"),
        ({"steps": [1], "duration_s": 1, "warmup_requests": 4, "warmup_s": 2}, "one warm-up"),
        ({"steps": [1, 2, 4], "duration_s": 1, "max_steps": 2}, "raise it"),
        ({"step_range": {"start": 1, "stop": 4, "factor": 2}, "stepz": 1, "duration_s": 1}, "stepz"),
    ],
)
def test_bad_sweep_specs_say_what_to_write(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        LoadSpec.model_validate(fields)


def test_warmup_by_seconds_is_step_minus_one_at_the_first_load() -> None:
    load = LoadSpec(steps=[3, 6], duration_s=2, warmup_s=1.5)
    warm, steps = sweep_requests(load, "r", "e")
    assert warm is not None and warm.phase == "warmup" and warm.step_index == -1
    assert warm.duration_s == 1.5 and warm.requests is None and warm.concurrency == 3
    assert [s.phase for s in steps] == ["measure", "measure"]


def test_next_level_follows_the_progression() -> None:
    ranged = LoadSpec.model_validate({"step_range": {"start": 2, "stop": 8, "factor": 2}, "duration_s": 1})
    assert ranged.next_level([2, 4, 8]) == 16
    listed = LoadSpec(steps=[4, 8, 12], duration_s=1)
    assert listed.next_level([4.0, 8.0, 12.0]) == 18  # the last ratio, rounded up
    assert LoadSpec(steps=[5], duration_s=1).next_level([5.0]) == 10
    rate = LoadSpec(mode="rate", rates_per_s=[1, 2], duration_s=1)
    assert rate.next_level([1.0, 2.0]) == 4.0
    req = make_request(rate, "r", "e", 2, 4.0)
    assert req.open_loop is not None and req.open_loop.rate_per_s == 4.0 and req.level == 4.0


def test_extension_goes_on_while_goodput_pct_at_least_50() -> None:
    assert _extend([{"goodput_pct": 80.0}])
    assert _extend([{"goodput_pct": 50.0}])
    assert not _extend([{"goodput_pct": 49.9}])
    assert not _extend([{"goodput_pct": None}])
    assert not _extend([{"goodput_pct": 90.0, "failed": True}])
    assert not _extend([])


def test_knee_of_step_dicts_matches_the_rule() -> None:
    steps = [
        {"step_index": 0, "concurrency": 4, "slo_held": True},
        {"step_index": 1, "concurrency": 8, "slo_held": True},
        {"step_index": 2, "concurrency": 16, "slo_held": True, "failed": True},
        {"step_index": 3, "concurrency": 32, "slo_held": False},
    ]
    knee = knee_of(steps)
    assert knee is not None and knee["step_index"] == 1
    assert knee_of([{"step_index": 0, "concurrency": 1, "slo_held": False}]) is None


def test_attempt_column_and_selection() -> None:
    assert int(SCHEMA_VERSION) >= 2 and RECORD_SCHEMA.field("attempt").type == pa.int32()
    table = pa.table({"attempt": pa.array([0, 1, 1, None], pa.int32()), "x": [1, 2, 3, 4]})
    assert select_attempt(table, 1).column("x").to_pylist() == [2, 3]
    assert select_attempt(table, 0).column("x").to_pylist() == [1, 4]  # version-1 rows are attempt 0
    assert select_attempt(table, None).num_rows == 4

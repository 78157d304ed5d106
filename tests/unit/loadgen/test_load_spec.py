"""The load section for open loop (rate steps, arrivals, cap), and how a step is sharded over generators."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from raybench.config.load import LoadSpec
from raybench.sweep.step import _shards as shards
from raybench.sweep.step import sweep_requests


def test_rate_mode_spec() -> None:
    load = LoadSpec(mode="rate", rates_per_s=[5, 50.5], duration_s=10, arrival="gamma", burstiness=0.5,
                    max_concurrency=64, warmup_requests=10)  # fmt: skip
    assert load.connections() == 64
    warm, steps = sweep_requests(load, "run", "eng")
    assert warm is not None and warm.open_loop is not None and warm.requests == 10
    assert [s.open_loop.rate_per_s for s in steps if s.open_loop] == [5.0, 50.5]
    assert all(s.concurrency == 64 for s in steps)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"mode": "rate", "steps": [1], "duration_s": 1}, "rates_per_s"),
        ({"mode": "rate", "rates_per_s": [], "duration_s": 1}, "rates_per_s"),
        ({"mode": "rate", "rates_per_s": [0], "duration_s": 1}, "> 0"),
        ({"mode": "rate", "rates_per_s": [5], "duration_s": 1, "burstiness": 0.5}, "arrival: gamma"),
        ({"steps": [1], "rates_per_s": [5], "duration_s": 1}, "mode: rate"),
        ({"steps": [], "duration_s": 1}, "must not be empty"),
        ({"mode": "rate", "rates_per_s": [5], "arrival": "uniform", "duration_s": 1}, "arrival"),
    ],
)
def test_bad_open_loop_specs_say_what_to_write(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        LoadSpec.model_validate(fields)


def test_concurrency_mode_unchanged() -> None:
    load = LoadSpec(steps=[1, 4], requests=8)
    warm, steps = sweep_requests(load, "run", "eng")
    assert warm is None and [s.concurrency for s in steps] == [1, 4] and all(s.open_loop is None for s in steps)
    assert load.connections() == 4


def test_open_loop_shards_split_budget_and_cap_and_interleave() -> None:
    load = LoadSpec(mode="rate", rates_per_s=[30], requests=10, max_concurrency=5, seed=9)
    _, (step,) = sweep_requests(load, "run", "eng")
    parts = shards(step, 3)
    assert [p.max_requests for p in parts] == [4, 3, 3]  # generator g sends global arrivals g, g+3, ...
    assert [p.concurrency for p in parts] == [2, 2, 1]
    assert [(p.prompt_offset, p.prompt_stride) for p in parts] == [(0, 3), (1, 3), (2, 3)]
    assert all(p.rate_per_s == 30 and p.seed == 9 for p in parts)


def test_uncapped_open_loop_shards_have_no_cap() -> None:
    _, (step,) = sweep_requests(LoadSpec(mode="rate", rates_per_s=[30], duration_s=2), "run", "eng")
    assert [p.concurrency for p in shards(step, 2)] == [0, 0]

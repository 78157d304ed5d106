"""Fleet pieces that need no Ray: load splitting, sizing from a stream budget, node-probe errors."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from raybench.config.job import FleetSpec
from raybench.sweep.fleet import silent_nodes_message, split_evenly
from raybench.sweep.step import StepRequest, _shards


@given(st.integers(0, 10_000), st.integers(1, 64))
def test_split_evenly_sums_and_differs_by_one(total: int, parts: int) -> None:
    shares = split_evenly(total, parts)
    assert sum(shares) == total and len(shares) == parts
    assert max(shares) - min(shares) <= 1 and shares == sorted(shares, reverse=True)


def test_closed_loop_shards_record_every_share_and_interleave_prompts() -> None:
    req = StepRequest("r", "e", 2, "measure", 10, None, 25, 30.0)
    shards = _shards(req, 3)
    assert [s.concurrency for s in shards] == [4, 3, 3]
    assert [s.max_requests for s in shards] == [9, 8, 8]
    assert {s.prompt_stride for s in shards} == {3} and [s.prompt_offset for s in shards] == [0, 1, 2]
    numbers = sorted(s.prompt_offset + k * s.prompt_stride for s in shards for k in range(s.max_requests or 0))
    assert numbers == list(range(25)), "the generators together send prompts 0..N-1, each once"


def test_fleet_size_from_count_or_stream_budget() -> None:
    assert FleetSpec(generators=3).size(1000) == 3
    assert FleetSpec(streams_per_generator=256).size(1000) == 4
    assert FleetSpec(generators=6, streams_per_generator=256).size(1000) == 6  # `generators` is a floor
    assert FleetSpec(streams_per_generator=256).size(10) == 1


def test_fleet_spec_rejects_unknown_placement_and_keys() -> None:
    with pytest.raises(ValidationError, match="spread"):
        FleetSpec.model_validate({"placement": "anywhere"})
    with pytest.raises(ValidationError, match="generatorz"):
        FleetSpec.model_validate({"generatorz": 2})
    assert FleetSpec().step_reruns == 1


def test_silent_nodes_are_named() -> None:
    nodes = [{"NodeID": "a" * 40, "NodeManagerAddress": "127.0.0.1"}, {"NodeID": "b" * 40}]
    assert silent_nodes_message(nodes, {"a" * 40, "b" * 40}, 5) is None
    message = silent_nodes_message(nodes, {"a" * 40}, 5)
    assert message is not None and "bbbbbbbbbbbb" in message and "aaaa" not in message
    assert "did not answer within 5 s" in message and "ray status" in message

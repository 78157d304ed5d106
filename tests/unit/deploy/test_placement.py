"""A replica's node layout from the spec and the cluster's GPU nodes, and its bundles (no Ray started)."""

from __future__ import annotations

from typing import Any

import pytest

from raybench.config.engine import ENGINE_SPECS
from raybench.config.job import ModelSpec
from raybench.deploy.placement import NodeLayout, plan_layout
from raybench.engines import adapter_for
from raybench.engines.base import EngineAdapter
from raybench.errors import EngineError


def _adapter(kind: str = "vllm", **fields: Any) -> EngineAdapter:
    spec = ENGINE_SPECS[kind].model_validate({"kind": kind, "num_cpus": 2, **fields})
    return adapter_for(spec, ModelSpec(name="m"), "e0")


def test_fits_one_node_means_no_spanning() -> None:
    assert plan_layout(_adapter(tensor_parallel_size=4), [8.0, 8.0]) == NodeLayout(1, 4.0, 2.0)
    assert plan_layout(_adapter(num_gpus=0), []) == NodeLayout(1, 0.0, 2.0)


def test_more_gpus_than_a_node_spans_the_fewest_equal_nodes() -> None:
    layout = plan_layout(_adapter(tensor_parallel_size=8, pipeline_parallel_size=2), [8.0, 8.0, 8.0])
    assert layout == NodeLayout(2, 8.0, 2.0)
    assert layout.bundles() == [{"CPU": 2.0, "GPU": 8.0}, {"CPU": 2.0, "GPU": 8.0}]
    assert plan_layout(_adapter(tensor_parallel_size=12), [8.0, 8.0, 4.0]) == NodeLayout(2, 6.0, 2.0)


def test_nodes_from_the_spec_win_even_when_one_node_would_do() -> None:
    assert plan_layout(_adapter(tensor_parallel_size=4, nodes=2), [8.0, 8.0]) == NodeLayout(2, 2.0, 2.0)


def test_too_few_nodes_fails_with_what_the_cluster_has() -> None:
    with pytest.raises(EngineError, match=r"spans 3 nodes with 4 GPUs each, but the cluster has 2 such nodes"):
        plan_layout(_adapter(tensor_parallel_size=12, nodes=3), [4.0, 4.0, 2.0])


def test_gpus_that_no_equal_nodes_hold_fail_with_the_reason() -> None:
    with pytest.raises(EngineError, match="no set of equal nodes"):
        plan_layout(_adapter(tensor_parallel_size=7), [4.0, 4.0])


def test_a_single_node_kind_that_does_not_fit_says_why() -> None:
    with pytest.raises(EngineError, match=r"largest node has 8.*cannot span nodes: TGI shards"):
        plan_layout(_adapter("tgi", tensor_parallel_size=16), [8.0, 8.0])

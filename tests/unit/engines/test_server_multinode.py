"""Multi-node replicas without Ray: the spec's `nodes` validation, each node's exact command line, the fakes
accepting it, and the fake's rendezvous (rank 0 waits for every node; a lost node takes rank 0 down)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import aiohttp
import pydantic
import pytest

from raybench.config.engine import ENGINE_SPECS
from raybench.config.job import ModelSpec
from raybench.deploy.process import ServerProcess, free_port, wait_group_gone
from raybench.engines import adapter_for
from raybench.engines.base import NodeRole
from raybench.engines.readiness import wait_ready
from raybench.engines.server import ServerEngineAdapter
from raybench.errors import EngineError
from raybench.testing.engines import fake_launcher, parse_engine_args
from raybench.testing.engines.multinode import LOST_PEER_STATUS

MODEL = ModelSpec(name="meta-llama/Llama-3.1-405B-Instruct", precision="bf16")


def _adapter(kind: str, **fields: Any) -> ServerEngineAdapter:
    spec = ENGINE_SPECS[kind].model_validate({"kind": kind, **fields})
    adapter = adapter_for(spec, MODEL, f"{kind}-0")
    assert isinstance(adapter, ServerEngineAdapter)
    return adapter


def test_vllm_node_commands() -> None:
    adapter = _adapter("vllm", tensor_parallel_size=8, pipeline_parallel_size=2, nodes=2, extra_args=["--seed", "0"])
    head = adapter.node_launch_plan("127.0.1.1", 8000, NodeRole(2, 0, "127.0.1.1", 29555)).argv
    worker = adapter.node_launch_plan("127.0.1.2", 8000, NodeRole(2, 1, "127.0.1.1", 29555)).argv
    node_flags = ["--distributed-executor-backend", "mp", "--nnodes", "2", "--node-rank", "0",
                  "--master-addr", "127.0.1.1", "--master-port", "29555"]  # fmt: skip
    assert head[-len(node_flags) - 2 :] == [*node_flags, "--seed", "0"]  # extra_args stay last
    assert worker[-len(node_flags) - 3 :] == [*node_flags[:5], "1", *node_flags[6:], "--headless", "--seed", "0"]
    assert "--tensor-parallel-size" in head and head[head.index("--tensor-parallel-size") + 1] == "8"
    assert "--nnodes" not in adapter.launch_plan("h", 1).argv  # a single-node plan has no node flags


def test_sglang_node_commands() -> None:
    adapter = _adapter("sglang", tensor_parallel_size=16, nodes=2)
    for rank in (0, 1):
        argv = adapter.node_launch_plan("127.0.1.9", 30000, NodeRole(2, rank, "127.0.1.1", 20000)).argv
        assert argv[-6:] == ["--nnodes", "2", "--node-rank", str(rank), "--dist-init-addr", "127.0.1.1:20000"]
        assert argv[argv.index("--tp-size") + 1] == "16"  # the total over every node, as SGLang's docs say


@pytest.mark.parametrize("kind", ["vllm", "sglang"])
def test_the_fake_accepts_every_node_command(kind: str) -> None:
    adapter = _adapter(kind, tensor_parallel_size=4, nodes=2)
    own = len(adapter.entrypoint())
    for rank in (0, 1):
        argv = adapter.node_launch_plan("127.0.0.1", 9000, NodeRole(2, rank, "127.0.0.1", 29000)).argv
        config = parse_engine_args(kind, argv[own:])
        assert (config.nnodes, config.node_rank, config.master) == (2, rank, ("127.0.0.1", 29000))


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"kind": "vllm", "tensor_parallel_size": 4, "nodes": 3}, "write nodes: one of 1, 2, 4"),
        ({"kind": "sglang", "tensor_parallel_size": 2, "pipeline_parallel_size": 3, "nodes": 4}, "6 GPUs do not split"),
        ({"kind": "vllm", "tensor_parallel_size": 4, "nodes": 2, "num_gpus": 2}, "remove num_gpus"),
        ({"kind": "trtllm", "tensor_parallel_size": 16, "nodes": 2}, "one MPI world"),
        ({"kind": "tgi", "tensor_parallel_size": 16, "nodes": 2}, "one machine"),
        ({"kind": "ray_serve_llm", "tensor_parallel_size": 16, "nodes": 2}, "leave nodes unset"),
    ],
)
def test_nodes_validation_says_what_to_write(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(pydantic.ValidationError, match=message):
        ENGINE_SPECS[str(fields["kind"])].model_validate(fields)


def test_a_single_node_kind_refuses_a_node_plan() -> None:
    with pytest.raises(EngineError, match="tgi cannot span nodes"):
        _adapter("tgi").node_launch_plan("h", 1, NodeRole(2, 0, "h", 2))


def _fake(kind: str, rank: int, port: int, master_port: int, tmp_path: Path, gpus: str) -> ServerProcess:
    adapter = _adapter(kind, launcher=fake_launcher(kind), tensor_parallel_size=4, nodes=2,
                       env={"RAYBENCH_FAKE_LOAD_S": "0.1", "CUDA_VISIBLE_DEVICES": gpus})  # fmt: skip
    plan = adapter.node_launch_plan("127.0.0.1", port, NodeRole(2, rank, "127.0.0.1", master_port))
    return ServerProcess(plan, tmp_path / f"node-{rank}.log", grace_s=1.0)


async def _nodes(base_url: str) -> dict[str, Any]:
    async with aiohttp.ClientSession() as session, session.get(base_url + "/fake/nodes") as response:
        return dict(await response.json())


def test_fake_rank0_waits_for_its_node_and_dies_when_it_is_lost(tmp_path: Path) -> None:
    port, master = free_port("127.0.0.1"), free_port("127.0.0.1")
    head = _fake("sglang", 0, port, master, tmp_path, "0,1")
    base_url = f"http://127.0.0.1:{port}"
    try:
        early = asyncio.run(wait_ready(base_url, MODEL.name, 1.0, "/health", head.alive))
        assert not early.ready  # rank 0 does not serve before node 1 joined
        worker = _fake("sglang", 1, free_port("127.0.0.1"), master, tmp_path, "2,3")
        assert asyncio.run(wait_ready(base_url, MODEL.name, 20.0, "/health", head.alive)).ready
        nodes = asyncio.run(_nodes(base_url))["nodes"]
        assert [(n["rank"], n["cuda_visible_devices"]) for n in nodes] == [(0, "0,1"), (1, "2,3")]
        assert json.dumps(nodes[1]["argv"]).count("--node-rank") == 1
        worker.stop(grace_s=0.5)  # a node going away takes the engine down, as NCCL would
        deadline = time.monotonic() + 10
        while head.alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert head.exit_code() == LOST_PEER_STATUS
        assert "lost node 1" in head.log_tail()
    finally:
        head.stop(grace_s=0.5)
    assert wait_group_gone(head.pgid) and wait_group_gone(worker.pgid)

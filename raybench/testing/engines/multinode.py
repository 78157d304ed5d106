"""A fake engine's multi-node rendezvous: rank 0 listens at the master address, every other rank joins it.

As torch.distributed does under vLLM and SGLang: rank 0 waits until all `nnodes - 1` other ranks have
joined before it loads and serves, the other ranks serve no HTTP, and a rank that loses its peer (rank 0
losing any node, a node losing rank 0) exits with LOST_PEER_STATUS, as a real engine dies when a node of
its tensor-parallel group goes away.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
from typing import Any

from raybench.testing.engines.cli import FakeConfig

__all__ = ["LOST_PEER_STATUS", "gather_nodes", "join_rank0", "node_report"]

LOST_PEER_STATUS = 4


def node_report(config: FakeConfig) -> dict[str, Any]:
    """What this node tells rank 0 (and rank 0 serves at /fake/nodes): its rank, pid, host and GPUs."""
    return {
        "rank": config.node_rank,
        "pid": os.getpid(),
        "hostname": socket.gethostname(),
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "argv": sys.argv[1:],
    }


def _lost(config: FakeConfig, peer: str) -> None:
    print(f"fake {config.kind}: node {config.node_rank} lost {peer} (NCCL error: remote process exited)", flush=True)
    os._exit(LOST_PEER_STATUS)


async def gather_nodes(config: FakeConfig) -> tuple[asyncio.Server, list[dict[str, Any]]]:
    """Rank 0: listen at the master address until every other rank joined; returns them by rank (self first)."""
    joined: list[dict[str, Any]] = []
    everyone = asyncio.Event()

    async def on_join(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        report = json.loads(await reader.readline())
        joined.append(report)
        print(f"fake {config.kind}: node {report['rank']} joined (GPUs {report['cuda_visible_devices']})", flush=True)
        if len(joined) == config.nnodes - 1:
            everyone.set()
        await reader.read()  # returns at EOF: the node is gone
        _lost(config, f"node {report['rank']}")

    host, port = config.master
    server = await asyncio.start_server(on_join, host, port)
    print(f"fake {config.kind}: rank 0 of {config.nnodes} waiting for nodes at {host}:{port}", flush=True)
    await everyone.wait()
    return server, [node_report(config), *sorted(joined, key=lambda r: int(r["rank"]))]


async def join_rank0(config: FakeConfig) -> None:
    """Rank > 0: connect to rank 0 (retrying while it starts), report, and live as long as rank 0 does."""
    host, port = config.master
    while True:
        try:
            reader, writer = await asyncio.open_connection(host, port)
            break
        except OSError:
            await asyncio.sleep(0.1)
    writer.write(json.dumps(node_report(config)).encode() + b"\n")
    await writer.drain()
    print(f"fake {config.kind}: node {config.node_rank} of {config.nnodes} joined {host}:{port}", flush=True)
    await reader.read()
    _lost(config, "rank 0")

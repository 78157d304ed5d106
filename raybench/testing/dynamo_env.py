"""Test helpers for real Dynamo runs: is Dynamo (and etcd, NATS) here, and which processes a deployment left.

Every process a DynamoDeployment starts carries `RAYBENCH_DYNAMO_TAG=<tag>` in its environment; on Linux,
`/proc/<pid>/environ` tells which processes still carry a given tag, whatever their process group.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

__all__ = ["dynamo_missing", "infrastructure_missing", "tagged_processes"]


def dynamo_missing() -> str | None:
    """Why real Dynamo cannot run here (None: `dynamo.frontend` and `dynamo.mocker` are importable)."""
    for module in ("dynamo.frontend", "dynamo.mocker"):
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            return (
                f"{module} is not importable: pip install --no-deps ai-dynamo==1.6.1 ai-dynamo-runtime==1.6.1 "
                "plus its light dependencies (see .ci/run)"
            )
    return None


def infrastructure_missing() -> str | None:
    """Why etcd + NATS cannot be started here (None: both binaries are on PATH)."""
    missing = [name for name in ("etcd", "nats-server") if shutil.which(name) is None]
    if missing:
        return f"{' and '.join(missing)} not on PATH: apt-get install etcd-server nats-server"
    return None


def tagged_processes(tag: str, proc: Path = Path("/proc")) -> list[int]:
    """Pids of live processes whose environment holds RAYBENCH_DYNAMO_TAG=<tag>."""
    marker = f"RAYBENCH_DYNAMO_TAG={tag}".encode()
    pids = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:
            continue  # gone, or not ours to read
        if marker in environ.split(b"\0") and state != "Z":
            pids.append(int(entry.name))
    return pids

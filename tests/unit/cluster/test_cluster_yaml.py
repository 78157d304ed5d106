"""clusters/*.yaml parse and carry what Ray, KubeRay and raybench need from them (no Ray, no Kubernetes)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import yaml

from raybench.config.loader import load_job
from raybench.testing.local_cluster import load_cluster_spec

CLUSTERS = Path(__file__).resolve().parents[3] / "clusters"


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((CLUSTERS / name).read_text(encoding="utf-8"))
    return data


def loadgen_of(ray_start_params: dict[str, Any]) -> float:
    """KubeRay puts rayStartParams.resources verbatim into the shell line `ray start --resources=VALUE`."""
    [word] = shlex.split(ray_start_params["resources"])
    return float(json.loads(word)["loadgen"])


def test_every_definition_says_what_to_change() -> None:
    for name in ("gpu-cluster.yaml", "kuberay-raycluster.yaml", "kuberay-rayjob.yaml"):
        text = (CLUSTERS / name).read_text(encoding="utf-8")
        assert text.startswith("#") and "CHANGE" in text, name


def test_local_cluster_stays_on_loopback_with_a_loadgen_node() -> None:
    spec = load_cluster_spec(CLUSTERS / "local.yaml")
    assert spec.node_ip_address == "127.0.0.1"
    assert any(w.resources.get("loadgen", 0) > 0 for w in spec.workers)


def test_launcher_yaml_has_gpu_and_loadgen_node_types_and_a_reachable_dashboard() -> None:
    c = load("gpu-cluster.yaml")
    for key in ("cluster_name", "max_workers", "provider", "auth", "available_node_types", "head_node_type",
                "setup_commands", "head_start_ray_commands", "worker_start_ray_commands"):  # fmt: skip
        assert key in c, key
    types = c["available_node_types"]
    assert c["head_node_type"] in types and c["provider"]["type"] == "aws"
    assert any(t["node_config"]["InstanceType"].startswith("p") for t in types.values()), "a GPU node type"
    assert any(t.get("resources", {}).get("loadgen", 0) > 0 for t in types.values()), "a loadgen node type"
    for name, node_type in types.items():
        assert {"resources", "node_config"} <= node_type.keys(), name
        if name != c["head_node_type"]:
            assert node_type["min_workers"] <= node_type["max_workers"], name
    head = " ".join(c["head_start_ray_commands"])
    assert "ray start --head" in head and "--dashboard-host=0.0.0.0" in head
    assert "--address=$RAY_HEAD_IP:6379" in " ".join(c["worker_start_ray_commands"])
    assert any("ray[" in cmd and "pydantic" in cmd for cmd in c["setup_commands"]), "raybench's dependencies"


def _check_ray_cluster_spec(spec: dict[str, Any]) -> None:
    head = spec["headGroupSpec"]
    assert head["rayStartParams"]["dashboard-host"] == "0.0.0.0"
    ports = {p["containerPort"] for p in head["template"]["spec"]["containers"][0].get("ports", [])}
    assert 8265 in ports
    groups = {g["groupName"]: g for g in spec["workerGroupSpecs"]}
    gpu = groups["gpu"]["template"]["spec"]["containers"][0]
    assert int(gpu["resources"]["limits"]["nvidia.com/gpu"]) >= 1
    assert loadgen_of(groups["loadgen"]["rayStartParams"]) > 0
    for group in groups.values():
        assert group["minReplicas"] <= group["replicas"] <= group["maxReplicas"]
        for container in group["template"]["spec"]["containers"]:
            assert container["image"].split(":")[1].startswith(spec["rayVersion"]), "images match rayVersion"


def test_kuberay_raycluster() -> None:
    c = load("kuberay-raycluster.yaml")
    assert (c["apiVersion"], c["kind"]) == ("ray.io/v1", "RayCluster")
    assert c["metadata"]["name"]
    _check_ray_cluster_spec(c["spec"])


def test_kuberay_rayjob_runs_a_raybench_job_that_exists() -> None:
    c = load("kuberay-rayjob.yaml")
    assert (c["apiVersion"], c["kind"]) == ("ray.io/v1", "RayJob")
    spec = c["spec"]
    words = spec["entrypoint"].split()
    assert words[:4] == ["python", "-m", "raybench", "run"] and "--output" in words
    load_job(CLUSTERS.parent / words[4])  # the job file the entrypoint names exists and validates
    runtime_env = yaml.safe_load(spec["runtimeEnvYAML"])
    assert runtime_env["working_dir"].endswith(".zip")
    assert spec["shutdownAfterJobFinishes"] is True
    _check_ray_cluster_spec(spec["rayClusterSpec"])

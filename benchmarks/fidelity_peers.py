"""Peer harnesses for benchmarks/fidelity.py: AIPerf and GuideLLM from scratch venvs, their reported figures.

Neither may download anything: both get the tiny tokenizer of raybench.testing.tiny_model, AIPerf as a
Hugging Face cache entry (it only resolves names there under HF_HUB_OFFLINE=1), GuideLLM as a directory.
Each run is the tool's own CLI in its own process(es); we read its JSON export.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from raybench.testing.tiny_model import build_tiny_model_dir

__all__ = ["PEERS", "tokenizer_cache"]

VENVS = Path(os.environ.get("RAYBENCH_PEER_VENVS", "/tmp/venvs"))
HF_HOME = Path("/tmp/raybench-fidelity-hf")
_REPO, _REV = "raybench/tiny-tokenizer", "0" * 40

PeerRun = Callable[[str, Path, int, int, int, int], dict[str, float]]


def tokenizer_cache() -> Path:
    """The tiny tokenizer as `HF_HOME/hub/models--ORG--NAME/snapshots/REV/` with `refs/main`; its snapshot dir."""
    entry = HF_HOME / "hub" / f"models--{_REPO.replace('/', '--')}"
    snapshot = entry / "snapshots" / _REV
    if not (snapshot / "tokenizer.json").exists():
        build_tiny_model_dir(snapshot)
        (entry / "refs").mkdir(parents=True, exist_ok=True)
        (entry / "refs" / "main").write_text(_REV)
    return snapshot


def _env() -> dict[str, str]:
    return {**os.environ, "HF_HOME": str(HF_HOME), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def run_aiperf(url: str, workdir: Path, concurrency: int, requests: int, isl: int, osl: int) -> dict[str, float]:
    """AIPerf closed loop at `concurrency` (one worker process), server token counts, streaming completions."""
    tokenizer_cache()
    out = workdir / f"aiperf-c{concurrency}"
    cmd = [
        str(VENVS / "aiperf/bin/aiperf"), "profile", "--model", "fake-model", "--url", url,
        "--endpoint-type", "completions", "--streaming", "--concurrency", str(concurrency),
        "--request-count", str(requests), "--isl", str(isl), "--isl-stddev", "0", "--osl", str(osl),
        "--tokenizer", _REPO, "--use-server-token-count", "--workers-max", "1",
        "--artifact-dir", str(out), "--ui-type", "none",
    ]  # fmt: skip
    subprocess.run(cmd, check=True, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    data = json.loads((out / "profile_export_aiperf.json").read_text())

    def metric(name: str, stat: str) -> float:
        return float(data[name][stat])

    return {
        "requests": metric("request_count", "avg"),
        "ttft_p50_ms": metric("time_to_first_token", "p50"),
        "ttft_p99_ms": metric("time_to_first_token", "p99"),
        "itl_p50_ms": metric("inter_token_latency", "p50"),
        "throughput_tok_s": metric("output_token_throughput", "avg"),
    }


def run_guidellm(url: str, workdir: Path, concurrency: int, requests: int, isl: int, osl: int) -> dict[str, float]:
    """GuideLLM `concurrent` profile at `concurrency`, synthetic prompts, its JSON report."""
    out = workdir / f"guidellm-c{concurrency}.json"
    scenario = {
        "spec": {
            "backend": {
                "kind": "openai_http",
                "target": url,
                "model": "fake-model",
                "request_format": "/v1/completions",
            },
            "profile": {"kind": "concurrent", "streams": concurrency},
            "data": [{"kind": "synthetic_text", "prompt_tokens": isl, "output_tokens": osl}],
            "tokenizer": {"kind": "hf_auto", "model": str(tokenizer_cache())},
            "constraints": [{"kind": "max_requests", "count": requests}],
            "outputs": [{"kind": "json", "path": str(out)}],
        }
    }
    path = workdir / f"guidellm-c{concurrency}-scenario.json"
    path.write_text(json.dumps(scenario))
    cmd = [str(VENVS / "guidellm/bin/guidellm"), "run", "--scenario", str(path), "--disable-console"]
    subprocess.run(cmd, check=True, env=_env(), cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    metrics = json.loads(out.read_text())["benchmarks"][0]["metrics"]

    def pct(name: str, p: str) -> float:
        return float(metrics[name]["successful"]["percentiles"][p])

    return {
        "requests": float(metrics["request_totals"]["successful"]),
        "ttft_p50_ms": pct("time_to_first_token_ms", "p50"),
        "ttft_p99_ms": pct("time_to_first_token_ms", "p99"),
        "itl_p50_ms": pct("inter_token_latency_ms", "p50"),
        "throughput_tok_s": float(metrics["output_tokens_per_second"]["successful"]["mean"]),
    }


def _available() -> dict[str, PeerRun]:
    found: dict[str, PeerRun] = {}
    if (VENVS / "aiperf/bin/aiperf").exists():
        found["aiperf"] = run_aiperf
    if (VENVS / "guidellm/bin/guidellm").exists():
        found["guidellm"] = run_guidellm
    return found


PEERS: dict[str, Any] = _available()

"""Precision/quantization table per engine: unsupported combinations fail validation with the reason."""

from __future__ import annotations

from typing import Any

import pytest

from raybench.config import parse_job
from raybench.engines.precision import PRECISIONS, check_kv_cache_dtype, check_precision, normalize_precision
from raybench.errors import ConfigError

KINDS = ("vllm", "sglang", "trtllm", "lmdeploy", "tgi", "llamacpp", "ray_serve_llm")


def _job(precision: str, engine: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": "p", "model": {"name": "m", "precision": precision}, "engines": [engine],
        "workload": {"isl": {"mean": 8}, "osl": {"mean": 8}}, "load": {"steps": [1], "duration_s": 1},
        "slo": {"ttft_p99_ms": 500, "itl_p50_ms": 30},
    }  # fmt: skip


def _messages(data: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as info:
        parse_job(data)
    return "\n".join(str(p) for p in info.value.problems)


def test_gptq_on_trtllm_fails_with_the_reason() -> None:
    message = _messages(_job("GPTQ", {"kind": "trtllm"}))
    assert "trtllm" in message
    assert "no native GPTQ" in message


def test_engine_precision_overrides_the_model_and_is_checked() -> None:
    message = _messages(_job("bf16", {"kind": "lmdeploy", "precision": "fp8"}))
    assert "engines.0" in message and "TurboMind" in message
    assert parse_job(_job("bf16", {"kind": "lmdeploy", "precision": "int4-awq"})).engines[0].kind == "lmdeploy"


def test_llamacpp_needs_gguf() -> None:
    assert "GGUF" in _messages(_job("fp8", {"kind": "llamacpp", "model_path": "/m.gguf"}))
    parse_job(_job("fp8", {"kind": "llamacpp", "model_path": "/m.gguf", "precision": "gguf"}))


def test_kv_cache_dtype_checked() -> None:
    assert "fp8 only" in _messages(_job("bf16", {"kind": "vllm", "kv_cache_dtype": "int8"}))
    assert "int8 or int4" in _messages(_job("bf16", {"kind": "lmdeploy", "kv_cache_dtype": "fp8"}))


def test_unsupported_setting_named_with_reason() -> None:
    message = _messages(_job("bf16", {"kind": "tgi", "pipeline_parallel_size": 2}))
    assert "pipeline_parallel_size is not supported by tgi" in message


def test_secrets_in_env_are_refused() -> None:
    assert "secrets (HF_TOKEN)" in _messages(_job("bf16", {"kind": "vllm", "env": {"HF_TOKEN": "hf_x"}}))


def test_the_article_fp8_runs_on_the_three_engines() -> None:
    spec = parse_job({**_job("FP8", {"kind": "vllm"}), "engines": [{"kind": k} for k in ("vllm", "sglang", "trtllm")]})
    assert [e.kind for e in spec.engines] == ["vllm", "sglang", "trtllm"]


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_serves_bf16_and_refusals_carry_a_reason(kind: str) -> None:
    assert check_precision(kind, "bf16") is None
    for precision in PRECISIONS:
        reason = check_precision(kind, precision)
        assert reason is None or len(reason) > 20


def test_aliases_and_unknown_names() -> None:
    assert normalize_precision("FP8") == "fp8"
    assert normalize_precision("awq") == "int4-awq"
    assert normalize_precision("SmoothQuant") == "int8-sq"
    assert "unknown precision" in (check_precision("vllm", "fp3") or "")
    assert check_kv_cache_dtype("trtllm", "int8") is None

"""Precision and quantization each engine kind can serve, and why a combination is refused (pure data)."""

from __future__ import annotations

__all__ = ["KV_CACHE_DTYPES", "PRECISIONS", "check_kv_cache_dtype", "check_precision", "normalize_precision"]

# The canonical names raybench uses in specs and summaries.
PRECISIONS = ("fp16", "bf16", "fp8", "int8-sq", "int4-awq", "gptq", "nvfp4", "mxfp4", "gguf")
KV_CACHE_DTYPES = ("auto", "fp16", "bf16", "fp8", "int8", "int4")

_ALIASES = {
    "float16": "fp16", "half": "fp16", "bfloat16": "bf16", "fp8_e4m3": "fp8", "float8": "fp8",
    "int8": "int8-sq", "smoothquant": "int8-sq", "w8a8": "int8-sq", "awq": "int4-awq", "int4": "int4-awq",
    "w4a16": "int4-awq", "gptq-int4": "gptq", "fp4": "nvfp4",
}  # fmt: skip

# kind -> precision -> None when supported, else the reason it is not (shown by `raybench validate`).
_UNSUPPORTED: dict[str, dict[str, str]] = {
    "vllm": {
        "int8-sq": "vLLM serves INT8 as W8A8 checkpoints (llm-compressor), not TRT-LLM SmoothQuant engines; "
        "use a compressed-tensors W8A8 checkpoint with precision fp8 or bf16",
        "gguf": "vLLM's GGUF support is experimental and single-file only; benchmark GGUF with llamacpp",
    },
    "ray_serve_llm": {
        "int8-sq": "Ray Serve LLM runs vLLM, which has no SmoothQuant engine format; use fp8 or bf16",
        "gguf": "Ray Serve LLM runs vLLM; benchmark GGUF with llamacpp",
    },
    "sglang": {
        "int8-sq": "SGLang has no SmoothQuant path; use w8a8_int8 via quantization in extra_args, or fp8",
        "gguf": "SGLang does not serve GGUF files; benchmark GGUF with llamacpp",
    },
    "trtllm": {
        "gptq": "TRT-LLM has no native GPTQ support (the article's capability matrix: 'Not native'); "
        "requantize with ModelOpt to int4-awq or fp8",
        "gguf": "TRT-LLM does not load GGUF files; use an HF or ModelOpt checkpoint",
    },
    "lmdeploy": {
        "fp8": "LMDeploy's TurboMind backend has no FP8 weights; use bf16, int4-awq or gptq "
        "(or backend: pytorch with an FP8 checkpoint via extra_args)",
        "int8-sq": "LMDeploy's SmoothQuant W8A8 needs backend: pytorch; TurboMind serves only 4-bit AWQ/GPTQ",
        "nvfp4": "LMDeploy does not serve NVFP4 checkpoints",
        "mxfp4": "LMDeploy does not serve MXFP4 checkpoints (only gpt-oss on TurboMind); use bf16 or int4-awq",
        "gguf": "LMDeploy does not serve GGUF files; benchmark GGUF with llamacpp",
    },
    "tgi": {
        "int8-sq": "TGI has no SmoothQuant; its int8 is bitsandbytes (eetq), which is not comparable",
        "nvfp4": "TGI does not serve NVFP4 checkpoints",
        "mxfp4": "TGI does not serve MXFP4 checkpoints",
        "gguf": "TGI does not serve GGUF files; benchmark GGUF with llamacpp",
    },
    "llamacpp": {
        p: "llama.cpp serves GGUF files only; convert the model to GGUF (e.g. Q8_0 or Q4_K_M) and set precision gguf"
        for p in ("fp8", "int8-sq", "int4-awq", "gptq", "nvfp4", "mxfp4")
    },
}

_KV_UNSUPPORTED: dict[str, dict[str, str]] = {
    "vllm": {"int8": "vLLM's quantized KV cache is fp8 only", "int4": "vLLM's quantized KV cache is fp8 only"},
    "ray_serve_llm": {"int8": "vLLM's quantized KV cache is fp8 only", "int4": "vLLM's quantized KV cache is fp8 only"},
    "sglang": {"int8": "SGLang's quantized KV cache is fp8 only", "int4": "SGLang's quantized KV cache is fp8 only"},
    "trtllm": {"int4": "TRT-LLM's quantized KV cache is fp8 or int8"},
    "lmdeploy": {"fp8": "LMDeploy quantizes the KV cache to int8 or int4 (quant_policy 8/4), not fp8"},
    "tgi": {"int8": "TGI's KV cache dtype is fp8 (fp8_e4m3/fp8_e5m2) only", "int4": "TGI's KV cache is fp8 only"},
    "llamacpp": {"fp8": "llama.cpp's KV cache types are f16, bf16, q8_0, q4_0 (int8/int4)"},
}


def normalize_precision(value: str) -> str:
    """The canonical name of `value` (case and common aliases folded); unknown names are returned lower-cased."""
    lowered = value.strip().lower()
    return _ALIASES.get(lowered, lowered.replace("_", "-"))


def check_precision(kind: str, precision: str) -> str | None:
    """None when `kind` serves `precision`, else the reason it does not."""
    canonical = normalize_precision(precision)
    if canonical not in PRECISIONS:
        return f"unknown precision {precision!r}; use one of {', '.join(PRECISIONS)}"
    return _UNSUPPORTED.get(kind, {}).get(canonical)


def check_kv_cache_dtype(kind: str, dtype: str) -> str | None:
    """None when `kind` can hold its KV cache in `dtype`, else the reason it cannot."""
    return _KV_UNSUPPORTED.get(kind, {}).get(dtype)

"""Prompt sources by kind (synthetic, sharegpt, shared_prefix) and token counting; importing registers them."""

from raybench.workloads import shared_prefix as _shared_prefix
from raybench.workloads import sharegpt as _sharegpt
from raybench.workloads import synthetic as _synthetic
from raybench.workloads.base import Prompt, PromptSource, register_source, source_for, workload_fingerprint
from raybench.workloads.shared_prefix import SharedPrefixSource
from raybench.workloads.sharegpt import ShareGPTSource
from raybench.workloads.synthetic import SyntheticSource
from raybench.workloads.tokenizer import ApproxCounter, HFTokenCounter, TokenCounter, load_counter

del _shared_prefix, _sharegpt, _synthetic

__all__ = [
    "ApproxCounter",
    "HFTokenCounter",
    "Prompt",
    "PromptSource",
    "ShareGPTSource",
    "SharedPrefixSource",
    "SyntheticSource",
    "TokenCounter",
    "load_counter",
    "register_source",
    "source_for",
    "workload_fingerprint",
]

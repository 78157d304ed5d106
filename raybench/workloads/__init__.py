"""Prompt sources: what every engine in a comparison is sent, identically and reproducibly."""

from raybench.workloads.synthetic import Prompt, SyntheticSource, workload_fingerprint

__all__ = ["Prompt", "SyntheticSource", "workload_fingerprint"]

"""Command line of `python -m raybench.engines.sim`: one flag per `SimConfig` field, or a JSON config.

Flags are the field names with dashes (`--max-num-seqs 16`, `--hbm-gb-s 4000`); `--config-json`
takes the whole config as one JSON object (what the `simulated` adapter passes); a flag given
as well overrides the JSON's value.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any

from raybench.engines.sim.config import SimConfig
from raybench.engines.sim.cost import BatchShape
from raybench.engines.sim.perf import RooflineCostModel

__all__ = ["Args", "describe", "parse_args"]


@dataclass(frozen=True)
class Args:
    """The parsed command line."""

    config: SimConfig
    host: str
    port: int
    log_interval_s: float


def _bool(text: str) -> bool:
    if text.lower() in ("1", "true", "yes", "on"):
        return True
    if text.lower() in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _converter(annotation: str) -> Callable[[str], Any]:
    for name, convert in (("bool", _bool), ("int", int), ("float", float)):
        if name in annotation:
            return convert
    return str


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m raybench.engines.sim",
        description="Simulated OpenAI-compatible LLM engine: continuous batching over a roofline performance model.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: %(default)s)")
    parser.add_argument("--port", type=int, default=8000, help="port to bind; 0 picks a free one")
    parser.add_argument("--config-json", default="{}", help="the whole SimConfig as a JSON object")
    parser.add_argument("--log-interval-s", type=float, default=10.0, help="stats line period; 0 disables")
    for f in fields(SimConfig):
        parser.add_argument(
            "--" + f.name.replace("_", "-"),
            dest=f.name,
            type=_converter(str(f.type)),
            default=argparse.SUPPRESS,
            help=f"default: {f.default!r}",
        )
    return parser


def parse_args(argv: Sequence[str] | None = None) -> Args:
    """CLI flags → Args; exits with status 2 and a message on bad values."""
    parser = _parser()
    namespace = vars(parser.parse_args(argv))
    host, port = namespace.pop("host"), namespace.pop("port")
    log_interval_s = namespace.pop("log_interval_s")
    try:
        values = json.loads(namespace.pop("config_json"))
        if not isinstance(values, dict):
            raise ValueError("--config-json must be a JSON object")
        config = SimConfig(**{**values, **namespace})
    except (ValueError, TypeError) as exc:
        parser.error(str(exc))
    return Args(config=config, host=host, port=port, log_interval_s=log_interval_s)


def describe(config: SimConfig) -> str:
    """One line: what is modelled, its KV capacity and limits, and its single-request ITL."""
    r = config.resolve()
    itl_ms = RooflineCostModel(r).iteration_time_s(BatchShape().plus(1, 1024, decoding=True)) * 1e3
    pools = f" P/D {config.prefill_workers}P+{config.decode_workers}D" if config.disaggregated else ""
    return (
        f"model {config.model_preset} {config.precision} on {config.tp}x {config.gpu}, "
        f"{config.profile} profile{pools}: "
        f"kv_cache_tokens={r.kv_cache_tokens} max_num_seqs={r.max_num_seqs} "
        f"max_num_batched_tokens={r.max_num_batched_tokens} prefix_caching={r.enable_prefix_caching} "
        f"itl_batch1_ms={itl_ms:.2f} time_scale={config.time_scale:g}"
    )

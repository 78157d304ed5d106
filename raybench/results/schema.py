"""Arrow schema of the per-request record (MEASUREMENT.md) and its version."""

from __future__ import annotations

import pyarrow as pa

__all__ = ["PHASES", "RECORD_SCHEMA", "SCHEMA_VERSION", "STATUSES", "TOKEN_COUNT_SOURCES"]

SCHEMA_VERSION = "1"

STATUSES = ("ok", "http_error", "timeout", "disconnect", "protocol_error", "cancelled")
PHASES = ("warmup", "measure")
TOKEN_COUNT_SOURCES = ("server_usage", "tokenizer", "chunk_count")

# Instants (*_ns) are on the sending generator's perf_counter_ns clock; adding wall_offset_ns
# maps them onto the driver's wall clock (time.time_ns), the common timeline of a step.
RECORD_SCHEMA = pa.schema(
    [
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("engine_id", pa.string(), nullable=False),
        pa.field("step_index", pa.int32(), nullable=False),
        pa.field("generator_id", pa.string(), nullable=False),
        pa.field("node_id", pa.string()),
        pa.field("request_id", pa.string(), nullable=False),
        pa.field("phase", pa.string(), nullable=False),
        pa.field("target_concurrency", pa.int32()),
        pa.field("target_rate_per_s", pa.float64()),
        pa.field("scheduled_ns", pa.int64(), nullable=False),
        pa.field("sent_ns", pa.int64(), nullable=False),
        pa.field("first_chunk_ns", pa.int64()),
        pa.field("first_token_ns", pa.int64()),
        pa.field("last_token_ns", pa.int64()),
        pa.field("done_ns", pa.int64(), nullable=False),
        pa.field("chunk_ns", pa.list_(pa.int64())),
        pa.field("chunk_tokens", pa.list_(pa.int32())),
        pa.field("input_tokens", pa.int32()),
        pa.field("output_tokens", pa.int32()),
        pa.field("token_count_source", pa.string()),
        pa.field("status", pa.string(), nullable=False),
        pa.field("http_status", pa.int32()),
        pa.field("error_type", pa.string()),
        pa.field("error_message", pa.string()),
        pa.field("wall_offset_ns", pa.int64(), nullable=False),
        pa.field("prompt_fingerprint", pa.string()),
    ],
    metadata={b"raybench.schema_version": SCHEMA_VERSION.encode()},
)

"""Arrow schema of the per-request record (MEASUREMENT.md), its version, and the counted attempt's rows."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "PHASES",
    "RECORD_SCHEMA",
    "SCHEMA_VERSION",
    "SERVER_METRICS_SCHEMA",
    "STATUSES",
    "TOKEN_COUNT_SOURCES",
    "select_attempt",
]

# 2: `attempt` column (each execution of a step is an attempt; a step's marker names the one that counts).
# 3: `session_id` and `turn` columns (multi-turn sessions, traces that name sessions; null otherwise).
SCHEMA_VERSION = "3"

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
        # null in parts written before schema version 2 (one attempt per step then)
        pa.field("attempt", pa.int32()),
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
        pa.field("requested_output_tokens", pa.int32()),
        # null for single-turn workloads and in parts written before schema version 3 (read back as null)
        pa.field("session_id", pa.string()),
        pa.field("turn", pa.int32()),
    ],
    metadata={b"raybench.schema_version": SCHEMA_VERSION.encode()},
)

# One row per (scrape, replica, metric): raybench's metric name (engines/metrics.py), the engine's own
# name it came from, and the value; scraped_ns is the driver's wall clock (time.time_ns).
SERVER_METRICS_SCHEMA = pa.schema(
    [
        pa.field("step_index", pa.int32(), nullable=False),
        pa.field("replica", pa.string(), nullable=False),
        pa.field("scraped_ns", pa.int64(), nullable=False),
        pa.field("metric", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("value", pa.float64(), nullable=False),
    ],
    metadata={b"raybench.schema_version": SCHEMA_VERSION.encode()},
)


def select_attempt(table: pa.Table, attempt: int | None) -> pa.Table:
    """The rows of `attempt` (a step's counted attempt, from its marker); every row when None.

    Rows without an attempt (schema version 1) belong to attempt 0.
    """
    if attempt is None or "attempt" not in table.column_names:
        return table
    column = pc.fill_null(table.column("attempt"), 0)
    return table.filter(pc.equal(column, attempt))

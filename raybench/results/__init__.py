"""Arrow schemas of records, the ResultStore over pyarrow.fs, and the record writer of generators."""

from raybench.results.schema import PHASES, RECORD_SCHEMA, SCHEMA_VERSION, STATUSES, TOKEN_COUNT_SOURCES
from raybench.results.store import ResultStore
from raybench.results.writer import RecordWriter, records_prefix

__all__ = [
    "PHASES",
    "RECORD_SCHEMA",
    "SCHEMA_VERSION",
    "STATUSES",
    "TOKEN_COUNT_SOURCES",
    "RecordWriter",
    "ResultStore",
    "records_prefix",
]
